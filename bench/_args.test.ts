import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { BenchUsageError, parseBenchArgs } from "./_args.js";
import { allCases, CASE_IDS } from "./_cases.js";

const IDS = ["1", "2", "3", "4", "5a", "5b", "6", "7"];
const parse = (...argv: string[]) => parseBenchArgs(argv, IDS, 42);

describe("parseBenchArgs", () => {
  test("no options: every case, each case's own runs, the default seed", () => {
    assert.deepEqual(parse(), { cases: null, runs: null, seed: 42 });
  });

  test("reads cases, runs and seed; a case's number names its lettered cases", () => {
    assert.deepEqual(parse("--cases", "1, 5,6", "--runs", "4", "--seed", "7"), {
      cases: ["1", "5", "6"],
      runs: 4,
      seed: 7,
    });
    assert.deepEqual(parse("--cases=5b"), { cases: ["5b"], runs: null, seed: 42 });
  });

  test("--help and -h ask for the usage, whatever else is given", () => {
    assert.equal(parse("--help"), "help");
    assert.equal(parse("--cases", "2", "-h"), "help");
  });

  test("refuses what would otherwise start a run with defaults", () => {
    const refused = (argv: string[], message: RegExp) =>
      assert.throws(
        () => parse(...argv),
        (error: unknown) => {
          assert.ok(error instanceof BenchUsageError);
          assert.match(error.message, message);
          return true;
        },
      );
    refused(["--case", "5b"], /Unknown option '--case'/);
    refused(["5b"], /positional argument/);
    refused(["--cases", "8"], /--cases: no case '8'; the cases are 1, 2, 3, 4, 5a, 5b, 6, 7/);
    refused(["--cases", "5c,9"], /no case '5c', '9'/);
    refused(["--cases", ""], /--cases: no case ''/);
    refused(["--runs", "five"], /--runs must be a whole number of at least 1, not 'five'/);
    refused(["--runs", "0"], /--runs must be a whole number of at least 1/);
    refused(["--runs", "2.5"], /--runs must be/);
    refused(["--seed=-3"], /--seed must be a whole number of at least 0/);
    refused(["--runs"], /argument missing/);
  });
});

test("CASE_IDS are the ids of allCases, in order", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-cases-"));
  const before = process.env.BENCH_DIR;
  process.env.BENCH_DIR = dir; // making the cases creates their work folders
  try {
    assert.deepEqual(
      allCases({ seed: 1 }).map((bench) => bench.id),
      CASE_IDS,
    );
  } finally {
    if (before === undefined) delete process.env.BENCH_DIR;
    else process.env.BENCH_DIR = before;
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("run.js as a program", () => {
  const script = fileURLToPath(new URL("./run.js", import.meta.url));

  test("--help prints the usage; a bad line exits 2 before any work", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "bench-args-"));
    try {
      const bench = (...argv: string[]) =>
        spawnSync(process.execPath, [script, ...argv], {
          encoding: "utf8",
          env: { ...process.env, BENCH_DIR: dir },
          timeout: 30_000,
        });
      const help = bench("--help");
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, /^usage: npm run bench/);
      assert.equal(help.stderr, "");
      const typo = bench("--case", "5b");
      assert.equal(typo.status, 2);
      assert.equal(typo.stdout, "");
      assert.match(typo.stderr, /^Unknown option '--case'.*\nusage: npm run bench/s);
      assert.doesNotMatch(typo.stderr, /^\s+at /m, "no stack trace");
      assert.deepEqual(readdirSync(dir), [], "nothing generated or written");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
