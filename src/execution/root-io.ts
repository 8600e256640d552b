/**
 * The state file's I/O for one destination root: reading what planning needs
 * (the listing, the classified state and its version token) and writing a new
 * state durably and conditionally.
 */
import { STATE_FILE } from "../paths.js";
import { classifyState } from "../state/read.js";
import type { CatalogState, ClassifiedState } from "../state/types.js";
import { serializeState } from "../state/write.js";
import type { StorageDriver, StorageEntry, VersionToken } from "../storage/driver.js";

export interface RootSnapshot {
  listing: StorageEntry[];
  state: ClassifiedState;
  /** `null` when there is no state object to compare against. */
  stateToken: VersionToken | null;
}

export async function readRoot(driver: StorageDriver): Promise<RootSnapshot> {
  const listing = await driver.list();
  const entry = listing.find((candidate) => candidate.path === STATE_FILE);
  if (!entry) return { listing, state: classifyState(null), stateToken: null };
  // A symlink or special file is never read: the state must be a regular file.
  if (entry.type !== "file") {
    return { listing, state: classifyState({ notAFile: true }), stateToken: null };
  }
  const stored = await driver.read(STATE_FILE);
  if (!stored) return { listing, state: classifyState(null), stateToken: null };
  return { listing, state: classifyState({ bytes: stored.bytes }), stateToken: stored.token };
}

/** The classified state alone, without listing the root (status, reconcile, prune). */
export async function readState(
  driver: StorageDriver,
): Promise<{ state: ClassifiedState; stateToken: VersionToken | null }> {
  const entry = await driver.stat(STATE_FILE);
  if (!entry) return { state: classifyState(null), stateToken: null };
  if (entry.type !== "file") return { state: classifyState({ notAFile: true }), stateToken: null };
  const stored = await driver.read(STATE_FILE);
  if (!stored) return { state: classifyState(null), stateToken: null };
  return { state: classifyState({ bytes: stored.bytes }), stateToken: stored.token };
}

/**
 * Replace the state durably (fsync'd before the rename is trusted), and only if
 * it is still the version read (`ifMatch`; `null` = there was none), so a writer
 * that slipped past the lock is detected, not overwritten. Returns the new token.
 */
export async function writeState(
  driver: StorageDriver,
  state: CatalogState,
  ifMatch: VersionToken | null,
): Promise<VersionToken> {
  return driver.write(
    STATE_FILE,
    { type: "bytes", bytes: serializeState(state) },
    { ifMatch, durable: true, contentType: "application/json" },
  );
}
