import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FileToCheck } from "./_file-checks.js";
import { type PackedFiles, packedCount, packedFile, packFiles } from "./_packed-files.js";

const digest = (n: number) => `sha256:${n.toString(16).padStart(64, "0")}`;

describe("packed files (a shard as sent to a helper thread)", () => {
  test("every file comes back as it went in, whatever its path's characters", () => {
    const files: FileToCheck[] = [
      { path: "a.txt", size: 0, sha256: digest(1), at: 0 },
      { path: "données/é-ü.md", size: 12, sha256: digest(2), at: 7 },
      { path: "日本/レポート.html", size: 2 ** 40, sha256: digest(3) },
      { path: "emoji/😀/x", size: 5, sha256: digest(4), at: 99_999 },
    ];
    const packed = packFiles(files);
    assert.equal(packedCount(packed), files.length);
    assert.deepEqual(
      files.map((_, index) => packedFile(packed, index)),
      files,
    );
    // Once cloned, as a helper thread receives it.
    const cloned = structuredClone(packed);
    assert.deepEqual(packedFile(cloned, 2), files[2]);
  });

  test("an empty shard packs to nothing", () => {
    const packed = packFiles([]);
    assert.equal(packedCount(packed), 0);
    assert.equal(packed.text, "");
  });

  test("anything but a whole packed shard is refused", () => {
    const good = packFiles([{ path: "a", size: 1, sha256: digest(1) }]);
    const broken: unknown[] = [
      null,
      {},
      { ...good, text: 5 },
      { ...good, text: `${good.text}x` },
      { ...good, starts: Array.from(good.starts) },
      { ...good, sizes: new Float64Array(2) },
      { ...good, at: new Float64Array(0) },
    ];
    for (const value of broken) assert.equal(packedCount(value as PackedFiles), -1);
  });
});
