import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { sha256Of, sha256OfFile } from "./_floor-kit.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "distributor-floor-kit-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("sha256OfFile hashes and hands on every byte, in one read or in chunks", () => {
  const buffer = Buffer.alloc(16);
  // Empty, one short read, one byte short of the buffer, exactly it, and over it.
  for (const size of [0, 5, 15, 16, 17, 40]) {
    const bytes = Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + size) % 256));
    const file = path.join(dir, `f${size}`);
    writeFileSync(file, bytes);
    const chunks: Buffer[] = [];
    const digest = sha256OfFile(file, buffer, (chunk) => chunks.push(Buffer.from(chunk)));
    const expected = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    assert.equal(digest, expected, `size ${size}`);
    assert.equal(sha256Of(bytes), expected);
    assert.deepEqual(Buffer.concat(chunks), bytes, `the chunks of size ${size}`);
  }
});
