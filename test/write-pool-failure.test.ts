/**
 * The filesystem write pool (src/storage/_fs-write-pool.ts) when it breaks in
 * the middle of a busy run. In a file of its own: the pool is one per process,
 * and once broken it stays broken, which would change the other files' tests.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { writePoolSize } from "../src/storage/_fs-write-pool.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";

const TEMP_MARK = ".distributor.tmp";

async function tempFilesUnder(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true });
  return names.filter((name) => path.basename(name).startsWith(TEMP_MARK));
}

describe("filesystem write pool: a write that cannot reach the threads", () => {
  it("breaks the pool, yet every write lands once, and the threads' writes finish before the run goes on", {
    skip: os.availableParallelism() < 2 ? "one core: no write threads" : false,
  }, async () => {
    const base = await mkdtemp(path.join(os.tmpdir(), "distributor-pool-"));
    try {
      const root = path.join(base, "root");
      const driver = createFilesystemDriver({ root });
      // Folders that exist: writes into them go through a temporary file and
      // a rename, which a thread stopped half way would leave behind.
      const folders = Array.from({ length: 8 }, (_, i) => `f${i}`);
      for (const folder of folders) await mkdir(path.join(root, folder), { recursive: true });
      // Enough writes before the bad one that the pool runs and its threads
      // have batches in flight when it breaks (with two threads they do:
      // each takes 64 writes a batch, two batches at a time).
      const paths = Array.from({ length: 2000 }, (_, i) => `f${i % 8}/file-${i}.txt`);
      const bad = 1200;
      const contents = paths.map((relPath, i) => {
        const content = {
          type: "bytes" as const,
          bytes: new TextEncoder().encode(`${relPath}\n`.repeat(50)),
        };
        // A function cannot be copied to another thread: postMessage throws.
        if (i === bad) Object.assign(content, { cannotCross: () => relPath });
        return content;
      });
      // Odd writes one per call, even ones (the bad one too) through a
      // batch's writeAll, whose handed-back writes are done on this thread
      // as they come back, each asking for the next.
      const batchPaths = paths.filter((_, i) => i % 2 === 0);
      assert.ok(driver.beginWrites);
      const batch = await driver.beginWrites(batchPaths);
      const singles = paths.flatMap((relPath, i) =>
        i % 2 === 1 ? [driver.write(relPath, contents[i] as (typeof contents)[number])] : [],
      );
      const all = batch.writeAll(
        batchPaths.map((relPath, i) => ({
          path: relPath,
          content: contents[i * 2] as (typeof contents)[number],
        })),
      );
      const results = await Promise.allSettled([all, ...singles]);
      assert.equal(writePoolSize(), 0, "the pool broke");
      for (const [i, result] of results.entries()) {
        assert.equal(
          result.status,
          "fulfilled",
          `${i === 0 ? "writeAll" : paths[i * 2 - 1]}: ${String((result as PromiseRejectedResult).reason)}`,
        );
      }
      await batch.commit();
      for (const relPath of paths) {
        assert.equal(await readFile(path.join(root, relPath), "utf8"), `${relPath}\n`.repeat(50));
      }
      // Nothing half-written, now or a moment later (a thread that was
      // still running would rename or leave its temporary file then).
      assert.deepEqual(await tempFilesUnder(root), []);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(await tempFilesUnder(root), []);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
