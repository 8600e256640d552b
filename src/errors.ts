/**
 * The error vocabulary of distributor. Every failure a user can see carries one
 * of these stable codes; exit codes are derived from the code in exactly one place
 * ({@link exitCodeFor}), so commands never pick exit numbers themselves.
 */
import os from "node:os";
import { inRoot, LOCK_FILE } from "./paths.js";

export const ERROR_CODES = [
  "config_invalid",
  "usage",
  "source_invalid",
  "output_collision",
  "transform_failed",
  "unmanaged_path",
  "state_conflict",
  "unsafe_path",
  "locked",
  "no_state",
  "storage_error",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The JSON shape of an error in every report: `{code, message, paths}`. */
export interface ErrorReport {
  code: ErrorCode;
  message: string;
  paths: string[];
}

export interface DistributorErrorOptions {
  /** Paths (manifest, output or key paths) the error is about; reported as `paths`. */
  paths?: readonly string[];
  cause?: unknown;
  /**
   * The message as the lines distributor wrote (see listedError); the
   * message is then their join. Absent: a message of one line, however many
   * line breaks the names it quotes hold.
   */
  lines?: readonly string[];
}

/** An expected failure with a stable code. Anything else reaching the CLI is a bug. */
export class DistributorError extends Error {
  readonly code: ErrorCode;
  readonly paths: string[];
  /** DistributorErrorOptions.lines; null for a one-line message. */
  readonly lines: readonly string[] | null;

  constructor(code: ErrorCode, message: string, options: DistributorErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "DistributorError";
    this.code = code;
    this.paths = [...(options.paths ?? [])];
    this.lines = options.lines ? [...options.lines] : null;
  }

  toReport(): ErrorReport {
    return { code: this.code, message: this.message, paths: this.paths };
  }
}

/**
 * An error whose message lists items, one line each: `head`, then `  - item`
 * per item, then `advice`. The human output keeps these line breaks and
 * shows each line on one line (a line break inside a quoted name escaped,
 * reporting/human.ts), where any other message is shown whole on one line,
 * so that a name cannot print a line of its own. The message, as `--json`
 * reports it, is the same lines joined by newlines.
 */
export function listedError(
  code: ErrorCode,
  text: { head: string; items: readonly string[]; advice: string },
  options: Omit<DistributorErrorOptions, "lines"> = {},
): DistributorError {
  return linedError(
    code,
    [text.head, ...text.items.map((item) => `  - ${item}`), text.advice],
    options,
  );
}

/**
 * An error whose message is `lines`, one per line (DistributorErrorOptions.lines):
 * the one place that joins them, so the message and its lines always agree.
 */
export function linedError(
  code: ErrorCode,
  lines: readonly string[],
  options: Omit<DistributorErrorOptions, "lines"> = {},
): DistributorError {
  return new DistributorError(code, lines.join("\n"), { ...options, lines });
}

/** Who holds a lock: written into the lock file and reported with `locked`. */
export interface LockHolder {
  hostname: string;
  pid: number;
  started_at: string;
}

/**
 * A holder with this process's hostname and pid cannot be judged alive or
 * dead (see isStaleLockHolder): say what it may be.
 */
function ownPidHint(holder: LockHolder): string {
  if (holder.hostname !== os.hostname() || holder.pid !== process.pid) return "";
  return " (this process's own host and pid: another run in this process, another container with the same hostname, or this container before a restart, whose lock nothing can tell from a live one)";
}

/**
 * `locked`: another writer holds the root's lock (terraform's LockError: who
 * and since when). `holder` null: a lock file that cannot be read.
 */
export class LockedError extends DistributorError {
  readonly holder: LockHolder | null;

  constructor(root: string, holder: LockHolder | null, options: DistributorErrorOptions = {}) {
    const who = holder
      ? `${holder.hostname} pid ${holder.pid} since ${holder.started_at}${ownPidHint(holder)}`
      : "an unknown holder (unreadable lock file)";
    super(
      "locked",
      `${root} is locked by ${who}. Wait for that run to finish; if it is gone, remove ${inRoot(root, LOCK_FILE)} after checking.`,
      options,
    );
    this.holder = holder;
  }
}

/**
 * `locked` when no lock is left to name: other runs took the root's lock and
 * released it again, each time between this run's refused create and its
 * read of the holder. Nothing is to be removed; the root is merely busy.
 */
export class BusyLockError extends LockedError {
  constructor(root: string) {
    super(root, null);
    this.message = `${root} is busy: other runs took its lock and released it again while this run tried to take it. Run again once they are done.`;
  }
}

/**
 * Exit code for a failure: 2 for usage and configuration errors, 1 for everything
 * else (the work failed). Success is 0 and never goes through here.
 */
export function exitCodeFor(code: ErrorCode): 1 | 2 {
  return code === "usage" || code === "config_invalid" ? 2 : 1;
}

/** The errno code of a Node.js error (`ENOENT`, ...), if any. */
export function errnoCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" ? code : undefined;
}
