/**
 * The executor keeps as many writes in flight as the driver asks for
 * (`writeConcurrency`): with a fixed 8, the filesystem's write threads sat
 * idle between writes, and an S3 destination never used more than 8 of its
 * `max_concurrency` connections. The driver is the real filesystem one:
 * written one output per call (as S3 is), its writes are wrapped to count
 * the calls running at once; written as a batch, the write threads count
 * what they were given.
 */
import assert from "node:assert/strict";
import os from "node:os";
import { after, describe, test } from "node:test";
import { applyPlan } from "../src/execution/apply-plan.js";
import {
  FS_WRITE_CONCURRENCY,
  writePoolMostInFlight,
  writePoolSize,
} from "../src/storage/_fs-write-pool.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import { scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

/** Files enough to reach any limit tested here (see mostWritesAtOnce). */
const FILES = FS_WRITE_CONCURRENCY + 50;

/** A bundle of FILES small files in 7 new folders, and its scenario. */
async function manyFiles(count = FILES) {
  const s = await scenario();
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`dir${i % 7}/file${i}.txt`] = `content ${i}\n`;
  return { s, dir: await s.bundle("many", files) };
}

/**
 * Publish FILES files through a filesystem driver that writes one output
 * per call, as S3 does (no `beginWrites`), with `writeConcurrency` set to
 * `limit`; the most writes seen at once.
 */
async function mostWritesAtOnce(limit: number): Promise<number> {
  const { s, dir } = await manyFiles();
  const real = createFilesystemDriver({ root: s.root });
  let running = 0;
  let most = 0;
  const driver: StorageDriver = {
    ...real,
    beginWrites: undefined,
    writeConcurrency: limit,
    write: async (relPath, content, options) => {
      running++;
      most = Math.max(most, running);
      try {
        return await real.write(relPath, content, options);
      } finally {
        running--;
      }
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
  test("reach the driver's writeConcurrency, one write per call", async () => {
    assert.equal(await mostWritesAtOnce(5), 5);
    assert.equal(await mostWritesAtOnce(40), 40);
  });

  test("on a filesystem, a batch keeps enough in flight for the write threads", async () => {
    const fsLimit = createFilesystemDriver({ root: "/" }).writeConcurrency;
    assert.equal(fsLimit, FS_WRITE_CONCURRENCY);
    assert.ok(fsLimit > 8, `the filesystem asks for ${fsLimit}`);
    // The first writes of a process are done on the calling thread, until
    // the write threads start (_fs-write-pool.ts): enough more to fill them.
    const { s, dir } = await manyFiles(FILES + 100);
    const driver = createFilesystemDriver({ root: s.root });
    const { plan, snapshot } = await planOnly(s.config, dir, driver);
    await applyPlan(driver, plan, { stateToken: snapshot.stateToken });
    assert.equal((await readStateFile(s.root)).outputs.length, FILES + 100);
    if (os.availableParallelism() < 2) return;
    assert.ok(writePoolSize() >= 2, "the write threads took the writes");
    assert.equal(writePoolMostInFlight(), fsLimit);
  });
});
