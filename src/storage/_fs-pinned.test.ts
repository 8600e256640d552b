import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { unlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { atPinnedEntry, canPinFolders, inPinnedFolder } from "./_fs-pinned.js";

const base = mkdtempSync(path.join(os.tmpdir(), "distributor-pinned-"));
after(() => rmSync(base, { recursive: true, force: true }));

/** A root with `a/b/victim.txt`, and outside it a decoy folder holding a file of the same name. */
function layout(): { root: string; decoy: string; moved: string } {
  const at = mkdtempSync(path.join(base, "case-"));
  const root = path.join(at, "root");
  const decoy = path.join(at, "decoy");
  mkdirSync(path.join(root, "a", "b"), { recursive: true });
  mkdirSync(decoy);
  writeFileSync(path.join(root, "a", "b", "victim.txt"), "ours");
  writeFileSync(path.join(decoy, "victim.txt"), "not ours");
  return { root, decoy, moved: path.join(at, "moved") };
}

describe("pinned folders", () => {
  it("are available on Linux", () => {
    assert.equal(canPinFolders, process.platform === "linux");
  });

  it("a folder swapped for a link while it is open: the call reaches the folder it opened, never the link's target", async () => {
    const { root, decoy, moved } = layout();
    const result = await atPinnedEntry(root, "a/b/victim.txt", async (entry) => {
      // The swap a local user could make between a check and an unlink.
      renameSync(path.join(root, "a"), moved);
      symlinkSync(decoy, path.join(root, "a"));
      await unlink(entry);
    });
    assert.deepEqual(result, { kind: "ok", value: undefined });
    assert.deepEqual(readdirSync(decoy), ["victim.txt"], "nothing outside the root was removed");
    assert.deepEqual(readdirSync(path.join(moved, "b")), [], "the file of the folder opened went");
  });

  it("a link or a file on the way is refused, naming it; a missing folder is missing", async () => {
    const { root, decoy } = layout();
    symlinkSync(decoy, path.join(root, "link"));
    writeFileSync(path.join(root, "file"), "x");
    const never = async () => assert.fail("the body must not run");
    assert.deepEqual(await inPinnedFolder(root, "link", never), {
      kind: "unsafe",
      ancestor: "link",
      what: "a symbolic link",
    });
    assert.deepEqual(await inPinnedFolder(root, "file/below", never), {
      kind: "unsafe",
      ancestor: "file",
      what: "not a directory",
    });
    assert.deepEqual(await inPinnedFolder(root, "nothing/here", never), { kind: "missing" });
    assert.deepEqual(await inPinnedFolder(path.join(root, "file"), "", never), {
      kind: "missing",
    });
  });

  it("a folder that cannot be opened leaves no descriptor open on the way to it", async () => {
    const { root } = layout();
    const before = readdirSync("/proc/self/fd").length;
    for (let i = 0; i < 50; i++) {
      // ENAMETOOLONG: openOne throws a storage error instead of answering.
      await assert.rejects(
        inPinnedFolder(root, `a/b/${"x".repeat(300)}`, async () => assert.fail("not opened")),
        /ENAMETOOLONG/,
      );
    }
    assert.ok(readdirSync("/proc/self/fd").length <= before + 2, "no descriptor left open");
  });

  it("closes each folder once its calls have settled, so a long walk holds few descriptors", async () => {
    const { root } = layout();
    const before = readdirSync("/proc/self/fd").length;
    for (let i = 0; i < 200; i++) {
      await inPinnedFolder(root, "a/b", async (dir) => readdirSync(dir));
    }
    assert.ok(readdirSync("/proc/self/fd").length <= before + 2, "no descriptor left open");
  });
});
