import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import type { S3Client } from "@aws-sdk/client-s3";
import { DistributorError } from "../errors.js";
import { readSmallFile } from "./_s3-put.js";
import type { FileUpload } from "./_s3-upload.js";

const dir = mkdtempSync(path.join(tmpdir(), "s3-put-"));

function upload(name: string): FileUpload {
  return {
    client: {} as S3Client,
    params: { Bucket: "b", Key: `k/${name}` },
    absPath: path.join(dir, name),
    location: `s3://b/k/${name}`,
    path: name,
  };
}

describe("readSmallFile", () => {
  it("returns the whole content of a file below the limit", () => {
    writeFileSync(path.join(dir, "small.txt"), "hello world");
    assert.equal(readSmallFile(upload("small.txt"), 12)?.toString(), "hello world");
  });

  it("returns an empty buffer for an empty file", () => {
    writeFileSync(path.join(dir, "empty.txt"), "");
    assert.equal(readSmallFile(upload("empty.txt"), 12)?.byteLength, 0);
  });

  it("returns null at or above the limit, so the caller streams the file", () => {
    writeFileSync(path.join(dir, "big.txt"), "x".repeat(12));
    assert.equal(readSmallFile(upload("big.txt"), 12), null);
  });

  it("names the key and the source in a storage_error for a missing source", () => {
    assert.throws(
      () => readSmallFile(upload("gone.txt"), 12),
      (error: unknown) =>
        error instanceof DistributorError &&
        error.code === "storage_error" &&
        error.message.includes("s3://b/k/gone.txt") &&
        error.message.includes("ENOENT"),
    );
  });
});
