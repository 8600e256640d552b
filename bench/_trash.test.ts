import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { emptyTrash, setAside } from "./_trash.js";

describe("the benchmark's trash", () => {
  let dir: string;
  const saved = process.env.BENCH_DIR;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "distributor-trash-test-"));
    process.env.BENCH_DIR = dir;
  });
  after(() => {
    if (saved === undefined) delete process.env.BENCH_DIR;
    else process.env.BENCH_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  test("sets outputs aside, then deletes them all at once", () => {
    const output = path.join(dir, "work-1", "dist-out");
    mkdirSync(path.join(output, "a"), { recursive: true });
    writeFileSync(path.join(output, "a", "f.txt"), "x");
    setAside(output);
    setAside(path.join(dir, "work-1", "never-existed"));
    assert.equal(existsSync(output), false, "moved out of the way");
    const trash = path.join(dir, "distributor-bench-trash");
    assert.equal(readdirSync(trash).length, 2, "the output and the marker");
    assert.equal(emptyTrash(), true);
    assert.equal(existsSync(trash), false);
    assert.equal(emptyTrash(), false, "nothing left");
  });

  test("leaves a folder of the same name alone when the benchmark did not make it", () => {
    const mine = path.join(dir, "distributor-bench-trash");
    mkdirSync(mine, { recursive: true });
    writeFileSync(path.join(mine, "keep.txt"), "a user's file");
    assert.equal(emptyTrash(), false);
    assert.ok(existsSync(path.join(mine, "keep.txt")));
  });
});
