/**
 * Human-readable rendering of reports for stdout. One summary line per pair
 * (SPEC §10), then the changed outputs with the reason for each, then the error.
 * Colour only when the caller says so (TTY and no NO_COLOR).
 */
import type { PairResult, RunReport } from "./report.js";

const DETAIL_LIMIT = 50;

export interface Style {
  color: boolean;
}

const ANSI = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;

export function paint(text: string, tone: keyof typeof ANSI, style: Style): string {
  return style.color ? `\u001b[${ANSI[tone]}m${text}\u001b[0m` : text;
}

/**
 * `text` (a path, a message) kept on its own line: a newline or a tab in it
 * is shown as an escape, as the CLI shows every other control character
 * (terminalSafe, cli/output.ts, which must leave the report's own line
 * breaks alone). A file named `x\n  + index.html (new)` in a root could
 * otherwise print a line of its own choosing.
 */
export function oneLine(text: string): string {
  return text.replace(/[\n\t]/g, (char) => (char === "\n" ? "\\x0a" : "\\x09"));
}

export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function formatRunReport(report: RunReport, style: Style): string {
  const lines: string[] = [];
  for (const result of report.results) lines.push(...formatPair(result, report.dry_run, style));
  if (!report.ok && report.results.some((r) => r.action.startsWith("fail_"))) {
    lines.push(paint("Nothing was written: a pair failed planning.", "red", style));
  } else if (report.dry_run) {
    lines.push(paint("Dry run: nothing was written.", "dim", style));
  }
  return `${lines.join("\n")}\n`;
}

function formatPair(result: PairResult, dryRun: boolean, style: Style): string[] {
  // "would" belongs to dry runs (SPEC §10). A real run says instead when a
  // pair's plan was not carried out, or only in part.
  const would = dryRun ? "would " : "";
  const { created, updated, unchanged, deleted } = result.counts;
  const tone = result.error ? "red" : result.action === "skip_same" ? "dim" : "green";
  const head =
    `${result.pipeline_id} → ${result.destination_id}: ${paint(result.action, tone, style)}` +
    (dryRun ? "" : _notApplied(result)) +
    ` — ${would}create ${created}, ${would}update ${updated}, ${would}delete ${deleted}, ${unchanged} unchanged;` +
    ` ${formatBytes(result.bytes)}, ${result.duration_ms} ms`;
  const lines = [
    head,
    paint(`  root ${oneLine(result.root)} (state ${result.state})`, "dim", style),
  ];
  const details = [
    ...result.outputs
      .filter((output) => output.change !== "unchanged")
      .map(
        (output) =>
          `  ${output.change === "create" ? "+" : "~"} ${oneLine(output.path)} (${output.reason})`,
      ),
    ...result.deletions.map(({ path, reason }) => `  - ${oneLine(path)} (${reason})`),
  ];
  lines.push(...details.slice(0, DETAIL_LIMIT));
  if (details.length > DETAIL_LIMIT) {
    lines.push(`  … and ${details.length - DETAIL_LIMIT} more (--json lists all)`);
  }
  if (result.error) lines.push(...formatError(result.error, style).map((line) => `  ${line}`));
  return lines;
}

/** Why a real run's pair was not (entirely) applied; "" when it was, or when its action says so. */
function _notApplied(result: PairResult): string {
  if (result.applied || result.action.startsWith("fail_")) return "";
  return result.error
    ? " (failed while applying: see the error)"
    : " (not applied: another pair failed)";
}

/**
 * An error as a human reads it: code, message, then the paths it concerns —
 * unless the message already names every one of them (config errors do).
 */
export function formatError(
  error: {
    code: string;
    message: string;
    paths: readonly string[];
    /** The message's own lines (DistributorError.lines), each shown on one line. */
    lines?: readonly string[] | null;
  },
  style: Style,
): string[] {
  // A message that lists problems or items says which its lines are (a
  // config file's problems, a bundle's bad files); each is still shown on
  // one line. Any other message can quote names from storage, or keys from
  // the config, and stays on one line.
  const message = error.lines ? error.lines.map(oneLine).join("\n") : oneLine(error.message);
  const lines = [`${paint(`error [${error.code}]`, "red", style)} ${message}`];
  if (error.paths.every((path) => error.message.includes(path))) return lines;
  const shown = error.paths.slice(0, DETAIL_LIMIT);
  for (const path of shown) lines.push(`  ${oneLine(path)}`);
  if (error.paths.length > shown.length) {
    lines.push(`  … and ${error.paths.length - shown.length} more`);
  }
  return lines;
}
