/**
 * Where CLI output goes: reports on stdout (exactly one JSON document with
 * --json), diagnostics on stderr, a progress bar only on an interactive stderr.
 */
import cliProgress from "cli-progress";
import { DistributorError, type ErrorReport, exitCodeFor } from "../errors.js";
import { formatBytes, formatError, oneLine, type Style } from "../reporting/human.js";

export interface OutputMode {
  json: boolean;
  quiet: boolean;
}

export function stdoutStyle(): Style {
  return { color: process.stdout.isTTY === true && !process.env.NO_COLOR };
}

function stderrStyle(): Style {
  return { color: process.stderr.isTTY === true && !process.env.NO_COLOR };
}

let jsonPrinted = false;

/**
 * Print the command's one JSON document (--json). Only the first call prints:
 * a signal's "Interrupted" document and a report finishing at the same
 * moment must not make two.
 */
export function printJson(value: unknown): void {
  if (jsonPrinted) return;
  jsonPrinted = true;
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Whether this process has printed its JSON document (--json prints exactly one). */
export function hasPrintedJson(): boolean {
  return jsonPrinted;
}

/** Resolves once stdout has taken everything written so far (a pipe writes asynchronously). */
export function stdoutFlushed(): Promise<void> {
  return new Promise((resolve) => {
    process.stdout.once("error", () => resolve());
    process.stdout.write("", () => resolve());
  });
}

/**
 * One warning, on one line of stderr: a warning quotes what storage holds (a
 * stale lock's hostname and start time), and a newline there must not start
 * a line of its own.
 */
export function warn(message: string): void {
  process.stderr.write(`${terminalSafe(oneLine(message), stderrStyle())}\n`);
}

/** Human text on stdout, with what came from storage made harmless (terminalSafe). */
export function printHuman(text: string, style: Style = stdoutStyle()): void {
  process.stdout.write(terminalSafe(text, style));
}

/**
 * Control characters a human report must not pass to a terminal as they
 * are: C0 but newline and tab (CR and ESC let text rewrite or hide lines),
 * DEL, C1, and the bidirectional overrides that reorder a line. Only the
 * colour sequences `paint` writes are kept, and only when colour is on.
 */
const UNSAFE_FOR_TERMINAL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
  /\u001b\[(?:0|1|2|31|32|33)m|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every control character shown as an escape (`\x1b`, `\u202e`).
 * Reports quote what storage holds (a lock's hostname, a broken state's
 * bytes, file names in a root), which anyone who can write there chooses:
 * printed raw, an escape sequence could erase a line and write another, a
 * fake "skip_same" over a failure.
 */
export function terminalSafe(text: string, style: Style): string {
  return text.replace(UNSAFE_FOR_TERMINAL, (match) => {
    if (match.length > 1)
      return style.color ? match : _escaped(match[0] as string) + match.slice(1);
    return _escaped(match);
  });
}

function _escaped(char: string): string {
  const code = char.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * Report a failure and return its exit code. DistributorErrors are expected and
 * printed plainly; anything else is a bug: one line, with the stack only when
 * DISTRIBUTOR_DEBUG=1.
 */
export function reportFailure(error: unknown, mode: OutputMode): number {
  const report = toErrorReport(error);
  if (mode.json) printJson({ ok: false, error: report });
  else {
    const style = stderrStyle();
    const lines = error instanceof DistributorError ? error.lines : null;
    const text = formatError({ ...report, lines }, style).join("\n");
    process.stderr.write(`${terminalSafe(text, style)}\n`);
  }
  if (process.env.DISTRIBUTOR_DEBUG === "1" && error instanceof Error && error.stack) {
    process.stderr.write(`${error.stack}\n`);
  }
  return error instanceof DistributorError ? exitCodeFor(error.code) : 1;
}

/** Like ErrorReport, plus `internal` for defects (never a stable, documented failure). */
type FailureReport = Omit<ErrorReport, "code"> & { code: ErrorReport["code"] | "internal" };

function toErrorReport(error: unknown): FailureReport {
  if (error instanceof DistributorError) return error.toReport();
  const message = error instanceof Error ? error.message : String(error);
  const system = (error as { syscall?: string } | null)?.syscall !== undefined;
  return {
    // A system error that escaped a driver is still a storage failure; anything
    // else is a defect in distributor itself.
    code: system ? "storage_error" : "internal",
    message: system
      ? message
      : `internal error: ${message}. This is a bug in distributor; rerun with DISTRIBUTOR_DEBUG=1 and report the stack trace.`,
    paths: [],
  };
}

/** A byte progress bar on stderr, or a no-op when stderr is not a terminal or output is machine-read. */
export function progressBar(mode: OutputMode): {
  update(done: number, total: number): void;
  stop(): void;
} {
  if (mode.json || mode.quiet || !process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: "publishing [{bar}] {percentage}% {done}/{size}",
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total) {
      const payload = { done: formatBytes(done), size: formatBytes(total) };
      if (!started) {
        bar.start(total, done, payload);
        started = true;
      } else bar.update(done, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
