import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { KEEP_MAX_FILE_BYTES, KEEP_MAX_UPLOAD_FILE_BYTES } from "../bundle/_verified-bytes.js";
import { writeTestBundle } from "../bundle/testing.js";
import type { DestinationConfig, PipelineConfig } from "../config/types.js";
import { STATE_FILE } from "../paths.js";
import { EarlyStates } from "./early-state.js";
import { firstPublishLikely, keepFileBytesFor, prepareSources } from "./run.js";

const pipeline = (id: string) => ({ id }) as PipelineConfig;

function onFilesystem(root: string, at = "site"): DestinationConfig {
  return { id: at, storage: { type: "filesystem", root }, path: at, workflow: "additive" };
}

const onS3: DestinationConfig = {
  id: "bucket",
  storage: { type: "s3", bucket: "b", prefix: "", forcePathStyle: true, maxConcurrency: 16 },
  path: "site",
  workflow: "additive",
};

/** A pipeline `id` that publishes every file of the bundle in `dir` as it is. */
function everythingOf(dir: string, id: string): PipelineConfig {
  return {
    id,
    source: dir,
    destinations: [id],
    include: ["**"],
    exclude: [],
    selects: () => true,
    transforms: [],
  };
}

test("verified bytes are kept when a destination of the pipeline has no state yet, or is on S3", () => {
  const root = mkdtempSync(path.join(tmpdir(), "distributor-first-"));
  mkdirSync(path.join(root, "published"));
  writeFileSync(path.join(root, "published", STATE_FILE), "{}");
  const published = { pipeline: pipeline("p"), destination: onFilesystem(root, "published") };
  const fresh = { pipeline: pipeline("p"), destination: onFilesystem(root, "fresh") };
  const freshOther = { pipeline: pipeline("other"), destination: onFilesystem(root, "fresh") };
  // A state where a folder is missing, or below a file, is no state.
  const belowFile = {
    pipeline: pipeline("p"),
    destination: onFilesystem(root, `published/${STATE_FILE}/x`),
  };
  assert.equal(firstPublishLikely([published], "p"), false);
  assert.equal(firstPublishLikely([published, fresh], "p"), true);
  assert.equal(firstPublishLikely([published, freshOther], "p"), false);
  assert.equal(firstPublishLikely([belowFile], "p"), true);
  assert.equal(
    firstPublishLikely([published, { pipeline: pipeline("p"), destination: onS3 }], "p"),
    true,
  );
});

test("the run's budget for kept bytes is shared by its pipelines", async () => {
  const dir = await writeTestBundle({ "a.txt": "12345", "b.txt": "67890" });
  const root = mkdtempSync(path.join(tmpdir(), "distributor-budget-"));
  const everything = (id: string) => everythingOf(dir, id);
  const pairs = ["first", "second"].map((id) => ({
    pipeline: everything(id),
    destination: onFilesystem(root, id),
  }));
  // Room for the first pipeline's two files (5 bytes + 1 each) only.
  const keep = { remaining: 12 };
  const early = new EarlyStates(Promise.resolve([]));
  const sources = await prepareSources(pairs, {}, { early, keep });
  const kept = (id: string) =>
    sources
      .get(id)
      ?.outputs.map((o) => o.content.type === "file" && o.content.verifiedBytes !== undefined);
  assert.deepEqual(kept("first"), [true, true]);
  assert.deepEqual(kept("second"), [false, false]);
  assert.equal(keep.remaining, 0);
  // A dry run keeps nothing.
  const dry = { remaining: 1024 };
  const planned = await prepareSources(pairs, { dryRun: true }, { early, keep: dry });
  assert.equal(dry.remaining, 1024);
  assert.ok(
    planned
      .get("first")
      ?.outputs.every((o) => o.content.type !== "file" || o.content.verifiedBytes === undefined),
  );
});

test("a pipeline with an S3 destination keeps files up to 16 MiB; one to folders only, up to 256 KiB", async () => {
  const mid = Buffer.alloc(KEEP_MAX_FILE_BYTES + 1, 7); // kept for uploads only
  const big = Buffer.alloc(KEEP_MAX_UPLOAD_FILE_BYTES + 1, 8); // never kept
  const dir = await writeTestBundle({ "big.bin": big, "mid.bin": mid, "small.txt": "small" });
  const root = mkdtempSync(path.join(tmpdir(), "distributor-keep-size-"));
  const everything = (id: string) => everythingOf(dir, id);
  const uploads = { pipeline: everything("uploads"), destination: onS3 };
  const folders = { pipeline: everything("folders"), destination: onFilesystem(root, "folders") };
  assert.equal(keepFileBytesFor([uploads, folders], "uploads"), KEEP_MAX_UPLOAD_FILE_BYTES);
  assert.equal(keepFileBytesFor([uploads, folders], "folders"), KEEP_MAX_FILE_BYTES);
  const early = new EarlyStates(Promise.resolve([]));
  const keep = { remaining: 64 * 1024 * 1024 };
  const sources = await prepareSources([uploads, folders], {}, { early, keep });
  const kept = (id: string) =>
    Object.fromEntries(
      (sources.get(id)?.outputs ?? []).map((o) => [
        o.path,
        o.content.type === "file" && o.content.verifiedBytes !== undefined
          ? Buffer.from(o.content.verifiedBytes).equals(
              o.path === "mid.bin" ? mid : o.path === "big.bin" ? big : Buffer.from("small"),
            )
          : "not kept",
      ]),
    );
  assert.deepEqual(kept("uploads"), { "big.bin": "not kept", "mid.bin": true, "small.txt": true });
  assert.deepEqual(kept("folders"), {
    "big.bin": "not kept",
    "mid.bin": "not kept",
    "small.txt": true,
  });
});
