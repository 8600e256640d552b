import assert from "node:assert/strict";
import { test } from "node:test";
import { calmPairs, type Pair, pairedSummary, summaryLine } from "./_paired.js";

const pair = (
  a: number,
  b: number,
  cpuA: number | null = null,
  cpuB: number | null = null,
): Pair => ({
  a: { seconds: a, cpuSeconds: cpuA },
  b: { seconds: b, cpuSeconds: cpuB },
});

test("the verdict is the median of the per-pair differences, not the difference of medians", () => {
  // The medians are equal (2.05 s each); in every pair but the slow first
  // one, A is faster by 0.1 s.
  const summary = pairedSummary([pair(5, 1), pair(2.0, 2.1), pair(2.1, 2.2), pair(1.9, 2.0)]);
  assert.equal(summary.medianA, 2.05);
  assert.equal(summary.medianB, 2.05);
  assert.ok(Math.abs(summary.medianDifference - 0.1) < 1e-9, String(summary.medianDifference));
  assert.equal(summary.aFaster, 3);
  assert.equal(summary.bFaster, 1);
  assert.equal(summary.cpu, null, "no CPU times, no CPU summary");
});

test("ties count for neither side, and CPU is summarised only when every pair has it", () => {
  const tied = pairedSummary([pair(1, 1, 2, 3), pair(1, 2, 2, 1), pair(3, 1, 1, 1)]);
  assert.equal(tied.aFaster, 1);
  assert.equal(tied.bFaster, 1);
  assert.deepEqual(tied.cpu, { medianA: 2, medianB: 1, medianDifference: 0, aLess: 1 });
  assert.equal(pairedSummary([pair(1, 2, 1, 1), pair(1, 2, null, 1)]).cpu, null);
  assert.throws(() => pairedSummary([]), /no pairs/);
});

test("the summary line names the faster side and each side's counts", () => {
  const line = summaryLine(pairedSummary([pair(1.7, 1.9, 2.9, 3.2), pair(1.8, 1.9, 3.0, 3.3)]));
  assert.match(line, /^A 1\.750 s, B 1\.900 s; A faster by 0\.150 s \(median of 2 pairs\)/);
  assert.match(line, /A faster in 2 of 2, B in 0/);
  assert.match(line, /CPU A 2\.950 s, B 3\.250 s, B − A \+0\.300 s \(A used less in 2 of 2\)/);
  assert.match(summaryLine(pairedSummary([pair(2, 1)])), /B faster by 1\.000 s/);
  assert.match(summaryLine(pairedSummary([pair(1, 1)])), /no median difference over 1 pairs/);
});

test("calmPairs keeps the pairs in which neither side lost 5 % of its time to the host", () => {
  const side = (seconds: number, steal: number | null) => ({ seconds, cpuSeconds: null, steal });
  const calm = { a: side(6.2, 0.01), b: side(6.6, 0.1) };
  const stolenA = { a: side(8.1, 1.6), b: side(6.0, 0.05) };
  const stolenB = { a: side(6.3, 0.1), b: side(7.0, 0.4) };
  const unknown = { a: side(6.4, null), b: side(6.5, null) };
  assert.deepEqual(calmPairs([calm, stolenA, stolenB, unknown]), [calm, unknown]);
});
