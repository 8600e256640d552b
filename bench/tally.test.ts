import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type BenchResults, tally, tallyTable } from "./tally.js";

type ResultRow = BenchResults["rows"][number];

const hashing = (ratio: number, floorRatio: number): ResultRow => ({
  case: "5b. C 100k outputs unchanged rerun",
  anchor: "hashing (sha256sum)",
  ratio,
  target: "≤ 1.3×",
  met: ratio <= 1.3,
  floorRatio,
  floorMet: floorRatio <= 1.3,
});
const vsFloor = (ratio: number): ResultRow => ({
  case: "5b. C 100k outputs unchanged rerun",
  anchor: "least work on Node.js (bench/rerun-floor.ts)",
  ratio,
  target: "context",
  met: null,
});
const markdown = (ratio: number | null): ResultRow => ({
  case: "7. markdown_to_html throughput (M's 1,000 .md)",
  anchor: "bare markdown-it",
  ratio,
  target: "≥ 0.8×",
  met: ratio === null ? null : ratio >= 0.8,
});
const run = (...rows: ResultRow[]): BenchResults => ({ machine: "2 CPUs (test)", rows });

describe("tally", () => {
  test("counts each row's runs and verdicts, with the ranges of every ratio", () => {
    const rows = tally([
      run(hashing(1.46, 1.14), vsFloor(1.28), markdown(1.13)),
      run(hashing(1.27, 1.35), vsFloor(1.2), markdown(0.79)),
      run(hashing(1.49, 1.21), vsFloor(1.23), markdown(1.37)),
    ]);
    assert.deepEqual(rows, [
      {
        row: "5b vs hashing (sha256sum)",
        target: "≤ 1.3×",
        runs: 3,
        met: 1,
        ratio: { min: 1.27, max: 1.49 },
        floor: { min: 1.14, max: 1.35, runs: 3, met: 2 },
        vsFloor: { min: 1.2, max: 1.28 },
        cpuBound: null,
      },
      {
        row: "7 vs bare markdown-it",
        target: "≥ 0.8×",
        runs: 3,
        met: 2,
        ratio: { min: 0.79, max: 1.37 },
        floor: null,
        vsFloor: null,
        cpuBound: null,
      },
    ]);
  });

  test("a run that did not measure a row neither meets nor misses it", () => {
    const rows = tally([
      run(hashing(1.46, 1.14), vsFloor(1.28), markdown(null)),
      run(markdown(1.2)),
    ]);
    assert.deepEqual(
      rows.map((row) => [row.row, row.runs, row.met]),
      [
        ["5b vs hashing (sha256sum)", 1, 0],
        ["7 vs bare markdown-it", 1, 1],
      ],
    );
  });

  test("the table gives one line per row, a single value once", () => {
    const table = tallyTable(
      tally([run(hashing(1.46, 1.14), vsFloor(1.28)), run(hashing(1.46, 1.21), vsFloor(1.2))]),
    );
    assert.equal(
      table.split("\n")[2],
      "| 5b vs hashing (sha256sum) | ≤ 1.3× | 0 of 2 | 1.46× | 1.14–1.21×, within the target in 2 of 2 | 1.20–1.28× | — |",
    );
  });
});

describe("tally: distributor's CPU on every core against the target's time", () => {
  const measured = (cpu: number[], serverCpu: number[] = []): ResultRow => ({
    ...hashing(1.5, 1.2),
    unit: "s",
    anchorMedian: 1.5,
    samples: { distributorCpu: cpu, distributorServerCpu: serverCpu },
  });

  test("counts the runs whose CPU fitted, with the range of CPU / cores over the target's time", () => {
    // Target: 1.3 × 1.5 s = 1.95 s. On 2 cores 3.51 s of CPU fits (0.9×), 4.29 s does not (1.1×).
    const [row] = tally([run(measured([3.51])), run(measured([4.29]))]);
    assert.ok(row?.cpuBound);
    assert.equal(row.cpuBound.runs, 2);
    assert.equal(row.cpuBound.within, 1);
    assert.ok(Math.abs(row.cpuBound.min - 0.9) < 1e-9 && Math.abs(row.cpuBound.max - 1.1) < 1e-9);
    assert.match(
      tallyTable([row]).split("\n")[2] ?? "",
      /\| 0\.90–1\.10×, within it in 1 of 2 \|$/,
    );
  });

  test("counts a server's CPU in, and takes the cores from the machine line", () => {
    const fits = tally([run(measured([1.0], [2.5]))])[0]?.cpuBound;
    assert.equal(fits?.within, 1, "3.5 s on 2 cores: 1.75 s, within 1.95 s");
    const server = tally([run(measured([1.0], [3.0]))])[0]?.cpuBound;
    assert.equal(server?.within, 0, "4.0 s on 2 cores: 2.0 s, past 1.95 s");
    const four = tally([{ machine: "4 CPUs (test)", rows: [measured([1.0], [3.0])] }])[0]?.cpuBound;
    assert.equal(four?.within, 1, "the same on 4 cores: 1.0 s");
  });
});

describe("tally.js as a program", () => {
  const script = fileURLToPath(new URL("./tally.js", import.meta.url));
  const tally = (...files: string[]) =>
    spawnSync(process.execPath, [script, ...files], { encoding: "utf8" });

  test("prints the runs' machine and the table; a file that is not results is refused", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "tally-"));
    try {
      const good = path.join(dir, "bench.json");
      writeFileSync(good, JSON.stringify(run(hashing(1.46, 1.14), vsFloor(1.28))));
      const printed = tally(good);
      assert.equal(printed.status, 0, printed.stderr);
      assert.match(printed.stdout, /^1 run\(s\) on 2 CPUs \(test\)\n/);
      assert.match(printed.stdout, /\| 5b vs hashing \(sha256sum\) \| ≤ 1\.3× \| 0 of 1 \|/);
      const other = path.join(dir, "other.json");
      writeFileSync(other, "{}");
      const refused = tally(good, other);
      assert.equal(refused.status, 2);
      assert.equal(refused.stdout, "");
      assert.match(refused.stderr, /other\.json: no rows: not a results file of npm run bench/);
      assert.equal(tally().status, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
