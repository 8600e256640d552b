/**
 * The executor keeps as many writes in flight as the driver asks for
 * (`writeConcurrency`): with a fixed 8, the filesystem's write threads sat
 * idle between writes, and an S3 destination never used more than 8 of its
 * `max_concurrency` connections. The driver is the real filesystem one; only
 * its writes are wrapped to count the calls running at once.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { applyPlan } from "../src/execution/apply-plan.js";
import { FS_WRITE_CONCURRENCY } from "../src/storage/_fs-write-pool.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import { scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

/** More than the filesystem's writeConcurrency, so that it is reached and not exceeded. */
const FILES = FS_WRITE_CONCURRENCY + 50;

/** Publish FILES files through a driver whose `writeConcurrency` is `limit`; the most writes seen at once. */
async function mostWritesAtOnce(limit: number | undefined): Promise<number> {
  const s = await scenario();
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`dir${i % 7}/file${i}.txt`] = `content ${i}\n`;
  const dir = await s.bundle("many", files);

  const real = createFilesystemDriver({ root: s.root });
  let running = 0;
  let most = 0;
  const counted = async <T>(write: () => Promise<T>): Promise<T> => {
    running++;
    most = Math.max(most, running);
    try {
      return await write();
    } finally {
      running--;
    }
  };
  // The outputs' folders are new, so their writes go through the batch (_fs-staging.ts).
  const beginWrites = real.beginWrites?.bind(real);
  assert.ok(beginWrites, "the filesystem driver writes in batches");
  const driver: StorageDriver = {
    ...real,
    writeConcurrency: limit ?? real.writeConcurrency,
    write: (relPath, content, options) => counted(() => real.write(relPath, content, options)),
    beginWrites: async (paths) => {
      const batch = await beginWrites(paths);
      return {
        ...batch,
        write: (relPath, content, options) => counted(() => batch.write(relPath, content, options)),
      };
    },
  };
  const { plan, snapshot } = await planOnly(s.config, dir, driver);
  assert.equal(plan.action, "publish_new");
  await applyPlan(driver, plan, { stateToken: snapshot.stateToken });
  const state = await readStateFile(s.root);
  assert.equal(state.outputs.length, FILES, "every output was written and recorded");
  return most;
}

describe("applyPlan's writes in flight", () => {
  test("reach the driver's writeConcurrency", async () => {
    assert.equal(await mostWritesAtOnce(5), 5);
    assert.equal(await mostWritesAtOnce(40), 40);
  });

  test("on a filesystem, enough to keep the write threads busy", async () => {
    const fsLimit = createFilesystemDriver({ root: "/" }).writeConcurrency;
    assert.ok(fsLimit > 8, `the filesystem asks for ${fsLimit}`);
    assert.equal(await mostWritesAtOnce(undefined), fsLimit);
  });
});
