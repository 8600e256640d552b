/**
 * stopWrites (what the CLI's signal handlers call before releasing locks): once
 * it resolves, nothing more is written or deleted under any root by this
 * process, worker threads included, and no apply step (unlessStopped) starts
 * on any storage type. Its own file: stopping writes is for the whole process.
 */
import assert from "node:assert/strict";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { DistributorError } from "../src/errors.js";
import { unlessStopped } from "../src/execution/locks.js";
import { writePoolSize } from "../src/storage/_fs-write-pool.js";
import { createFilesystemDriver, stopWrites } from "../src/storage/filesystem.js";
import { createS3Driver } from "../src/storage/s3.js";
import { cleanupTempDirs, listFiles, tempDir } from "./helpers/fixtures.js";
import { createTestBucket, ensureS3Server, removeTestBucket, testS3Client } from "./s3-server.js";

after(cleanupTempDirs);

const bytes = (text: string) => ({ type: "bytes" as const, bytes: new TextEncoder().encode(text) });

test("after stopWrites, no write lands and none starts", async () => {
  const root = path.join(await tempDir("distributor-stop-"), "root");
  const driver = createFilesystemDriver({ root });
  // Enough small writes for the pool to take over, then many more in flight.
  for (let i = 0; i < 100; i++) await driver.write(`warm/f${i}.txt`, bytes(`${i}`));
  if (os.availableParallelism() >= 2) assert.ok(writePoolSize() >= 2, "the pool took over");
  // A new folder staged before the stop (_fs-staging.ts) is neither put in place nor removed after it.
  const batch = await driver.beginWrites?.(["staged/a.txt"]);
  assert.ok(batch);
  await batch.writeAll([{ path: "staged/a.txt", content: bytes("a") }]);
  // A batch's writeAll in flight at the stop rejects, and starts nothing after it.
  const batchPaths = Array.from({ length: 2000 }, (_, i) => `warm/g${i}.txt`);
  const allBatch = await driver.beginWrites?.(batchPaths);
  assert.ok(allBatch);
  const allOutcome = allBatch
    .writeAll(batchPaths.map((p) => ({ path: p, content: bytes(p) })))
    .then(
      () => null,
      (error: unknown) => error,
    );
  const landed: string[] = [];
  const inFlight = Array.from({ length: 2000 }, (_, i) => `d${i % 50}/f${i}.txt`).map((p) =>
    driver.write(p, bytes(p)).then(
      () => landed.push(p),
      (error: unknown) => {
        assert.ok(error instanceof DistributorError, String(error));
        assert.equal(error.code, "storage_error");
      },
    ),
  );
  // Stop once some writes have landed, so that those are checked below too.
  for (let waited = 0; landed.length === 0 && waited < 5000; waited += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assert.ok(landed.length > 0, "writes landed before the stop");
  await stopWrites();
  const atStop = await listFiles(root);
  await Promise.all(inFlight);
  const allError = await allOutcome;
  assert.ok(allError instanceof DistributorError, `writeAll: ${String(allError)}`);
  assert.equal(allError.code, "storage_error");
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(await listFiles(root), atStop, "nothing was written after the stop");
  for (const p of landed) assert.ok(atStop.includes(p), `${p} resolved but is missing`);
  assert.ok(landed.length < 2000, "the stop interrupted the writes");
  await assert.rejects(driver.write("late.txt", bytes("late")), /Writing stopped/);
  await assert.rejects(batch.commit(), /Writing stopped/);
  await batch.discard();
  assert.deepEqual(await listFiles(root), atStop, "the staged folder stayed as it was");
  assert.ok(
    atStop.some((p) => p.startsWith(".distributor.tmp-") && p.endsWith("/a.txt")),
    "the staged file was in its temporary folder",
  );
  // Deletes stop too (prune's, a run's): nothing is removed, each says why.
  const results = await driver.deleteMany(["warm/f0.txt", "warm", landed[0] as string]);
  assert.deepEqual(
    results.map((result) => [result.path, /Writing stopped/.test(result.error ?? "")]),
    [
      ["warm/f0.txt", true],
      ["warm", true],
      [landed[0], true],
    ],
  );
  assert.deepEqual(await listFiles(root), atStop, "nothing was deleted after the stop");
  // Apply steps on any storage type (S3 included) go through unlessStopped.
  let started = false;
  await assert.rejects(
    unlessStopped(async () => {
      started = true;
    }),
    /Writing stopped/,
  );
  assert.equal(started, false, "no apply step starts after the stop");
});

test("after stopWrites, an S3 driver sends no further delete batch", async () => {
  // Runs after the test above has stopped writes for this process.
  const server = await ensureS3Server();
  const bucket = await createTestBucket();
  const client = testS3Client(server);
  try {
    const keys = ["p/a.txt", "p/b.txt"];
    for (const Key of keys) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: "x" }));
    }
    const driver = createS3Driver({
      bucket,
      prefix: "p",
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
    });
    const results = await driver.deleteMany(["a.txt", "b.txt"]);
    assert.deepEqual(
      results.map((result) => [result.path, /Writing stopped/.test(result.error ?? "")]),
      [
        ["a.txt", true],
        ["b.txt", true],
      ],
    );
    for (const Key of keys) await client.send(new HeadObjectCommand({ Bucket: bucket, Key }));
  } finally {
    client.destroy();
    await removeTestBucket(bucket);
  }
});
