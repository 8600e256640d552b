/**
 * Temporary files (`.distributor.tmp-*`) are left behind by a run that died
 * between creating and renaming them, or between writing its lock's temp file
 * and linking it into place (_fs-lock.ts); temporary folders, with everything
 * in them, by one that died before renaming a new folder into place
 * (_fs-staging.ts). Under the root's lock no other run
 * writes one, so they are removed before applying. The one exception is
 * harmless: a run that is starting may have just written its lock's temp file;
 * removing it makes that run find the lock held, as it is. A folder with its
 * own tool files (lock, state, even a state path that is a folder) is another
 * root nested in this one, whose own lock covers its temp files: those are
 * left to it (nestedRootOf, as planning sees nested roots).
 */
import { isTempFolder, isTempPath, nestedRootOf } from "../paths.js";
import type { StorageDriver, StorageEntry } from "../storage/driver.js";
import { unlessStopped } from "./locks.js";

/**
 * Delete the stale temporary files under the root. `listing`, when given, must
 * have been taken under the lock the caller still holds (run passes its plan-time
 * listing: nobody else can have added a temp file since, other than a lock's
 * short-lived one, and a second walk of a 100k-file root costs seconds).
 * Without it the root is listed again.
 */
export async function removeStaleTempFiles(
  driver: StorageDriver,
  listing?: readonly StorageEntry[],
): Promise<void> {
  const entries = listing ?? (await driver.list());
  const stale = staleTempPaths(entries);
  if (stale.length > 0) await unlessStopped(() => driver.deleteMany(stale));
}

/**
 * The temp files of this root in a listing, and whatever a temp folder of
 * the tool holds (its empty folders too: the delete removes the folders it
 * leaves empty, which would not reach those); none of another root nested
 * in it.
 */
export function staleTempPaths(entries: readonly StorageEntry[]): string[] {
  const nestedRoots = [
    ...new Set(entries.map((entry) => nestedRootOf(entry.path)).filter((root) => root !== null)),
  ].map((root) => `${root}/`);
  return entries
    .filter((entry) =>
      entry.type === "directory" ? isTempFolder(entry.path) : isTempPath(entry.path),
    )
    .filter((entry) => !nestedRoots.some((root) => entry.path.startsWith(root)))
    .map((entry) => entry.path);
}
