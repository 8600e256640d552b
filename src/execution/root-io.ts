/**
 * Reads what planning needs from one destination root: the listing and the
 * classified state with its version token (for the conditional state write).
 */
import { STATE_FILE } from "../paths.js";
import { classifyState } from "../state/read.js";
import type { ClassifiedState } from "../state/types.js";
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
