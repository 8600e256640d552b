import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { measure, parseGnuTime, processCpuSeconds } from "./_measure.js";
import { markdownTable, type Row, spreadNote } from "./_report.js";

test("spreadNote flags samples 1.5x or more apart, and only those", () => {
  assert.equal(spreadNote([4.7, 42, 11.7], "s"), "4.70–42.00 s: the median may not be typical");
  assert.equal(spreadNote([1.0, 1.49], "s"), null);
  assert.equal(spreadNote([1.0, 1.5], "MB/s"), "1.00–1.50 MB/s: the median may not be typical");
  assert.equal(spreadNote([3], "s"), null, "one sample has no spread");
  assert.equal(spreadNote([], "s"), null);
});

test("GNU time's line gives peak RSS and user plus system CPU; anything else gives nulls", () => {
  assert.deepEqual(parseGnuTime("81920 1.52 0.40\n"), { peakRssMb: 80, cpuSeconds: 1.92 });
  assert.deepEqual(parseGnuTime("Command terminated by signal 9"), {
    peakRssMb: null,
    cpuSeconds: null,
  });
  assert.deepEqual(parseGnuTime(""), { peakRssMb: null, cpuSeconds: null });
});

test("a measured command's CPU time comes with it when GNU time is installed", async () => {
  const sample = await measure({
    cmd: "sh",
    args: ["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"],
  });
  if (!existsSync("/usr/bin/time")) {
    assert.equal(sample.cpuSeconds, null);
    return;
  }
  assert.ok(sample.cpuSeconds !== null && sample.cpuSeconds > 0, `cpu ${sample.cpuSeconds}`);
  // One busy shell: no more CPU than wall time, give or take the clock's ticks.
  assert.ok(sample.cpuSeconds <= sample.seconds + 0.05, `${sample.cpuSeconds} > ${sample.seconds}`);
});

test("processCpuSeconds sums the CPU of running processes by name, null when none", () => {
  const own = processCpuSeconds(/^node$/);
  assert.ok(own !== null && own > 0, `node processes used ${own} s`);
  assert.equal(processCpuSeconds(/^no-such-process-name$/), null);
});

test("the table shows each side's CPU seconds, a dash when unknown", () => {
  const row: Row = {
    case: "1. M fresh publish",
    anchor: "floor",
    unit: "s",
    distributor: 2,
    anchorMedian: 2.5,
    ratio: 0.8,
    target: "≤ 1.25×",
    met: true,
    peakRssMb: 160,
    cpuSeconds: { distributor: 3.5, anchor: null },
    samples: {
      distributor: [2],
      anchor: [2.5],
      distributorCpu: [3.5],
      anchorCpu: [],
      distributorServerCpu: [],
      anchorServerCpu: [],
    },
    notes: ["server CPU 1.90 s / 3.10 s"],
  };
  const table = markdownTable([row]);
  assert.match(table, /\| CPU s \(distributor \/ anchor\) \|/);
  assert.match(table, /\| 160 \| 3\.50 \/ — \| server CPU 1\.90 s \/ 3\.10 s \|$/);
});
