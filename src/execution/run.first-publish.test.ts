import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { DestinationConfig, PipelineConfig } from "../config/types.js";
import { STATE_FILE } from "../paths.js";
import { firstPublishLikely } from "./run.js";

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
