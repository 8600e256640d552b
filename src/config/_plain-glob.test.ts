import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import picomatch from "picomatch";
import { seededBelow } from "../random.fixtures.js";
import { plainGlobMatcher, wildcardLoops } from "./_plain-glob.js";
import { loadConfig } from "./load.js";

/** picomatch's answer, as the config asked it before the plain matcher. */
function picomatchSays(glob: string, path: string): boolean {
  return picomatch.makeRe(glob, { dot: true, debug: true }).test(path);
}

describe("plainGlobMatcher", () => {
  test("answers as picomatch does on clean paths: fixed cases", () => {
    const cases: [string, string][] = [
      ["**/a", "a"],
      ["**/a", "x/y/a"],
      ["**/a/*", "x/a/b"],
      ["**/a/*", "x/a"],
      ["a**", "ab/c"],
      ["a**", "abc"],
      ["a/**b", "a/x/b"],
      ["*", "a/b"],
      ["*", ".hidden"],
      ["?", ".a"],
      ["a/***", "a/b/c"],
      ["a/***", "a/b"],
      ["**/*.md", "d/.x.md"],
      ["*-*-*.csv", "a-b-c.csv"],
      ["*-*-*.csv", "a-b.csv"],
      ["**x", "a/x"],
      ["é*?", "éclair"],
    ];
    for (const [glob, path] of cases) {
      const plain = plainGlobMatcher(glob);
      assert.ok(plain, glob);
      assert.equal(plain(path), picomatchSays(glob, path), `${glob} on ${path}`);
    }
  });

  test("answers as picomatch does on clean paths: 30,000 generated pairs", () => {
    const next = seededBelow(20261204);
    const pick = <T>(items: readonly T[]): T => items[next(items.length)] as T;
    const segment = (parts: readonly string[], most: number) =>
      Array.from({ length: 1 + next(most) }, () => pick(parts)).join("");
    let matched = 0;
    for (let i = 0; i < 30_000; i++) {
      const depth = 1 + next(4);
      const plainPart = Array.from({ length: depth }, () =>
        segment(["a", "b", ".", "-", "*", "?", "ab", "**"], 4),
      ).join("/");
      const glob = next(3) === 0 ? `**/${plainPart}` : plainPart;
      // Half the paths are spelled from the glob, so that many match.
      const path =
        next(2) === 0
          ? Array.from({ length: 1 + next(4) }, () =>
              segment(["a", "b", ".", "-", "ab", "ba"], 4),
            ).join("/")
          : glob
              .replace(/^\*\*\//, () => ["", "x/", "x/y/"][next(3)] as string)
              .replace(/\*+/g, () => pick(["", "a", "-b", "a.b"]))
              .replace(/\?/g, () => pick(["a", ".", "-"]));
      // Clean manifest paths only: no empty, "." or ".." segment.
      if (path.split("/").some((s) => s === "" || s === "." || s === "..")) continue;
      const plain = plainGlobMatcher(glob);
      if (plain === null) continue;
      const expected = picomatchSays(glob, path);
      assert.equal(plain(path), expected, `${glob} on ${path}`);
      if (expected) matched++;
    }
    assert.ok(matched > 5000, `the pairs include matches, not only misses (${matched})`);
  });

  test("leaves every glob with more than literals, * and ? to picomatch", () => {
    for (const glob of [
      "{a,b}/*",
      "[ab]*",
      "!x/*",
      "+(a|b)",
      "a\\*",
      "./a/*",
      "a/",
      "a//b",
      "",
      "a/**",
      "*/**",
      "a/**/b",
      "**",
      "**/a/**",
    ]) {
      assert.equal(plainGlobMatcher(glob), null, glob);
    }
  });

  test("counts the regex's nested lazy loops", () => {
    assert.equal(wildcardLoops("**/*.md"), 2);
    assert.equal(wildcardLoops("a**b/c"), 1);
    assert.equal(wildcardLoops("*-*-*.csv"), 3);
    assert.equal(wildcardLoops("docs/**/x/**/*"), 3);
    assert.equal(wildcardLoops("**/*-*-*.csv"), 4);
  });
});

describe("a config's globs on a file name chosen to make a regex backtrack", () => {
  // picomatch's regex took 17 s on this name with six `*`, minutes with seven.
  const name = `${"a-".repeat(100)}x.txt`;
  for (const glob of ["*-*-*-*-*-*.csv", "*-*-*-*-*-*-*.csv", "**/*-*-*-*-*.csv"]) {
    test(`${glob}: decided at once`, { timeout: 10_000 }, async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-glob-"));
      try {
        const yaml = `pipelines:\n  p:\n    destinations: [d]\n    exclude: ["${glob}"]\ndestinations:\n  d:\n    storage: { root: ./site }\n`;
        await writeFile(path.join(dir, "distributor.yaml"), yaml);
        const pipeline = (await loadConfig({ cwd: dir, env: {} })).pipelines.get("p");
        assert.ok(pipeline);
        const started = performance.now();
        assert.equal(pipeline.selects(name), true, "not excluded: the name does not end in .csv");
        assert.equal(pipeline.selects(`${name.slice(0, -4)}.csv`), false, "excluded");
        assert.ok(performance.now() - started < 1000, "well under a second");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
