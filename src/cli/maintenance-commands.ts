/**
 * The maintenance commands of the CLI: `reconcile-state`, `verify` and `prune`
 * (SPEC §7–9). Each calls its library operation and prints the report; failures
 * are thrown to main's single catch, which decides the exit code.
 */
import { type Command, InvalidArgumentError, Option } from "commander";
import { prune } from "../execution/prune.js";
import { reconcileState } from "../execution/reconcile.js";
import { verify } from "../execution/verify.js";
import {
  formatPruneReport,
  formatReconcileReport,
  formatVerifyReport,
} from "../reporting/maintenance.js";
import { configOption } from "./options.js";
import { printHuman, printJson, stdoutStyle, warn } from "./output.js";

interface SelectorFlags {
  config?: string;
  pipeline?: string;
  destination?: string;
  json?: boolean;
}

function _withSelector(command: Command): Command {
  return command
    .addOption(configOption())
    .option(
      "--pipeline <id>",
      "the owner's pipeline (optional when the config has one pair)",
      once("--pipeline"),
    )
    .option(
      "--destination <id>",
      "the owner's destination (optional when the config has one pair)",
      once("--destination"),
    );
}

/**
 * A selector these commands take once: they act for one owner, and a second
 * --pipeline silently replacing the first could prune another owner's outputs.
 */
function once(flag: string) {
  return (value: string, previous: string | undefined): string => {
    if (previous !== undefined) {
      throw new InvalidArgumentError(
        `${flag} is given twice (${previous}, ${value}); this command acts for one owner`,
      );
    }
    return value;
  };
}

function _print<T>(report: T, flags: SelectorFlags, format: (report: T) => string): void {
  if (flags.json) printJson(report);
  else printHuman(format(report));
}

/** Add reconcile-state, verify and prune to `program`; `setExit` receives each command's exit code. */
export function registerMaintenanceCommands(
  program: Command,
  setExit: (code: number) => void,
): void {
  _reconcileCommand(program, setExit);
  _verifyCommand(program, setExit);
  _pruneCommand(program, setExit);
}

function _reconcileCommand(program: Command, setExit: (code: number) => void): void {
  _withSelector(program.command("reconcile-state"))
    .description(
      "remove catalog records whose files are gone; report unmanaged entries (never deletes files)",
    )
    .option("--all-owners", "check every owner's records in the root, not only the selected pair's")
    .option("--dry-run", "report only: no lock, the state is not rewritten")
    .option("--json", "print exactly one JSON report on stdout")
    .action(async (flags: SelectorFlags & { allOwners?: boolean; dryRun?: boolean }) => {
      const report = await reconcileState({
        configFile: flags.config,
        pipeline: flags.pipeline,
        destination: flags.destination,
        allOwners: flags.allOwners,
        dryRun: flags.dryRun,
        onWarning: warn,
      });
      _print(report, flags, (r) => formatReconcileReport(r, stdoutStyle()));
      setExit(0);
    });
}

function _verifyCommand(program: Command, setExit: (code: number) => void): void {
  _withSelector(program.command("verify"))
    .description("re-hash managed outputs and report drift (read-only; exit 1 on drift)")
    .option("--all-owners", "check every owner's records in the root, not only the selected pair's")
    .option("--json", "print exactly one JSON report on stdout")
    .action(async (flags: SelectorFlags & { allOwners?: boolean }) => {
      const report = await verify({
        configFile: flags.config,
        pipeline: flags.pipeline,
        destination: flags.destination,
        allOwners: flags.allOwners,
      });
      _print(report, flags, (r) => formatVerifyReport(r, stdoutStyle()));
      setExit(report.ok ? 0 : 1);
    });
}

function _pruneCommand(program: Command, setExit: (code: number) => void): void {
  _withSelector(program.command("prune"))
    .description("delete the owner's outputs selected by the destination's retention.prune policy")
    .addOption(new Option("--dry-run", "report the plan only (the default)").conflicts("apply"))
    .option("--apply", "delete the planned outputs and remove their records")
    .option("--now <rfc3339>", "evaluate the policy at this instant instead of the real time")
    .option("--json", "print exactly one JSON report on stdout")
    .action(async (flags: SelectorFlags & { apply?: boolean; now?: string }) => {
      const report = await prune({
        configFile: flags.config,
        pipeline: flags.pipeline,
        destination: flags.destination,
        apply: flags.apply,
        now: flags.now,
        onWarning: warn,
      });
      _print(report, flags, (r) => formatPruneReport(r, stdoutStyle()));
      setExit(report.ok ? 0 : 1);
    });
}
