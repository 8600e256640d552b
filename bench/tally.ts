/**
 * Where each row with a target stood over several benchmark runs, from their
 * results JSON (the files `npm run bench` writes to `$BENCH_DIR/results/`):
 *
 *   node dist/bench/tally.js $BENCH_DIR/results/bench-2026-12-02T*.json
 *
 * One line per row: in how many runs it met its target, the range of its
 * ratios, how the floor program fared against the same anchor (its range,
 * and in how many runs it was itself within the target on the medians), and
 * how far distributor was from that floor program, and whether its CPU,
 * spread over the machine's cores, fitted within the target's time (CpuBound
 * in _report.ts: a miss where it did is waiting, not work). "At a glance" in
 * docs/performance.md counts rows per machine this way; the counts used to
 * be made by hand, and once came out wrong.
 *
 * A run counts only for the rows it measured (a case left out by `--cases`,
 * or a row whose anchor was not installed, is not a miss). Runs are taken as
 * given: pass the files of one machine to get that machine's counts.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { cpuBound, FLOOR_LABEL, type Row, ratioMaxOf } from "./_report.js";

/** What a results file holds; only the fields read here. */
export interface BenchResults {
  machine: string;
  rows: readonly (Pick<
    Row,
    "case" | "anchor" | "ratio" | "target" | "met" | "floorRatio" | "floorMet"
  > &
    Partial<Pick<Row, "unit" | "anchorMedian">> & {
      samples?: Pick<Row["samples"], "distributorCpu" | "distributorServerCpu">;
    })[];
}

export interface TalliedRow {
  /** The case's number and anchor, e.g. `5b vs hashing (sha256sum)`. */
  row: string;
  target: string;
  /** Runs that measured the row, and the runs among them that met the target. */
  runs: number;
  met: number;
  ratio: Range;
  /** The floor program against the same anchor, when its case has one. */
  floor: (Range & { met: number; runs: number }) | null;
  /** distributor / the floor program (the case's context row), when it has one. */
  vsFloor: Range | null;
  /**
   * CpuBound over the target's time, in the runs that measured CPU (a value
   * ≤ 1 means distributor's CPU fitted on the machine's cores within the
   * target: its misses there were waiting, not work); null without any.
   */
  cpuBound: (Range & { within: number; runs: number }) | null;
}

export interface Range {
  min: number;
  max: number;
}

function caseId(row: { case: string }): string {
  return row.case.split(".")[0] ?? row.case;
}

/** The machine's core count, from the results' "2 CPUs (AMD EPYC), …" line. */
function coresOf(machine: string): number {
  return Number(/^(\d+) CPUs/.exec(machine)?.[1] ?? Number.NaN);
}

function widen(range: Range | null, value: number): Range {
  return range
    ? { min: Math.min(range.min, value), max: Math.max(range.max, value) }
    : { min: value, max: value };
}

export function tally(results: readonly BenchResults[]): TalliedRow[] {
  const rows = new Map<string, TalliedRow>();
  for (const result of results) {
    const cores = coresOf(result.machine);
    const vsFloor = new Map<string, number>();
    for (const row of result.rows) {
      // The floor programs' context rows: never a target.
      if (row.anchor.startsWith(FLOOR_LABEL) && row.ratio !== null)
        vsFloor.set(caseId(row), row.ratio);
    }
    for (const row of result.rows) {
      // Context rows have no target; a row that could not run has no verdict.
      if (row.met === null || row.ratio === null) continue;
      const key = `${caseId(row)} vs ${row.anchor}`;
      const entry: TalliedRow = rows.get(key) ?? {
        row: key,
        target: row.target,
        runs: 0,
        met: 0,
        ratio: { min: row.ratio, max: row.ratio },
        floor: null,
        vsFloor: null,
        cpuBound: null,
      };
      entry.runs++;
      if (row.met) entry.met++;
      entry.ratio = widen(entry.ratio, row.ratio);
      if (row.floorRatio !== undefined) {
        const floor = widen(entry.floor, row.floorRatio);
        entry.floor = {
          ...floor,
          runs: (entry.floor?.runs ?? 0) + 1,
          met: (entry.floor?.met ?? 0) + (row.floorMet ? 1 : 0),
        };
      }
      const bound = row.samples
        ? cpuBound(
            {
              unit: row.unit ?? "s",
              anchorMedian: row.anchorMedian ?? null,
              cpu: row.samples.distributorCpu,
              serverCpu: row.samples.distributorServerCpu,
            },
            ratioMaxOf(row.target),
            cores,
          )
        : null;
      if (bound) {
        const share = widen(entry.cpuBound, bound.seconds / bound.targetSeconds);
        entry.cpuBound = {
          ...share,
          runs: (entry.cpuBound?.runs ?? 0) + 1,
          within: (entry.cpuBound?.within ?? 0) + (bound.fits ? 1 : 0),
        };
      }
      const ownFloor = vsFloor.get(caseId(row));
      if (ownFloor !== undefined) entry.vsFloor = widen(entry.vsFloor, ownFloor);
      rows.set(key, entry);
    }
  }
  return [...rows.values()];
}

function span(range: Range): string {
  const lo = range.min.toFixed(2);
  const hi = range.max.toFixed(2);
  return lo === hi ? `${lo}×` : `${lo}–${hi}×`;
}

export function tallyTable(rows: readonly TalliedRow[]): string {
  const lines = [
    "| Row | target | met | ratio | floor program on the same anchor | distributor / floor program | distributor's CPU on every core / the target's time |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const row of rows) {
    const floor = row.floor
      ? `${span(row.floor)}, within the target in ${row.floor.met} of ${row.floor.runs}`
      : "—";
    const vsFloor = row.vsFloor ? span(row.vsFloor) : "—";
    const bound = row.cpuBound
      ? `${span(row.cpuBound)}, within it in ${row.cpuBound.within} of ${row.cpuBound.runs}`
      : "—";
    lines.push(
      `| ${row.row} | ${row.target} | ${row.met} of ${row.runs} | ${span(row.ratio)} | ${floor} | ${vsFloor} | ${bound} |`,
    );
  }
  return lines.join("\n");
}

function main(): void {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write("usage: node dist/bench/tally.js <results .json>...\n");
    process.exitCode = 2;
    return;
  }
  const results: BenchResults[] = [];
  for (const file of files) {
    try {
      const parsed = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
      if (!Array.isArray(parsed.rows))
        throw new Error("no rows: not a results file of npm run bench");
      results.push(parsed);
    } catch (error) {
      process.stderr.write(`${file}: ${(error as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
  }
  const machines = new Set(results.map((result) => result.machine));
  process.stdout.write(`${results.length} run(s) on ${[...machines].join("; ")}\n\n`);
  process.stdout.write(`${tallyTable(tally(results))}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main();
