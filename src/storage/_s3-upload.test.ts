import assert from "node:assert/strict";
import { test } from "node:test";
import { partSizeFor } from "./_s3-upload.js";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

test("parts follow the threshold within 5-16 MiB, and grow only where 10,000 would not hold the file", () => {
  assert.equal(partSizeFor(100 * MiB, 8 * MiB), 8 * MiB);
  assert.equal(partSizeFor(100 * MiB, 1 * MiB), 5 * MiB, "S3's smallest part");
  assert.equal(partSizeFor(100 * MiB, 64 * MiB), 16 * MiB);
  // 16 MiB × 10,000 is 156.25 GiB: a file of exactly that still fits.
  assert.equal(partSizeFor(10_000 * 16 * MiB, 64 * MiB), 16 * MiB);
  for (const length of [10_000 * 16 * MiB + 1, 200 * GiB, 5 * 1024 * GiB]) {
    const part = partSizeFor(length, 64 * MiB);
    assert.ok(Math.ceil(length / part) <= 10_000, `${length} bytes in ${part}-byte parts`);
    assert.equal(part % MiB, 0, "whole MiB");
    assert.ok(Math.ceil(length / (part - MiB)) > 10_000, "no larger than it must be");
  }
});
