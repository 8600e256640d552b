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
      file("x.distributor.tmp-c/inside.html"),
    ];
    assert.deepEqual(staleTempPaths(entries), [".distributor.tmp-a", "docs/.distributor.tmp-b"]);
  });

  test("a temp folder left by a killed run goes with everything in it, empty folders too", () => {
    const folder = (path: string) => ({ path, size: 0, type: "directory" }) as StorageEntry;
    const s1 = ".distributor.tmp-00000000000000a1-0";
    const s2 = ".distributor.tmp-00000000000000a2-1k";
    const s3 = ".distributor.tmp-00000000000000a3-2";
    const entries = [
      file(`${s1}/a.html`),
      file(`${s1}/deep/b.html`),
      folder(`${s1}/empty`),
      file(`docs/${s2}/c.html`),
      folder(`docs/${s3}`),
      file("docs/kept.html"),
      folder("docs/empty"),
      // Not named as the tool names its folders: a user's, left alone.
      file(".distributor.tmp-notes/todo.txt"),
      folder("docs/.distributor.tmp-drafts"),
    ];
    assert.deepEqual(staleTempPaths(entries), [
      `${s1}/a.html`,
      `${s1}/deep/b.html`,
      `${s1}/empty`,
      `docs/${s2}/c.html`,
      `docs/${s3}`,
    ]);
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
      file("locked/.distributor.tmp-00000000000000b7-0/staged.html"),
      // Inside another root's state path, and a root inside a folder with a temporary name.
      file("inner/.distributor.json/.distributor.tmp-8"),
      file("notes/.distributor.tmp-notes/deeper/.distributor.lock"),
      file("notes/.distributor.tmp-notes/deeper/.distributor.tmp-9"),
    ];
    assert.deepEqual(staleTempPaths(entries), [
      "plain/.distributor.tmp-4",
      "lockedness/.distributor.tmp-5",
    ]);
  });
});
