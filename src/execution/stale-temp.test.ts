import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StorageEntry } from "../storage/driver.js";
import { staleTempPaths } from "./stale-temp.js";

const file = (path: string): StorageEntry => ({ path, size: 1, type: "file" });

describe("staleTempPaths", () => {
  test("temp files anywhere in this root, and nothing else", () => {
    const entries = [
      file(".distributor.tmp-a"),
      file("docs/.distributor.tmp-b"),
      file("docs/guide.html"),
      file("x.distributor.tmp-c"),
      { path: "empty/.distributor.tmp-d", size: 0, type: "directory" } as StorageEntry,
    ];
    assert.deepEqual(staleTempPaths(entries), [".distributor.tmp-a", "docs/.distributor.tmp-b"]);
  });

  test("a nested root's temp files are its own: its lock or state marks it", () => {
    const entries = [
      file(".distributor.json"),
      file("locked/.distributor.lock"),
      file("locked/.distributor.tmp-1"),
      file("locked/deep/.distributor.tmp-2"),
      file("stated/.distributor.json"),
      file("stated/.distributor.tmp-3"),
      // A state path that is a folder still marks a root (nestedRootOf).
      file("folded/.distributor.json/x"),
      file("folded/.distributor.tmp-6"),
      file("plain/.distributor.tmp-4"),
      file("lockedness/.distributor.tmp-5"),
    ];
    assert.deepEqual(staleTempPaths(entries), [
      "plain/.distributor.tmp-4",
      "lockedness/.distributor.tmp-5",
    ]);
  });
});
