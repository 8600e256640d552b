/**
 * The `.distributor.lock` file format, shared by every driver: a JSON object
 * `{hostname, pid, started_at}` followed by a newline. Also the rule for when a
 * lock is stale (its holder is a dead process on this host), which only the
 * local machine can decide.
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import type { LockHolder } from "../errors.js";

/**
 * This machine's id (systemd's `/etc/machine-id`, else D-Bus's copy), or null
 * where there is none. Written into every lock taken here, so that a lock of
 * another machine that happens to share our hostname (CI runners, containers
 * given a fixed hostname) is never judged by our process table: its holder
 * may be alive there while no process has its pid here.
 */
export const MACHINE_ID = readMachineId();

function readMachineId(): string | null {
  for (const file of ["/etc/machine-id", "/var/lib/dbus/machine-id"]) {
    try {
      const id = readFileSync(file, "utf8").trim();
      if (/^[0-9a-f]{32}$/.test(id)) return id;
    } catch {
      // Not there (macOS, Windows, minimal containers): try the next one.
    }
  }
  return null;
}

/** `YYYY-MM-DDTHH:MM:SSZ` in UTC, the timestamp format of every file we write. */
export function formatUtcSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The holder this process writes into a lock it takes now. */
export function currentLockHolder(now: Date = new Date()): LockHolder {
  return { hostname: os.hostname(), pid: process.pid, started_at: formatUtcSeconds(now) };
}

/**
 * The exact bytes of a lock file for `holder` (2-space JSON and a trailing
 * newline). `lockId`, when given, is a random id of this acquisition, so a
 * release can tell its own lock from a later one with the same holder (same
 * process, same second); readers that only want the holder ignore it.
 */
export function serializeLockHolder(holder: LockHolder, lockId?: string): string {
  const { hostname, pid, started_at } = holder;
  const record = {
    hostname,
    pid,
    started_at,
    ...(lockId === undefined ? {} : { lock_id: lockId }),
    ...(MACHINE_ID === null ? {} : { machine_id: MACHINE_ID }),
  };
  return `${JSON.stringify(record, null, 2)}\n`;
}

/**
 * The holder recorded in a lock file's text, or `null` when the text is not a
 * lock we can read (not JSON, missing or mistyped fields, a non-positive pid).
 * Unknown extra fields are ignored so newer writers stay readable.
 */
/**
 * What `readLock` reports for a lock file that is there but cannot be parsed:
 * it still locks the root (a run is refused), so status must not say unlocked.
 */
export const UNREADABLE_LOCK_HOLDER: LockHolder = {
  hostname: "unknown (unreadable lock file)",
  pid: 0,
  started_at: "",
};

export function parseLockHolder(text: string): LockHolder | null {
  return parseLockFile(text)?.holder ?? null;
}

/**
 * The holder, the acquisition id (`lock_id`) and the holder's machine id
 * (`machine_id`) of a lock file's text; either id `null` when absent.
 */
export function parseLockFile(text: string): ParsedLock | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { hostname, pid, started_at, lock_id, machine_id } = value as Record<string, unknown>;
  if (typeof hostname !== "string" || hostname === "") return null;
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return null;
  if (typeof started_at !== "string") return null;
  return {
    holder: { hostname, pid, started_at },
    lockId: typeof lock_id === "string" ? lock_id : null,
    machineId: typeof machine_id === "string" ? machine_id : null,
  };
}

/** A lock file's contents, as parseLockFile reads them. */
export interface ParsedLock {
  holder: LockHolder;
  lockId: string | null;
  machineId: string | null;
}

/** Whether the lock names a dead holder on this machine (isStaleLockHolder). */
export function isStaleLock(lock: ParsedLock): boolean {
  return isStaleLockHolder(lock.holder, os.hostname(), {
    holder: lock.machineId,
    ours: MACHINE_ID,
  });
}

/** True when the two holders name the same acquisition (host, pid and start time). */
export function isSameHolder(a: LockHolder, b: LockHolder): boolean {
  return a.hostname === b.hostname && a.pid === b.pid && a.started_at === b.started_at;
}

/**
 * Whether a process with this pid runs on this machine. A process we may not
 * signal (EPERM) runs. Only positive pids are asked about: 0 and negative
 * numbers address process groups. A zombie (Linux: state Z in
 * /proc/<pid>/stat) does not run: it has exited, and only waits for its
 * parent to collect its status. Signal 0 reaches it all the same, so a run
 * killed under a parent that had not reaped it yet was taken for alive, and
 * the next run refused its lock.
 */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return false; // no /proc (macOS), or gone since: signal 0 has the last word
  }
  // "pid (comm) S ...": comm may hold spaces and parentheses; the state
  // follows the last ")".
  return stat[stat.lastIndexOf(")") + 2] === "Z";
}

/**
 * A lock is stale only when it was taken on this host by a process that no
 * longer exists. A holder on another host can never be judged from here.
 *
 * Nor can a holder with our own pid: it is this process, or, in containers
 * that share a hostname, a program running as pid 1 in another container
 * (alive, invisible from here), or the previous incarnation of this container
 * before a restart (dead). The last two look the same from inside, and taking
 * over a live twin's lock would put two writers on one root, so such a lock
 * stays held; LockedError says what it may be and how to clear it.
 */
export function isStaleLockHolder(
  holder: LockHolder,
  hostname: string = os.hostname(),
  machines: { holder: string | null; ours: string | null } = { holder: null, ours: MACHINE_ID },
): boolean {
  if (holder.hostname !== hostname) return false;
  // Same name, another machine: its process table is not ours to read. (A
  // lock without a machine id, or a machine without one, goes by name.)
  if (machines.holder !== null && machines.ours !== null && machines.holder !== machines.ours) {
    return false;
  }
  if (holder.pid === process.pid) return false;
  return !isProcessAlive(holder.pid);
}
