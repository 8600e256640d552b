/**
 * Temporary files (`.distributor.tmp-*`) are only ever left behind by a run that
 * died between creating and renaming them. Under the root's lock no other run can
 * own one, so they are removed before applying.
 */
import { TEMP_PREFIX } from "../paths.js";
import type { StorageDriver } from "../storage/driver.js";

export async function removeStaleTempFiles(driver: StorageDriver): Promise<void> {
  const listing = await driver.list();
  const stale = listing
    .filter((entry) => entry.path.slice(entry.path.lastIndexOf("/") + 1).startsWith(TEMP_PREFIX))
    .map((entry) => entry.path);
  if (stale.length > 0) await driver.deleteMany(stale);
}
