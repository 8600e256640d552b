/**
 * The filesystem lock: `<root>/.distributor.lock`, created with O_EXCL so exactly
 * one writer wins.
 *
 * A lock left by a dead process on this host is taken over under a short-lived
 * second exclusive file, `.distributor.lock.takeover-<key>-<n>` (see
 * takeoverFileName): only its creator may remove the stale lock, and only
 * after re-reading that it is still the stale one. Without it, two takers
 * could each remove the lock the other had just created and both win. A
 * takeover file whose taker died (see isLeftBehind) was left by a crashed
 * taker: the next taker passes over it to the next number instead of
 * clearing it, and the lock's new holder removes the files left behind.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, lstat, mkdir, open, readdir, rm, rmdir, unlink } from "node:fs/promises";
import path from "node:path";
import { BusyLockError, errnoCode, LockedError, type LockHolder } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import { storageError, tempPathIn } from "./_fs-paths.js";
import {
  currentLockHolder,
  isProcessAlive,
  isStaleLock,
  parseLockFile,
  parseLockHolder,
  serializeLockHolder,
  UNREADABLE_LOCK_HOLDER,
} from "./_lock-file.js";
import type { LockHandle } from "./driver.js";

const TAKEOVER_FILE = `${LOCK_FILE}.takeover`;
/** How long a takeover file that names no taker we can judge keeps others out. */
const TAKEOVER_EXPIRY_MS = 10_000;
/**
 * How long a takeover file of a taker whose pid is alive keeps others out:
 * long enough for any takeover, short enough that a pid reused by another
 * process does not keep the root locked for good.
 */
const LIVE_TAKER_PATIENCE_MS = 10 * 60_000;
/** Crashed takers passed over before a taker gives up. */
const MAX_TAKEOVER_ATTEMPTS = 100;
const MARKER = /^(\d+) [0-9a-f]{16}\n$/;

export interface AcquireOptions {
  onStaleLock?: (stale: LockHolder) => void;
}

/** Take `root`'s lock or throw `LockedError` naming the holder (see StorageDriver.acquireLock). */
export async function acquireFsLock(
  root: string,
  options: AcquireOptions = {},
): Promise<LockHandle> {
  // The first directory this call creates, if the root did not exist: released
  // with the lock when nothing else was put there (see lockHandle).
  const created = await mkdir(root, { recursive: true }).catch((error: unknown) => {
    throw storageError("create the destination root", { root, relPath: "", error });
  });
  const holder = currentLockHolder();
  const lockId = randomBytes(8).toString("hex");
  const content = serializeLockHolder(holder, lockId);
  if (await createExclusive(root, LOCK_FILE, content)) {
    return lockHandle(root, { holder, lockId, created });
  }
  const text = await readText(root, LOCK_FILE);
  // The lock vanished between our create and read (its holder released it): one more try.
  if (text === null) return retryOnce(root, { holder, lockId, content });
  const lock = parseLockFile(text);
  if (lock === null || !isStaleLock(lock)) throw new LockedError(root, lock?.holder ?? null);
  const existing = lock.holder;
  if (!(await takeOver(root, { staleText: text, content }))) {
    const current = await readText(root, LOCK_FILE);
    // Released (not stale after all: its holder ended after we read it) and
    // nobody took it since: the root is free, one more try.
    if (current === null) return retryOnce(root, { holder, lockId, content });
    throw new LockedError(root, parseLockHolder(current) ?? existing);
  }
  options.onStaleLock?.(existing);
  return lockHandle(root, { holder, lockId });
}

/**
 * One more create, after the lock vanished between a refused create and the
 * read of its holder. `readLock` reads the lock's text (a parameter for the
 * tests, which cannot time a release between two calls). Exported for tests.
 */
export async function retryOnce(
  root: string,
  mine: { holder: LockHolder; lockId: string; content: string },
  readLock: () => Promise<string | null> = () => readText(root, LOCK_FILE),
): Promise<LockHandle> {
  if (await createExclusive(root, LOCK_FILE, mine.content)) {
    return lockHandle(root, { holder: mine.holder, lockId: mine.lockId });
  }
  const text = await readLock();
  // Released again before this read: other runs are taking it in turn.
  if (text === null) throw new BusyLockError(root);
  throw new LockedError(root, parseLockHolder(text));
}

/**
 * The holder as StorageDriver.readLock reports it: `null` only when there is no
 * lock; one that cannot be parsed is UNREADABLE_LOCK_HOLDER, as on S3.
 */
export async function describeFsLock(root: string): Promise<LockHolder | null> {
  const text = await readText(root, LOCK_FILE);
  return text === null ? null : (parseLockHolder(text) ?? UNREADABLE_LOCK_HOLDER);
}

/**
 * Replace the stale lock (whose text we judged) with ours. False when another
 * taker is at it or got there first: that taker wins, we lose. Exported for tests.
 */
export async function takeOver(
  root: string,
  lock: { staleText: string; content: string },
  clock: () => number = Date.now,
): Promise<boolean> {
  const marker = `${process.pid} ${randomBytes(8).toString("hex")}\n`;
  const name = await createTakeoverFile(root, lock.staleText, marker, clock);
  if (name === null) return false;
  try {
    if ((await readText(root, LOCK_FILE)) !== lock.staleText) return false;
    // Written before the stale lock goes: the root is without a lock, where a
    // starting run could take it without the warning, only for one link().
    const temp = await prepareTemp(root, lock.content);
    await unlink(path.join(root, LOCK_FILE)).catch(async (error: unknown) => {
      if (errnoCode(error) === "ENOENT") return;
      if (temp !== null) await unlink(temp).catch(() => undefined);
      throw storageError("remove the stale lock", { root, relPath: LOCK_FILE, error });
    });
    const won = await createExclusive(root, LOCK_FILE, lock.content, temp);
    if (won) await removeOtherTakeoverFiles(root, name);
    return won;
  } finally {
    if ((await readText(root, name)) === marker) await rm(path.join(root, name), { force: true });
  }
}

/**
 * The name of attempt `attempt` at taking over the lock whose text is
 * `staleText`: `.distributor.lock.takeover-<key>-<attempt>`, the key a digest
 * of that text, so that takers of one stale lock meet on the same names.
 * Exported for tests.
 */
export function takeoverFileName(staleText: string, attempt: number): string {
  const key = createHash("sha256").update(staleText).digest("hex").slice(0, 16);
  return `${TAKEOVER_FILE}-${key}-${attempt}`;
}

/**
 * Create this taker's takeover file: the first attempt's name, or, past
 * files that crashed takers left (see isLeftBehind), the next one's. Null
 * when a taker is at it. A left file is never
 * removed or moved by another taker: moving a file aside to judge it, and
 * linking it back when it was fresh after all, let a three-way race lose a
 * live taker's file or put it back at the wrong time, and two takers then
 * both replaced the lock. Exclusive creation of each attempt's name lets
 * exactly one taker past each crashed one.
 */
async function createTakeoverFile(
  root: string,
  staleText: string,
  marker: string,
  clock: () => number,
): Promise<string | null> {
  for (let attempt = 0, tries = 0; attempt < MAX_TAKEOVER_ATTEMPTS && tries < 1000; tries++) {
    const name = takeoverFileName(staleText, attempt);
    if (await createExclusive(root, name, marker)) return name;
    const file = path.join(root, name);
    const stats = await lstat(file).catch(() => null);
    // "" for a file that cannot be read: judged by its age.
    const text =
      stats === null
        ? null
        : await readLockText(file).catch((error: unknown) =>
            errnoCode(error) === "ENOENT" ? null : "",
          );
    // Gone again: its taker finished (it replaced the lock, which the caller
    // will see, or lost). The same name may be taken once more.
    if (stats === null || text === null) continue;
    if (!isLeftBehind(text, clock() - stats.ctimeMs)) return null;
    attempt++;
  }
  return null;
}

/**
 * Whether a takeover file was left by a taker that crashed. It names its
 * taker's pid, and only processes on the stale lock's host take it over
 * (the rule for stale locks, with the same assumption: one pid namespace
 * per hostname): a dead pid left it. A live pid is a taker at work, unless
 * the file is older than any takeover (the pid was reused). A file that
 * names no pid (written in place where hard links are missing, and cut
 * short) counts by its age. Ages are by change time, which the link that
 * put the file in place sets and nothing can set back, from this host's
 * clock: on a network filesystem whose server's clock differs, only the
 * file without a pid depends on them.
 */
function isLeftBehind(text: string, ageMs: number): boolean {
  const pid = MARKER.exec(text)?.[1];
  if (pid === undefined) return ageMs >= TAKEOVER_EXPIRY_MS;
  if (!isProcessAlive(Number(pid))) return true;
  return ageMs >= LIVE_TAKER_PATIENCE_MS;
}

/**
 * Takeover files other than ours: left by crashed takers, or by takers of
 * the lock just replaced, which re-read the lock before they touch it and
 * find ours. Removed by the new holder only, so that they do not pile up.
 */
async function removeOtherTakeoverFiles(root: string, ours: string): Promise<void> {
  const names = await readdir(root).catch(() => [] as string[]);
  for (const name of names) {
    if (name !== ours && (name === TAKEOVER_FILE || name.startsWith(`${TAKEOVER_FILE}-`))) {
      await rm(path.join(root, name), { force: true }).catch(() => undefined);
    }
  }
}

async function readText(root: string, name: string): Promise<string | null> {
  try {
    return await readLockText(path.join(root, name));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw storageError("read the lock", { root, relPath: name, error });
  }
}

// O_NONBLOCK: opening a fifo must not wait for a writer; O_NOFOLLOW: a lock is never a link.
const LOCK_READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Far above any lock or takeover file this code writes (a few hundred bytes). */
const MAX_LOCK_BYTES = 64 * 1024;

/**
 * The text of a lock or takeover file; "" (a lock nobody can parse: held by
 * an unknown holder) for anything but a regular file of at most
 * MAX_LOCK_BYTES. A fifo planted at the lock's name made every run and
 * `status` wait forever in open(), where not even SIGTERM ended them, and a
 * link to /dev/zero failed with "Invalid string length".
 */
async function readLockText(file: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, LOCK_READ_FLAGS);
  } catch (error) {
    // A symlink (O_NOFOLLOW): not a lock this code wrote.
    if (errnoCode(error) === "ELOOP") return "";
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > MAX_LOCK_BYTES) return "";
    const buffer = Buffer.alloc(MAX_LOCK_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead > MAX_LOCK_BYTES ? "" : buffer.toString("utf8", 0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * Create `name` in `root` with `content`, or return false when it exists. The
 * content is written and fsync'ed into a temp file first, then hard-linked to
 * `name` (link fails with EEXIST, never replaces): a process killed at any
 * point leaves either no file or a complete one. Creating `name` itself and
 * then writing it left an empty lock after a SIGKILL in between, which every
 * later run refused as held by an unknown holder. A leftover temp file is
 * removed by the next run, like any other (stale-temp.ts). `prepared`: a temp
 * file with `content` from `prepareTemp`, which this call removes.
 */
async function createExclusive(
  root: string,
  name: string,
  content: string,
  prepared?: string | null,
): Promise<boolean> {
  const file = path.join(root, name);
  const temp = prepared === undefined ? await prepareTemp(root, content) : prepared;
  // No temp file (a read-only root, say): create in place, which reports
  // EEXIST (a held lock) or the error as before.
  if (temp === null) return createInPlace(root, file, content);
  try {
    await link(temp, file);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    // Our temp file was removed as stale by the run holding the lock: the caller
    // reads that lock (or, if it is gone already, tries once more).
    if (code === "ENOENT") return false;
    // NFS may answer a retransmitted link that succeeded with EEXIST.
    if (code === "EEXIST") return sameFile(temp, file);
    // No hard links here: EPERM or ENOTSUP on some FUSE and SMB mounts,
    // EISDIR on FAT volumes on Windows.
    return createInPlace(root, file, content);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** A new temp file in `root` holding `content`, fsync'ed; null when it cannot be written. */
async function prepareTemp(root: string, content: string): Promise<string | null> {
  const temp = tempPathIn(root);
  try {
    await writeNewFile(root, temp, content);
    return temp;
  } catch {
    return null;
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  const [statsA, statsB] = await Promise.all([lstat(a), lstat(b)]).catch(() => [null, null]);
  return (
    statsA !== null && statsB !== null && statsA.dev === statsB.dev && statsA.ino === statsB.ino
  );
}

/** Exclusive create + write + fsync of `file`. */
async function writeNewFile(root: string, file: string, content: string): Promise<void> {
  const handle = await open(file, "wx").catch(async (error: unknown) => {
    // Another run that made this root just removed it again on release
    // (removeIfEmpty), between our mkdir and this open: make it once more.
    if (errnoCode(error) !== "ENOENT") throw error;
    await mkdir(root, { recursive: true });
    return open(file, "wx");
  });
  try {
    await handle.writeFile(content);
    await handle.sync();
  } catch (error) {
    // Created here and half-written: take it back.
    await unlink(file).catch(() => undefined);
    throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Without a temp file or hard links: create the file exclusively, then write
 * it. A crash between the two leaves an empty file, which readers take as
 * held by an unknown holder (an operator removes it, docs/recovery.md); only
 * on filesystems without hard links.
 */
async function createInPlace(root: string, file: string, content: string): Promise<boolean> {
  try {
    await writeNewFile(root, file, content);
    return true;
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw storageError("create the lock", { root, relPath: path.basename(file), error });
  }
}

function lockHandle(
  root: string,
  lock: { holder: LockHolder; lockId: string; created?: string },
): LockHandle {
  let released = false;
  return {
    holder: lock.holder,
    async release() {
      if (released) return;
      await removeIfOurs(root, lock.lockId);
      released = true;
      if (lock.created !== undefined) await removeIfEmpty(root, lock.created);
    },
  };
}

/**
 * Remove the directories that acquiring made, from the root up to `created`,
 * as long as they are empty: a run that wrote nothing (a refused plan, a
 * repair of a root that has no state) leaves no trace. rmdir never removes a
 * directory that holds something, so anything the run wrote keeps them.
 */
async function removeIfEmpty(root: string, created: string): Promise<void> {
  for (let dir = root; ; dir = path.dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      return;
    }
    if (dir === created || path.dirname(dir) === dir) return;
  }
}

/** Unlink the lock only while it is still this acquisition's (same lock_id). */
async function removeIfOurs(root: string, lockId: string): Promise<void> {
  const text = await readText(root, LOCK_FILE);
  if (text === null || parseLockFile(text)?.lockId !== lockId) return;
  await unlink(path.join(root, LOCK_FILE)).catch((error: unknown) => {
    if (errnoCode(error) !== "ENOENT") {
      throw storageError("release the lock", { root, relPath: LOCK_FILE, error });
    }
  });
}
