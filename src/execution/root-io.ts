/**
 * The state file's I/O for one destination root: reading what planning needs
 * (the listing, the classified state and its version token) and writing a new
 * state durably and conditionally.
 */
import { STATE_FILE } from "../paths.js";
import { classifyState } from "../state/read.js";
import type { CatalogState, ClassifiedState } from "../state/types.js";
import { serializeState } from "../state/write.js";
import type { StorageDriver, StorageEntry, StoredBytes, VersionToken } from "../storage/driver.js";
import { hasIdleHelper } from "../threads.js";
import type { EarlyStates } from "./early-state.js";

export interface RootSnapshot {
  listing: StorageEntry[];
  /** The root treats names that differ only by case as one (StorageDriver.foldsCase). */
  foldsCase: boolean;
  state: ClassifiedState;
  /** `null` when there is no state object to compare against. */
  stateToken: VersionToken | null;
}

/**
 * A state this big takes longer to parse (about 50 MB/s) than starting a
 * thread to list the root meanwhile costs (about 40 ms).
 */
const LIST_ALONGSIDE_STATE_BYTES = 4 * 1024 * 1024;
/**
 * With a helper thread already started (verification of a large bundle leaves
 * them), listing there pays off as soon as parsing takes a few milliseconds.
 */
const LIST_ON_IDLE_HELPER_STATE_BYTES = 256 * 1024;

function listAlongside(stateBytes: number): boolean {
  if (stateBytes > LIST_ALONGSIDE_STATE_BYTES) return true;
  return stateBytes > LIST_ON_IDLE_HELPER_STATE_BYTES && hasIdleHelper();
}

/**
 * The root's listing and classified state, read under the run's lock. On a
 * filesystem the state is read first, and parsed while the root is listed: for 100,000
 * outputs both take 0.5-1 s, and a filesystem listing can run on another
 * thread (ListOptions.busyHere). A state classified early from the same
 * bytes (see early-state.ts) is not parsed again; the listing is then shared
 * with this thread at once.
 */
export async function readRoot(driver: StorageDriver, early?: EarlyStates): Promise<RootSnapshot> {
  // On a remote root the two requests go out together: each is a round trip
  // (about 50 ms on the local test server, whose small response bodies wait
  // out a delayed ACK), and neither depends on the other.
  const remoteListing = driver.capabilities.remote ? driver.list() : null;
  // Its failure is reported when it is awaited below, not as unhandled meanwhile.
  remoteListing?.catch(() => {});
  let stored: StoredBytes | null = null;
  let readError: { error: unknown } | null = null;
  try {
    stored = await driver.read(STATE_FILE);
  } catch (error) {
    // A symlink or special file is never read; the listing says which it was.
    readError = { error };
  }
  const listingPromise =
    remoteListing ?? driver.list({ busyHere: listAlongside(stored?.bytes.byteLength ?? 0) });
  const foldsCasePromise = driver.foldsCase?.() ?? Promise.resolve(false);
  // Parsing throws nothing (bad bytes classify as invalid), so the listing
  // promise is always awaited below.
  const earlyState = early?.take(driver.root, stored?.bytes ?? null);
  const state = stored ? (earlyState ?? classifyState({ bytes: stored.bytes })) : null;
  const listing = await listingPromise;
  const foldsCase = await foldsCasePromise;
  if (state && stored) return { listing, foldsCase, state, stateToken: stored.token };
  // Not read: what the listing shows there decides. A directory that holds
  // something is listed only by its content; then the driver is asked, since
  // on S3 keys below the state's name make no directory of it.
  const folder = `${STATE_FILE}/`;
  const entry =
    listing.find((candidate) => candidate.path === STATE_FILE) ??
    (listing.some((candidate) => candidate.path.startsWith(folder))
      ? await driver.stat(STATE_FILE)
      : null);
  if (entry && entry.type !== "file") {
    return { listing, foldsCase, state: classifyState({ notAFile: true }), stateToken: null };
  }
  if (entry && readError) {
    const denied = permissionDenied(readError.error);
    if (denied === null) throw readError.error;
    return { listing, foldsCase, state: classifyState({ unreadable: denied }), stateToken: null };
  }
  return { listing, foldsCase, state: classifyState(null), stateToken: null };
}

/**
 * The errno code when `error` says this process may not read the file
 * (EACCES, EPERM): an unreadable state is `invalid` (SPEC §5), a plan's
 * fail_conflict, not a failed run. Other read errors (an S3 request that
 * failed, EIO) stay storage errors.
 */
function permissionDenied(error: unknown): string | null {
  const cause = (error as { cause?: unknown } | null)?.cause ?? error;
  const code = (cause as NodeJS.ErrnoException | null)?.code;
  return code === "EACCES" || code === "EPERM" ? code : null;
}

/** The classified state alone, without listing the root (status, reconcile, prune). */
export async function readState(
  driver: StorageDriver,
): Promise<{ state: ClassifiedState; stateToken: VersionToken | null }> {
  const entry = await driver.stat(STATE_FILE);
  if (entry && entry.type !== "file") {
    return { state: classifyState({ notAFile: true }), stateToken: null };
  }
  // Read also when the stat found nothing, to confirm it: on S3 a HEAD of a
  // key in a bucket that does not exist is a bare 404 too, where a GET names
  // NoSuchBucket (a storage_error, not "nothing published here yet").
  let stored: StoredBytes | null;
  try {
    stored = await driver.read(STATE_FILE);
  } catch (error) {
    const denied = permissionDenied(error);
    if (denied === null) throw error;
    return { state: classifyState({ unreadable: denied }), stateToken: null };
  }
  if (!stored) return { state: classifyState(null), stateToken: null };
  return { state: classifyState({ bytes: stored.bytes }), stateToken: stored.token };
}

/**
 * Replace the state, and only if it is still the version read (`ifMatch`;
 * `null` = there was none), so a writer that slipped past the lock is
 * detected, not overwritten. Returns the new token. Durably (fsync'd before
 * the rename is trusted) unless `durable` is false: see apply-plan.ts for
 * the one state that is not.
 */
export async function writeState(
  driver: StorageDriver,
  state: CatalogState,
  ifMatch: VersionToken | null,
  durable = true,
): Promise<VersionToken> {
  return driver.write(
    STATE_FILE,
    { type: "bytes", bytes: serializeState(state) },
    { ifMatch, durable, contentType: "application/json" },
  );
}
