import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import {
  measure,
  parseGnuTime,
  parseProcStat,
  parseStealTicks,
  processCpuSeconds,
  stealMeter,
} from "./_measure.js";

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

test("a /proc stat line gives its name and user plus system ticks, whatever the name holds", () => {
  // Fields after the name: state ppid pgrp session tty tpgid flags minflt
  // cminflt majflt cmajflt utime stime cutime cstime ...
  const line = "4242 (we ird) name) S 1 4242 4242 0 -1 4194304 900 0 7 0 1234 567 11 22 20 0";
  assert.deepEqual(parseProcStat(line), { comm: "we ird) name", cpuTicks: 1801 });
  assert.equal(parseProcStat("garbage"), null);
});

test("processCpuSeconds reads this process's own CPU from /proc, and null for no process", () => {
  const own = parseProcStat(readFileSync("/proc/self/stat", "utf8"));
  assert.ok(own !== null);
  const seconds = processCpuSeconds(
    new RegExp(`^${own.comm.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`),
  );
  // At least what this process itself used (processes of the same name add to it).
  const used = process.cpuUsage();
  assert.ok(seconds !== null && seconds >= (used.user + used.system) / 1e6 - 0.05, `${seconds} s`);
  assert.equal(processCpuSeconds(/^no-such-process-name$/), null);
});

test("steal is the eighth value of /proc/stat's all-CPU line; anything else gives null", () => {
  const stat = [
    "cpu  99794 0 41385 94386 8485 0 1518 284 0 0",
    "cpu0 49000 0 20000 47000 4000 0 700 150 0 0",
    "intr 1 2 3",
  ].join("\n");
  assert.equal(parseStealTicks(stat), 284);
  assert.equal(parseStealTicks(stat.split("\n").slice(1).join("\n")), null, "no all-CPU line");
  assert.equal(parseStealTicks("cpu  1 2 3 4 5 6 7\n"), null, "a kernel without steal");
  assert.equal(parseStealTicks(""), null);
});

test("a steal meter gives what the host took since it was made, and null when it cannot tell", () => {
  const readings = [10.25, 10.75, 12];
  const stolen = stealMeter(() => readings.shift() ?? null);
  assert.equal(stolen(), 0.5);
  assert.equal(stolen(), 1.75);
  assert.equal(stolen(), null, "no reading now");
  const late: (number | null)[] = [null, 5];
  assert.equal(stealMeter(() => late.shift() ?? null)(), null, "no reading at the start");
  const live = stealMeter();
  const first = live();
  assert.ok(first !== null && first >= 0, `Linux has /proc/stat: ${first}`);
});
