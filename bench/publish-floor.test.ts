import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { writeTestBundle } from "../src/bundle/testing.js";
import { publishFloor } from "./publish-floor.js";

const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const LARGE = Buffer.alloc(600 * 1024, 7); // above what the workers keep: copied and hashed again

async function bundle(): Promise<string> {
  const dir = await writeTestBundle({
    "index.md": "# Title\n\nSee www.example.com and [b](b/page.md).\n",
    "b/page.md": "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "b/c/data.csv": "x,y\n1,2\n",
    "b/large.bin": LARGE,
    "top.txt": "top",
  });
  made.push(dir);
  return dir;
}

function newRoot(): string {
  const work = mkdtempSync(path.join(os.tmpdir(), "distributor-publish-floor-"));
  made.push(work);
  return path.join(work, "out");
}

test("the publish floor writes every file, the Markdown as HTML, and a state recording them", async () => {
  const source = await bundle();
  const root = newRoot();
  const result = await publishFloor(source, root);
  assert.deepEqual({ outputs: result.outputs, bad: result.bad }, { outputs: 5, bad: 0 });
  for (const copied of ["b/c/data.csv", "b/large.bin", "top.txt"]) {
    assert.deepEqual(
      readFileSync(path.join(root, copied)),
      readFileSync(path.join(source, copied)),
    );
  }
  assert.match(readFileSync(path.join(root, "b/page.html"), "utf8"), /<table>/);
  const index = readFileSync(path.join(root, "index.html"), "utf8");
  assert.match(index, /<h1 id="title">Title<\/h1>/);
  assert.match(index, /<a href="http:\/\/www\.example\.com">/, "SPEC §4's www. autolinks");
  const state = JSON.parse(readFileSync(path.join(root, ".distributor.json"), "utf8"));
  assert.deepEqual(
    state.outputs.map((record: { path: string }) => record.path),
    ["b/c/data.csv", "b/large.bin", "b/page.html", "index.html", "top.txt"],
  );
  const { verified, state: stateAt, written } = result.marks;
  assert.ok(verified <= stateAt && stateAt <= written, "phases in order");
});

test("the publish floor writes nothing when a file does not match the manifest", async () => {
  const source = await bundle();
  writeFileSync(path.join(source, "b/large.bin"), Buffer.alloc(LARGE.length, 8));
  const root = newRoot();
  const result = await publishFloor(source, root);
  assert.equal(result.bad, 1);
  assert.equal(existsSync(root), false);
});
