/**
 * The checks the benchmark runs on each floor sample's report (bench/_kit.ts):
 * a floor that did not cover every file is noted, not timed as a floor.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, test } from "node:test";
import { writeTestBundle } from "../src/bundle/testing.js";
import type { Contender } from "./_kit.js";
import { publishFloorContender, rerunFloorContender } from "./_kit.js";

const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** The note `contender`'s check gives a sample that printed `stdout`. */
function noteFor(contender: Contender, stdout: string): string | null | undefined {
  return contender.check?.({
    seconds: 1,
    startedAtMs: 0,
    peakRssMb: null,
    cpuSeconds: null,
    stdout,
  });
}

test("a rerun floor sample that did not find every file but the Markdown the same is noted", async () => {
  const bundle = await writeTestBundle({ "a.txt": "a", "b.md": "# b\n" });
  made.push(bundle);
  const floor = rerunFloorContender(() => bundle, "/unused");
  // One file is Markdown, whose output the floor does not check.
  assert.equal(noteFor(floor, '{"files":2,"same":1,"rejected":0}'), null);
  assert.match(noteFor(floor, '{"files":2,"same":0,"rejected":0}') ?? "", /found 0 of 1 files/);
  assert.match(noteFor(floor, '{"files":2,"same":1,"rejected":1}') ?? "", /rejected 1/);
  assert.equal(noteFor(floor, ""), "the floor printed no report");
});

test("a publish floor sample that did not write every output is noted", async () => {
  const bundle = await writeTestBundle({ "a.txt": "a", "b.md": "# b\n" });
  made.push(bundle);
  const floor = publishFloorContender(() => bundle, "/unused");
  assert.equal(noteFor(floor, '{"outputs":2,"bad":0}'), null);
  assert.match(noteFor(floor, '{"outputs":1,"bad":0}') ?? "", /wrote 1 of 2 outputs/);
  assert.match(noteFor(floor, '{"outputs":0,"bad":1}') ?? "", /1 bad/);
});
