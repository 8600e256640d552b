import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { setImmediate } from "node:timers/promises";
import { EventLoopTurns, newWorkClaims } from "../threads.js";
import type { FileToCheck } from "./_file-checks.js";
import { packFiles } from "./_packed-files.js";
import {
  checkFiles,
  checkHere,
  type SharedShard,
  shardProblems,
  shardsOf,
} from "./_parallel-checks.js";
import { runJob as verifyJob } from "./_verify-job.js";
import { writeTestBundle } from "./testing.js";
import { openBundle } from "./verify.js";

const MB = 1024 * 1024;
const listed = (name: string, size: number): FileToCheck => ({
  path: name,
  size,
  sha256: `sha256:${"0".repeat(64)}`,
});

describe("shardsOf", () => {
  test("every file exactly once, with its index in the list, split by cost", () => {
    const files = [
      listed("big-1", 100 * MB),
      listed("big-2", 80 * MB),
      ...Array.from({ length: 40 }, (_, i) => listed(`small-${i}`, MB)),
    ];
    const shards = shardsOf(files, 2);
    assert.equal(shards.length, 2);
    const indexes = shards.flatMap((shard) => shard.indexes).sort((a, b) => a - b);
    assert.deepEqual(
      indexes,
      files.map((_, i) => i),
    );
    for (const shard of shards) {
      shard.indexes.forEach((index, i) => {
        assert.equal(shard.files[i]?.path, files[index]?.path);
      });
    }
    // The 1 MB files even out the two large ones: 100 + 10 against 80 + 30.
    assert.deepEqual(
      shards.map((shard) => shard.files.reduce((sum, file) => sum + file.size, 0) / MB),
      [110, 110],
    );
  });

  test("large files are placed largest first, wherever they come in the list, small ones at the back", () => {
    const files = [
      ...Array.from({ length: 4 }, (_, i) => listed(`small-${i}`, 1000)),
      listed("ten-a", 10 * MB),
      listed("ten-b", 10 * MB),
      listed("twenty", 20 * MB),
    ];
    const shards = shardsOf(files, 2);
    const largeBytes = (files: FileToCheck[]) =>
      files.filter((file) => file.size >= MB).reduce((sum, file) => sum + file.size, 0);
    // In list order the twenty would join a ten: 30 MB against 10 MB.
    assert.deepEqual(
      shards.map((shard) => largeBytes(shard.files)),
      [20 * MB, 20 * MB],
    );
    for (const shard of shards) {
      const firstSmall = shard.files.findIndex((file) => file.size < MB);
      assert.ok(
        shard.files.slice(firstSmall).every((file) => file.size < MB),
        "the back, where this thread takes files, holds the small ones",
      );
    }
  });

  test("fewer files than helpers: no empty shard", () => {
    const shards = shardsOf([listed("a", 1), listed("b", 2)], 4);
    assert.deepEqual(
      shards.map((shard) => shard.files.map((file) => file.path)),
      [["a"], ["b"]],
    );
  });
});

describe("checkHere", () => {
  test("checks in order and lets the event loop run between files", async () => {
    const contents: Record<string, string> = {};
    for (let i = 0; i < 20; i++) contents[`f-${i}.txt`] = `file ${i}`;
    const dir = await writeTestBundle(contents);
    const manifest = JSON.parse(await readFile(path.join(dir, "manifest.json"), "utf8")) as {
      files: FileToCheck[];
    };
    const files = manifest.files.map((file, i) =>
      i === 3 ? { ...file, sha256: `sha256:${"0".repeat(64)}` } : file,
    );
    let turns = 0;
    let counting = true;
    void (async () => {
      while (counting) {
        await setImmediate();
        turns++;
      }
    })();
    const problems = await checkHere(dir, files, null, new EventLoopTurns(0));
    counting = false;
    assert.equal(problems.length, 20);
    assert.match(problems[3] ?? "", /sha256 mismatch/);
    assert.deepEqual(
      problems.filter((problem) => problem !== null),
      [problems[3]],
    );
    assert.ok(turns >= 10, `the event loop ran ${turns} times during the checks`);
  });
});

describe("shardProblems", () => {
  async function listedBundle(count: number): Promise<{ dir: string; files: FileToCheck[] }> {
    const contents: Record<string, string> = {};
    for (let i = 0; i < count; i++) contents[`f-${i}.txt`] = `file ${i}`;
    const dir = await writeTestBundle(contents);
    const manifest = JSON.parse(await readFile(path.join(dir, "manifest.json"), "utf8")) as {
      files: FileToCheck[];
    };
    // f-1 is bad: a wrong digest.
    const files = manifest.files.map((file) =>
      file.path === "f-1.txt" ? { ...file, sha256: `sha256:${"0".repeat(64)}` } : file,
    );
    return { dir, files };
  }

  test("the verify job answers for its packed shard's files in order, and never past its end", async () => {
    const { dir, files } = await listedBundle(3);
    const expected = await checkHere(dir, files);
    assert.equal(expected.filter((problem) => problem === null).length, 2, "one bad file");
    const job = (claims: number) =>
      verifyJob({ root: dir, files: packFiles(files), claims: newWorkClaims(claims), store: null })
        .value;
    assert.deepEqual(job(3), expected);
    // Claims beyond the shard (a caller's bug) end the answer there.
    assert.deepEqual(job(5), expected);
    assert.throws(() => verifyJob({ root: dir, files, claims: newWorkClaims(3), store: null }));
  });

  test("the helper's front and this thread's back make the shard, in order", async () => {
    const { dir, files } = await listedBundle(6);
    const shard: SharedShard = {
      files,
      claims: newWorkClaims(files.length),
      answer: Promise.resolve(["front-0", "front-1", "front-2", "front-3"]),
      taken: new Map([
        [5, "back-5"],
        [4, null],
      ]),
    };
    assert.deepEqual(await shardProblems(dir, shard), [
      "front-0",
      "front-1",
      "front-2",
      "front-3",
      null,
      "back-5",
    ]);
  });

  test("a back that is not one run from the end gets the whole shard checked here", async () => {
    const { dir, files } = await listedBundle(6);
    const shard: SharedShard = {
      files,
      claims: newWorkClaims(files.length),
      answer: Promise.resolve([null, null, null, null]),
      // Index 4 is missing: 5 and 3 were taken, which the claims never do.
      taken: new Map([
        [5, null],
        [3, null],
      ]),
    };
    const problems = await shardProblems(dir, shard);
    assert.equal(problems.length, 6);
    assert.match(problems[1] ?? "", /sha256 mismatch/, "the helper's 'good' for f-1 not trusted");
  });

  test("a helper that failed, or answered for too few files, has its part checked here", async () => {
    const { dir, files } = await listedBundle(6);
    for (const answer of [null, ["only one"]]) {
      const shard: SharedShard = {
        files,
        claims: newWorkClaims(files.length),
        answer: Promise.resolve(answer),
        taken: new Map([[5, null]]),
      };
      const problems = await shardProblems(dir, shard);
      assert.equal(problems.length, 6);
      assert.match(problems[1] ?? "", /sha256 mismatch/, "f-1 checked here");
      assert.deepEqual(
        problems.map((problem, i) => (i === 1 ? "bad" : problem)),
        [null, "bad", null, null, null, null],
      );
    }
  });
});

describe("checkFiles hand-offs", () => {
  test("with helpers, each runs the hand-off's job once its files are checked", async () => {
    const dir = await writeTestBundle({ "a.txt": "a", "b.txt": "b" });
    const { files } = await openBundle(dir);
    let answers: () => unknown[] = () => [];
    const job = new URL("../threads.fixtures.js", import.meta.url);
    const problems = await checkFiles(dir, files, {
      workers: 2,
      meanwhile: (handOff) => {
        answers = handOff(job, () => ({ waitMs: 10 }));
      },
    });
    assert.deepEqual(problems, [null, null]);
    const got = answers() as { threadId: number }[];
    assert.equal(got.length, 2, "one answer from each helper");
    assert.notEqual(got[0]?.threadId, got[1]?.threadId);
  });

  test("without helpers, a hand-off sends nothing and does not build its input", async () => {
    const dir = await writeTestBundle({ "a.txt": "a" });
    const files = [{ path: "a.txt", size: 1, sha256: "sha256:x" }];
    let answers: unknown[] | undefined;
    await checkFiles(dir, files, {
      workers: 0,
      meanwhile: (handOff) => {
        answers = handOff(new URL("../threads.fixtures.js", import.meta.url), () =>
          assert.fail("input built without helpers"),
        )();
      },
    });
    assert.deepEqual(answers, []);
  });
});
