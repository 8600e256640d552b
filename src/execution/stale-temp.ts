/**
 * Temporary files (`.distributor.tmp-*`) are only ever left behind by a run that
 * died between creating and renaming them. Under the root's lock no other run can
 * own one, so they are removed before applying.
 */
import { TEMP_PREFIX } from "../paths.js";
import type { StorageDriver, StorageEntry } from "../storage/driver.js";
import { unlessStopped } from "./locks.js";

/**
 * Delete the stale temporary files under the root. `listing`, when given, must
 * have been taken under the lock the caller still holds (run passes its plan-time
 * listing: nobody else can have added a temp file since, and a second walk of a
 * 100k-file root costs seconds). Without it the root is listed again.
 */
export async function removeStaleTempFiles(
  driver: StorageDriver,
  listing?: readonly StorageEntry[],
): Promise<void> {
  const entries = listing ?? (await driver.list());
  const stale = entries
    .filter((entry) => entry.type !== "directory")
    .filter((entry) => entry.path.slice(entry.path.lastIndexOf("/") + 1).startsWith(TEMP_PREFIX))
    .map((entry) => entry.path);
  if (stale.length > 0) await unlessStopped(() => driver.deleteMany(stale));
}
