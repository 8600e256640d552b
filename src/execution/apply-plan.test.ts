import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { alternateDirectories } from "./apply-plan.js";

const paths = (items: readonly { path: string }[]) => items.map((item) => item.path);

describe("alternateDirectories", () => {
  it("takes the first file of every directory, then the second, and so on", () => {
    const writes = ["a/1", "a/2", "a/3", "b/1", "top", "a/sub/1", "b/2", "c/1", "top2"].map(
      (path) => ({ path }),
    );
    assert.deepEqual(paths(alternateDirectories(writes)), [
      // Directories in the order they first appear: a, b, the root, a/sub, c.
      "a/1",
      "b/1",
      "top",
      "a/sub/1",
      "c/1",
      "a/2",
      "b/2",
      "top2",
      "a/3",
    ]);
  });

  it("keeps every write once, whatever the directories hold", () => {
    // Directory k holds k + 1 files: rounds empty directories one by one.
    const writes = Array.from({ length: 40 }, (_, k) => k).flatMap((k) =>
      Array.from({ length: k + 1 }, (_, i) => ({ path: `d${k}/f${i}` })),
    );
    const out = alternateDirectories(writes);
    assert.equal(out.length, writes.length);
    assert.deepEqual(new Set(out), new Set(writes));
    // Round r holds the r-th file of every directory with more than r files.
    assert.deepEqual(
      paths(out.slice(0, 40)),
      Array.from({ length: 40 }, (_, k) => `d${k}/f0`),
    );
    assert.deepEqual(
      paths(out.slice(40, 79)),
      Array.from({ length: 39 }, (_, k) => `d${k + 1}/f1`),
    );
    assert.deepEqual(paths(out.slice(-1)), ["d39/f39"]);
  });

  it("gives nothing for nothing", () => {
    assert.deepEqual(alternateDirectories([]), []);
  });
});
