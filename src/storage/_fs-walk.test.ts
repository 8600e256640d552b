import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { newWorkClaims, takeFront } from "../threads.js";
import {
  leftOver,
  type WalkShare,
  walkShareSync,
  walkTree,
  walkTreeOffThread,
} from "./_fs-walk.js";

async function tree(files: string[]): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), "distributor-walk-"));
  for (const file of files) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), file);
  }
  return root;
}

describe("shared walks", () => {
  it("a flat root, a deep one and a mixed one list as the plain walk does", async () => {
    const flat = Array.from({ length: 300 }, (_, i) => `f${i}.txt`);
    const deep = Array.from({ length: 60 }, (_, i) => `a/b${i % 7}/c${i % 3}/d${i}.txt`);
    for (const files of [flat, deep, [...flat.slice(0, 50), ...deep]]) {
      const root = await tree(files);
      const plain = await walkTree(root);
      assert.equal(plain.length, files.length);
      for (const helpers of [1, 2, 3])
        assert.deepEqual(await walkTreeOffThread(root, helpers), plain);
    }
  });

  it("every walk lists empty folders and links, never descends a link, and sorts", async () => {
    const root = await tree(["a/b/c/deep.txt", "a/b/file.txt", "m/n.txt", "z.txt"]);
    await mkdir(path.join(root, "a/b/empty"));
    await mkdir(path.join(root, "e"));
    await symlink("a", path.join(root, "link"));
    await symlink("../z.txt", path.join(root, "a/lz"));
    const plain = await walkTree(root);
    assert.deepEqual(
      plain.map((entry) => [entry.path, entry.type]),
      [
        ["a/b/c/deep.txt", "file"],
        ["a/b/empty", "directory"],
        ["a/b/file.txt", "file"],
        ["a/lz", "symlink"],
        ["e", "directory"],
        ["link", "symlink"],
        ["m/n.txt", "file"],
        ["z.txt", "file"],
      ],
    );
    // Each file holds its own path (see tree).
    assert.equal(plain[0]?.size, "a/b/c/deep.txt".length);
    for (const helpers of [1, 2]) assert.deepEqual(await walkTreeOffThread(root, helpers), plain);
    const subtrees = walkShareSync({ root, leaves: ["z.txt"], dirs: ["a", "m"] });
    assert.deepEqual(
      subtrees.entries,
      plain.filter((entry) => !["e", "link"].includes(entry.path)),
    );
  });

  it("a name that is not UTF-8 is listed as other content, never dropped", async () => {
    const root = await tree(["ok.txt", "sub/ok.txt"]);
    // 0xFE is never valid in UTF-8: readdir can only give it as U+FFFD.
    const raw = (relative: string, bytes: number[]) =>
      Buffer.concat([Buffer.from(`${root}/${relative}`), Buffer.from(bytes)]);
    writeFileSync(raw("", [0x66, 0xfe]), "a file");
    mkdirSync(raw("sub/", [0x64, 0xfe]));
    writeFileSync(Buffer.concat([raw("sub/", [0x64, 0xfe]), Buffer.from("/inside.txt")]), "x");
    const expected = [
      { path: "f\uFFFD", size: 0, type: "other" },
      { path: "ok.txt", size: 6, type: "file" },
      { path: "sub/d\uFFFD", size: 0, type: "other" },
      { path: "sub/ok.txt", size: 10, type: "file" },
    ];
    assert.deepEqual(await walkTree(root), expected);
    for (const helpers of [1, 2])
      assert.deepEqual(await walkTreeOffThread(root, helpers), expected);
  });

  it("a thread takes only what the others have not claimed", async () => {
    const root = await tree(["d0/x.txt", "d1/y.txt", "d2/z.txt", "top.txt"]);
    const claims = newWorkClaims(4);
    const share: WalkShare = { root, dirs: ["d0", "d1", "d2"], leaves: ["top.txt"], claims };
    // Another thread has d0 and d1.
    assert.deepEqual([takeFront(claims), takeFront(claims)], [0, 1]);
    const part = walkShareSync(share);
    assert.deepEqual(part.done, [2, 3]);
    assert.deepEqual(
      part.entries.map((entry) => entry.path),
      ["d2/z.txt", "top.txt"],
    );
  });

  it("what a failed helper claimed is left over, and nothing else", () => {
    const shared: WalkShare = { root: "/r", dirs: ["a", "b", "c"], leaves: ["x", "y"] };
    const here = { entries: [], done: [0, 3] };
    const helper = { entries: [], done: [2] };
    assert.deepEqual(leftOver(shared, [here, helper]), { root: "/r", dirs: ["b"], leaves: ["y"] });
    assert.deepEqual(leftOver(shared, [here, null]), {
      root: "/r",
      dirs: ["b", "c"],
      leaves: ["y"],
    });
  });
});
