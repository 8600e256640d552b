import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { writeTestBundle } from "../src/bundle/testing.js";
import { run } from "../src/execution/run.js";
import { writeConfig } from "./_kit.js";
import { rerunFloor } from "./rerun-floor.js";

const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A bundle of nested files published to a fresh root by distributor itself. */
async function published(): Promise<{ bundle: string; root: string }> {
  const files: Record<string, string> = { "top.txt": "top" };
  for (let i = 0; i < 20; i++) files[`a/b${i % 3}/f${i}.txt`] = `file ${i}\n`.repeat(i + 1);
  const bundle = await writeTestBundle(files);
  const work = mkdtempSync(path.join(os.tmpdir(), "distributor-floor-test-"));
  made.push(bundle, work);
  const root = path.join(work, "out");
  const configFile = writeConfig(path.join(work, "config.yaml"), {
    source: bundle,
    storage: { type: "filesystem", root },
  });
  const report = await run({ configFile, env: {} });
  assert.equal(report.ok, true);
  return { bundle, root };
}

function editJson(file: string, edit: (json: Record<string, unknown>) => void): void {
  const json = JSON.parse(readFileSync(file, "utf8"));
  edit(json);
  writeFileSync(file, JSON.stringify(json));
}

test("the rerun floor finds every file of an unchanged publication the same, and leaves no lock", async () => {
  const { bundle, root } = await published();
  const result = await rerunFloor(bundle, root);
  // Listed: the 21 outputs, the state and its own lock.
  assert.deepEqual(
    { files: result.files, same: result.same, rejected: result.rejected, listed: result.listed },
    { files: 21, same: 21, rejected: 0, listed: 23 },
  );
  const again = await rerunFloor(bundle, root);
  assert.equal(again.same, 21, "the lock was released");
});

test("the rerun floor counts a changed source, a resized output and a broken record", async () => {
  const { bundle, root } = await published();
  writeFileSync(path.join(bundle, "a/b1/f1.txt"), "FILE 1\nfile 1\n"); // same size, other bytes
  truncateSync(path.join(root, "a/b2/f2.txt"), 1);
  editJson(path.join(root, ".distributor.json"), (state) => {
    const [first] = state.outputs as { sha256: string }[];
    if (first) first.sha256 = "sha256:NOT-HEX";
  });
  const result = await rerunFloor(bundle, root);
  assert.equal(result.same, 18, "the changed source, the resized output and the broken record");
  assert.equal(result.rejected, 1);
});

test("the rerun floor rejects a bad manifest entry, and finds nothing the same under another source identity", async () => {
  const { bundle, root } = await published();
  editJson(path.join(bundle, "manifest.json"), (manifest) => {
    const [first] = manifest.files as { sha256: string }[];
    if (first) first.sha256 = first.sha256.toUpperCase();
  });
  const result = await rerunFloor(bundle, root);
  assert.equal(result.rejected, 1);
  // Any edit of manifest.json is another source digest: every record is of another source.
  assert.equal(result.same, 0);
});

test("the rerun floor verifies as SPEC §2 asks: no symlink on the way, a regular file", async () => {
  const { bundle, root } = await published();
  // The same bytes each time, so that only the checks can tell.
  const aside = mkdtempSync(path.join(os.tmpdir(), "distributor-floor-aside-"));
  made.push(aside);
  renameSync(path.join(bundle, "a/b0"), path.join(aside, "b0"));
  symlinkSync(path.join(aside, "b0"), path.join(bundle, "a/b0"));
  renameSync(path.join(bundle, "top.txt"), path.join(aside, "top.txt"));
  symlinkSync(path.join(aside, "top.txt"), path.join(bundle, "top.txt"));
  // Not a regular file: a folder (read() would fail) where a file is listed.
  const file = path.join(bundle, "a/b1/f1.txt");
  rmSync(file);
  mkdirSync(file);
  const result = await rerunFloor(bundle, root);
  // a/b0 holds f0, f3, … f18: 7 files; then top.txt and the folder.
  assert.equal(result.same, 21 - 7 - 2);
});
