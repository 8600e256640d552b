/**
 * The root lock built on conditional writes: `.distributor.lock` is created
 * with If-None-Match "*", so of any number of concurrent writers exactly one
 * wins. A stale lock (dead process on this host) is taken over with an If-Match
 * on the stale lock's version, so two writers taking it over at once cannot
 * both win either.
 *
 * A conditional PUT whose response is lost is retried, and the retry is
 * refused by the object the first attempt created: ours. So each lock
 * carries a random `lock_id`, and a refused write that finds exactly our
 * bytes in place has taken the lock (without that, the run reported its own
 * lock as held by someone else and never released it).
 */
import { randomBytes } from "node:crypto";
import { BusyLockError, DistributorError, LockedError, type LockHolder } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import {
  currentLockHolder,
  isStaleLock,
  type ParsedLock,
  parseLockFile,
  serializeLockHolder,
  UNREADABLE_LOCK_HOLDER,
} from "./_lock-file.js";
import type { LockHandle, StoredBytes, VersionToken, WriteOptions } from "./driver.js";

/** What the lock needs from a driver that honours conditional writes on the server. */
export interface LockStore {
  readonly root: string;
  read(path: string): Promise<StoredBytes | null>;
  /** The object's version token (a HEAD), `null` when it is absent. */
  currentToken(path: string): Promise<VersionToken | null>;
  write(
    path: string,
    content: { type: "bytes"; bytes: Uint8Array },
    options: WriteOptions,
  ): Promise<VersionToken>;
  /** Delete `path` if it still has version `token`; a refused precondition is not an error. */
  deleteIfMatch(path: string, token: VersionToken): Promise<void>;
}

function lockOf(stored: StoredBytes): ParsedLock | null {
  return parseLockFile(new TextDecoder().decode(stored.bytes));
}

function isConflict(error: unknown): boolean {
  return error instanceof DistributorError && error.code === "state_conflict";
}

/** The written lock's version token ("" when the server gave none), or null when refused. */
async function tryWrite(
  store: LockStore,
  bytes: Uint8Array,
  ifMatch: VersionToken | null,
): Promise<VersionToken | null> {
  try {
    return await store.write(
      LOCK_FILE,
      { type: "bytes", bytes },
      { ifMatch, contentType: "application/json" },
    );
  } catch (error) {
    if (isConflict(error)) return null;
    throw error;
  }
}

/**
 * Creates a run tries when the lock it was refused by is gone again before it
 * reads its holder (another run released it meanwhile): a few, since runs
 * that start together finish one after another. Then it reports the root busy.
 */
export const CREATES_WHILE_RELEASED = 5;

/**
 * Take the lock or throw `LockedError` naming the holder. A dead local holder
 * is replaced once, and reported through `onStaleLock` once replaced; losing
 * that take-over race to another writer ends in `LockedError` naming the
 * winner. A lock released again between each refused create and the read
 * of its holder, CREATES_WHILE_RELEASED times, ends in `BusyLockError`.
 */
export async function acquireObjectLock(
  store: LockStore,
  options: { onStaleLock?: (stale: LockHolder) => void } = {},
): Promise<LockHandle> {
  const holder = currentLockHolder();
  const lockId = randomBytes(8).toString("hex");
  const bytes = new TextEncoder().encode(serializeLockHolder(holder, lockId));
  const ours = (token: VersionToken) => lockHandle(store, holder, bytes, token);
  let tookOver = false;
  for (let creates = 0; creates < CREATES_WHILE_RELEASED; ) {
    const created = await tryWrite(store, bytes, null);
    if (created !== null) return ours(created);
    const existing = await store.read(LOCK_FILE);
    // Released between our create and our read: another create decides.
    if (existing === null) {
      creates++;
      continue;
    }
    // A retry refused by our own first attempt (see the module comment).
    if (sameBytes(existing.bytes, bytes)) return ours(existing.token);
    const lock = lockOf(existing);
    if (tookOver || lock === null || !isStaleLock(lock)) {
      throw new LockedError(store.root, lock?.holder ?? null);
    }
    // Reported only once it is ours: a holder that released its lock and
    // ended after our read also looks stale, and then nothing is taken over.
    tookOver = true;
    const replaced = await tryWrite(store, bytes, existing.token);
    const after = replaced === null ? await store.read(LOCK_FILE) : null;
    const token =
      replaced ?? (after !== null && sameBytes(after.bytes, bytes) ? after.token : null);
    if (token !== null) {
      options.onStaleLock?.(lock.holder);
      return ours(token);
    }
  }
  throw new BusyLockError(store.root);
}

/**
 * The handle of a lock we wrote as `bytes`, whose version was `token`.
 * Release removes only our own lock: a take-over by someone else stays. It
 * asks for the lock's version with a HEAD and compares tokens: the lock's
 * bytes carry a random `lock_id`, so another holder's lock has another ETag.
 * A GET of the bytes would tell the same, but on Ceph RGW a small body
 * comes a delayed ACK (about 40 ms) after its headers, which every S3 run
 * paid at its end; a HEAD has no body. Without a token (a server that
 * returned no ETag) the bytes are compared, as before.
 */
function lockHandle(
  store: LockStore,
  holder: LockHolder,
  bytes: Uint8Array,
  token: VersionToken,
): LockHandle {
  let released = false;
  const stillOurs = async (): Promise<VersionToken | null> => {
    if (token !== "") return (await store.currentToken(LOCK_FILE)) === token ? token : null;
    const current = await store.read(LOCK_FILE);
    return current !== null && sameBytes(current.bytes, bytes) ? current.token : null;
  };
  return {
    holder,
    async release() {
      if (released) return;
      const current = await stillOurs();
      // deleteIfMatch narrows the window where the server honours it (AWS);
      // RGW ignores If-Match on DELETE, so the check above is what protects.
      if (current !== null) await store.deleteIfMatch(LOCK_FILE, current);
      released = true;
    },
  };
}

/** The current holder, `null` when unlocked; an unreadable lock still counts as held. */
export async function readObjectLock(store: LockStore): Promise<LockHolder | null> {
  const current = await store.read(LOCK_FILE);
  if (current === null) return null;
  return lockOf(current)?.holder ?? UNREADABLE_LOCK_HOLDER;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
