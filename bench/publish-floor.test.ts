import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { writeTestBundle } from "../src/bundle/testing.js";
import { publishFloor, verifyAll, writeAll } from "./publish-floor.js";

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
  assert.equal(existsSync(path.join(root, ".distributor.lock")), false, "the lock is released");
});

const spoilers: [string, (bundle: string) => void][] = [
  [
    "a large file",
    (dir) => writeFileSync(path.join(dir, "b/large.bin"), Buffer.alloc(LARGE.length, 8)),
  ],
  ["a small file", (dir) => writeFileSync(path.join(dir, "top.txt"), "TOP")],
  ["a Markdown file", (dir) => writeFileSync(path.join(dir, "index.md"), "# Tutle\n")],
  [
    "an unclean path in the manifest",
    (dir) => {
      const file = path.join(dir, "manifest.json");
      const manifest = JSON.parse(readFileSync(file, "utf8"));
      manifest.files.find((f: { path: string }) => f.path === "top.txt").path = "b/../top.txt";
      writeFileSync(file, JSON.stringify(manifest));
    },
  ],
];

for (const [what, spoil] of spoilers) {
  test(`the publish floor writes nothing when ${what} does not match`, async () => {
    const source = await bundle();
    spoil(source);
    const root = newRoot();
    const result = await publishFloor(source, root);
    assert.ok(result.bad >= 1, `bad: ${result.bad}`);
    assert.equal(existsSync(root), false);
  });
}

test("the publish floor hashes a large file again as it copies it", async () => {
  const source = await bundle();
  const listed = JSON.parse(readFileSync(path.join(source, "manifest.json"), "utf8")).files;
  const large = listed.filter((f: { path: string }) => f.path === "b/large.bin");
  assert.equal(verifyAll(large, source), 0);
  // Changed after verification: the copy must not pass as verified bytes.
  writeFileSync(path.join(source, "b/large.bin"), Buffer.alloc(LARGE.length, 9));
  const root = newRoot();
  mkdirSync(path.join(root, "b"), { recursive: true });
  assert.equal(writeAll(root), 1);
});
