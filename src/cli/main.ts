/**
 * The command-line interface. Parses arguments with commander, calls the library
 * operation, prints its report, and decides the exit code in one place: 0 ok,
 * 1 the work failed, 2 usage or configuration error (SPEC §10).
 */
import { Command, CommanderError } from "commander";
import { DistributorError } from "../errors.js";
import { installSignalHandlers, interruptedExitCode, STOP_WAIT_MS } from "../execution/locks.js";
import { run } from "../execution/run.js";
import { status } from "../execution/status.js";
import { validate } from "../execution/validate.js";
import { formatRunReport } from "../reporting/human.js";
import { DISTRIBUTOR_VERSION } from "../version.js";
import { formatStatus, formatValidate } from "./format-commands.js";
import { registerMaintenanceCommands } from "./maintenance-commands.js";
import { configOption, nonEmpty } from "./options.js";
import {
  hasPrintedJson,
  type OutputMode,
  printHuman,
  printJson,
  progressBar,
  reportFailure,
  stdoutFlushed,
  stdoutStyle,
  warn,
} from "./output.js";

const collect = (value: string, previous: string[]) => [...previous, value];

interface CommonFlags {
  config?: string;
  json?: boolean;
  quiet?: boolean;
}

/** Run the CLI; resolves to the exit code. Never throws. */
export async function main(argv: readonly string[]): Promise<number> {
  const code = await dispatch(argv);
  // Interrupted: the signal's exit code, even when the run then failed because
  // its writes were stopped (the report on stderr says so).
  return interruptedExitCode() ?? code;
}

async function dispatch(argv: readonly string[]): Promise<number> {
  // distributor supports Node.js 20 (SPEC §13); the AWS SDK's notice that its
  // future releases will not is for SDK maintainers, not for our users' stderr.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  // Known before commander parses, so that a usage error is reported in the
  // form asked for; read as commander will (see flagGiven).
  const mode: OutputMode = { json: flagGiven(argv, "--json"), quiet: flagGiven(argv, "--quiet") };
  let exitCode = 0;
  const program = buildProgram((code) => {
    exitCode = code;
  });
  installSignalHandlers(
    (signal) => warn(`${signal} received: releasing locks and stopping`),
    (signal) =>
      warn(
        `${signal} received again: still stopping: writes already started end first, then the locks are released (at most ${STOP_WAIT_MS / 1000} s each)`,
      ),
    // --json promises exactly one document, also when a signal ends the
    // command before its report was printed. Whatever was printed (that
    // document, or a report already written) must reach the reader before
    // the exit: a pipe takes it asynchronously, and process.exit drops the
    // rest (a report over 64 KiB was cut short).
    async (signal) => {
      if (mode.json && !hasPrintedJson()) {
        const error = new DistributorError(
          "storage_error",
          `Interrupted by ${signal} before the command finished. Nothing is left half-done: a write already started was completed, none was started after, and any lock taken was released (commands that only read, such as validate, status, verify and dry runs, write and lock nothing). Run the same command again.`,
        );
        printJson({ ok: false, error: error.toReport() });
      }
      await stdoutFlushed();
    },
  );
  if (argv.length === 0) {
    // No command: show what there is, and say it was not a valid invocation.
    process.stderr.write(program.helpInformation());
    return 2;
  }
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return commanderExit(error, mode, argv);
    return reportFailure(error, mode);
  }
}

/** Options that take a value: the word after one is that value, never a flag. */
const VALUE_OPTIONS = new Set(["--config", "--pipeline", "--destination", "--source", "--now"]);

/**
 * Whether `flag` is on the command line as commander reads it: not as the
 * value of an option (`--config --json` names a file), not after `--`.
 */
function flagGiven(argv: readonly string[], flag: string): boolean {
  for (let index = 0; index < argv.length; index++) {
    const word = argv[index];
    if (word === "--") return false;
    if (word === flag) return true;
    if (word !== undefined && VALUE_OPTIONS.has(word)) index++;
  }
  return false;
}

/** The command `distributor help NAME` asked about, if any. */
function helpTopic(argv: readonly string[]): string | undefined {
  const words = argv.filter((word) => !word.startsWith("-"));
  return words[0] === "help" ? words[1] : words[0];
}

function commanderExit(error: CommanderError, mode: OutputMode, argv: readonly string[]): number {
  if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return 0;
  if (error.code === "commander.help") {
    if (error.exitCode === 0) return 0;
    // Help shown for an error (`distributor --`, `distributor help nosuch`):
    // commander's text went to the silenced stderr; this is a usage error.
    const asked = helpTopic(argv);
    const what = asked === undefined ? "no command" : `no command named ${JSON.stringify(asked)}`;
    return reportFailure(new DistributorError("usage", `${what}. See 'distributor --help'.`), mode);
  }
  // commander's messages may end with a period of their own, and put a
  // suggestion on a line of its own ("\n(Did you mean --json?)"): one line
  // here, where the report would print the newline escaped.
  const message = error.message
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ")
    .replace(/\.$/, "");
  return reportFailure(
    new DistributorError("usage", `${message}. See 'distributor --help'.`),
    mode,
  );
}

function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command()
    .name("distributor")
    .description(
      "Publish verified source bundles to destinations, owning exactly what it wrote (.distributor.json).",
    )
    .version(DISTRIBUTOR_VERSION, "--version", "print the version")
    .exitOverride()
    .configureOutput({ writeErr: () => {} })
    .showSuggestionAfterError(true);

  program
    .command("run")
    .description("verify the source bundle(s), plan every selected pair, and publish if none fails")
    .addOption(configOption())
    .option("--pipeline <id>", "only this pipeline (repeatable)", collect, [])
    .option("--destination <id>", "only this destination (repeatable)", collect, [])
    .option("--source <dir>", "source bundle directory (overrides the config)", nonEmpty)
    .option("--dry-run", "plan and report only: no lock, no write")
    .option(
      "--force",
      "force_replace: delete everything under the root first, a nested root's lock and state excepted (needs --pipeline and --destination)",
    )
    .option("--verify", "re-hash outputs that look unchanged and rewrite those that drifted")
    .option("--json", "print exactly one JSON report on stdout")
    .option("--quiet", "print nothing on success and show no progress")
    .addHelpText(
      "after",
      [
        "",
        "Render cache (Markdown digests, so that reruns need not render unchanged pages):",
        "  DISTRIBUTOR_CACHE_DIR  where it lives (default: $XDG_CACHE_HOME/distributor or ~/.cache/distributor)",
        "  DISTRIBUTOR_CACHE=off  neither read nor write it",
        'See docs/cli.md, "Render cache".',
      ].join("\n"),
    )
    .action(async (flags: CommonFlags & RunFlags) => setExit(await runCommand(flags)));

  program
    .command("validate")
    .description("check config, sources and planned outputs without touching destinations")
    .addOption(configOption())
    .option("--source <dir>", "source bundle directory (overrides the config)", nonEmpty)
    .option("--json", "print exactly one JSON report on stdout")
    .action(async (flags: CommonFlags & { source?: string }) => {
      const report = await validate({ configFile: flags.config, source: flags.source });
      if (flags.json) printJson(report);
      else printHuman(formatValidate(report));
      setExit(0);
    });

  program
    .command("status")
    .description(
      "show, per pair, the root, its state class, owned outputs, last update and lock (or why the root cannot be read)",
    )
    .addOption(configOption())
    .option("--json", "print exactly one JSON report on stdout")
    .action(async (flags: CommonFlags) => {
      const report = await status({ configFile: flags.config });
      if (flags.json) printJson(report);
      else printHuman(formatStatus(report));
      // A root that could not be read is a storage error (SPEC §10: exit 1).
      setExit(report.ok ? 0 : 1);
    });

  registerMaintenanceCommands(program, setExit);
  return program;
}

interface RunFlags {
  pipeline: string[];
  destination: string[];
  source?: string;
  dryRun?: boolean;
  force?: boolean;
  verify?: boolean;
}

async function runCommand(flags: CommonFlags & RunFlags): Promise<number> {
  const mode: OutputMode = { json: flags.json ?? false, quiet: flags.quiet ?? false };
  const bar = progressBar(mode);
  try {
    const report = await run({
      configFile: flags.config,
      pipelines: flags.pipeline,
      destinations: flags.destination,
      source: flags.source,
      dryRun: flags.dryRun,
      force: flags.force,
      verify: flags.verify,
      onWarning: warn,
      onProgress: ({ bytesDone, bytesTotal }) => bar.update(bytesDone, bytesTotal),
    });
    bar.stop();
    if (mode.json) printJson(report);
    else if (!mode.quiet || !report.ok) {
      const style = stdoutStyle();
      printHuman(formatRunReport(report, style), style);
    }
    return report.ok ? 0 : 1;
  } finally {
    bar.stop();
  }
}
