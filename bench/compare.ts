/**
 * `node dist/bench/compare.js --case 5b --b-build <checkout> [--pairs 16]`:
 * alternating pairs of two builds (or two Node.js binaries, or two sets of
 * Node.js flags) on one benchmark case, the way the A/B figures of
 * docs/performance.md were taken ("Comparing two builds"). Each pair runs
 * both sides back to back, the first side switching every pair, so that the
 * machine's speed changes hit both alike; the verdict is the median of the
 * per-pair differences and how many pairs each side won.
 *
 * The case is the benchmark's own (bench/_cases.ts): its setup runs once (the
 * workload is generated if missing, a rerun's root published), and before
 * each sample its subject's preparation (a fresh root or S3 prefix, an
 * emptied render cache) and the benchmark's page-cache warming and `sync`.
 * Only distributor runs: every case but 7, whose subject is not the CLI.
 * Each side is this checkout, run by the Node.js running this script, unless
 * `--a-build` / `--b-build` (a checkout with `npm run build` done),
 * `--a-node` / `--b-node` or `--a-flags=` / `--b-flags=` (Node.js options,
 * space-separated) say otherwise. When the host took 5 % or more of a side's
 * time in some pairs and not in others, a second summary covers the calm
 * pairs alone (calmPairs).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { allCases } from "./_cases.js";
import type { BenchCase } from "./_kit.js";
import { flushDisks, measure, stealMeter, warmPageCache } from "./_measure.js";
import { calmPairs, pairedSummary, summaryLine } from "./_paired.js";
import { ROUND_STEAL_SHARE } from "./_report.js";
import { describeSide, type Side, sideCommand, sideOf } from "./_sides.js";
import { emptyTrash } from "./_trash.js";
import { DEFAULT_SEED } from "./workload.js";

/** The cases whose subject is distributor's command line (case 7 times a library loop). */
const CLI_CASES = ["1", "2", "3", "4", "5a", "5b", "6"];

/** One timed run of a side, prepared as the benchmark prepares its subject. */
async function sample(bench: BenchCase, side: Side, notes: Set<string>) {
  await bench.subject.before?.();
  for (const input of bench.inputs?.() ?? []) warmPageCache(input);
  flushDisks();
  const stolen = stealMeter();
  const result = await measure(sideCommand(side, bench.subject.command()));
  const steal = stolen();
  const note = bench.subject.check?.(result);
  if (note) notes.add(`${describeSide(side)}: ${note}`);
  return { seconds: result.seconds, cpuSeconds: result.cpuSeconds, steal };
}

/** One side's sample: its wall and CPU seconds, and what the host took meanwhile. */
type Timed = Awaited<ReturnType<typeof sample>>;

/**
 * ", steal A 0.02 s, B 0.45 s" when the host took a tenth of a second or
 * more from either side (docs/performance.md, "Reading these numbers"): that pair's
 * difference says more about the neighbours than about the builds.
 */
function stealText(a: number | null, b: number | null): string {
  if (a === null || b === null || Math.max(a, b) < 0.1) return "";
  return `, steal A ${a.toFixed(2)} s, B ${b.toFixed(2)} s`;
}

function usage(message: string): never {
  console.error(`${message}
usage: node dist/bench/compare.js --case 1|2|3|4|5a|5b|6 [--pairs N]
         [--a-build DIR] [--a-node PATH] [--a-flags="..."]
         [--b-build DIR] [--b-node PATH] [--b-flags="..."]`);
  process.exit(2);
}

function parseOptions() {
  return parseArgs({
    options: {
      case: { type: "string" },
      pairs: { type: "string", default: "16" },
      "a-build": { type: "string" },
      "a-node": { type: "string" },
      "a-flags": { type: "string" },
      "b-build": { type: "string" },
      "b-node": { type: "string" },
      "b-flags": { type: "string" },
    },
  });
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions();
  } catch (error) {
    usage(error instanceof Error ? error.message : String(error));
  }
  const { values } = parsed;
  const id = values.case;
  if (id === undefined || !CLI_CASES.includes(id))
    usage(`--case must be one of ${CLI_CASES.join(", ")}`);
  const pairs = Number(values.pairs);
  if (!Number.isSafeInteger(pairs) || pairs < 1) usage("--pairs must be a whole number above 0");
  const a = sideOf(values, "a");
  const b = sideOf(values, "b");
  for (const side of [a, b]) {
    if (!existsSync(path.join(side.build, "dist/cli/main.js"))) {
      usage(`${side.build} has no build: run \`npm run build\` there`);
    }
  }
  const bench = allCases({ seed: DEFAULT_SEED }).find((candidate) => candidate.id === id);
  if (bench === undefined) usage(`no case ${id}`);
  console.log(
    `case ${id} (${bench.title}), ${pairs} alternating pairs\n  A: ${describeSide(a)}\n  B: ${describeSide(b)}`,
  );
  const notes = new Set<string>();
  const stolen = stealMeter();
  // Interrupted (Ctrl-C, `timeout`), the comparison stops after the sample
  // under way and still tears the case down: case 6 otherwise leaves its
  // objects in the S3 server, whose in-memory store then fills up and stalls
  // the next run. A second signal ends the process at once.
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    console.error(`${signal}: stopping after this sample, then cleaning up`);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    await bench.setup();
    // A warm-up each: the first run after a build pays for cold caches.
    await sample(bench, a, notes);
    await sample(bench, b, notes);
    const results: Record<"a" | "b", Timed>[] = [];
    for (let index = 0; index < pairs && !stopping; index++) {
      const order: ("a" | "b")[] = index % 2 === 0 ? ["a", "b"] : ["b", "a"];
      const pair: Partial<Record<"a" | "b", Timed>> = {};
      for (const name of order) {
        if (stopping) break;
        pair[name] = await sample(bench, name === "a" ? a : b, notes);
      }
      // A pair cut short by a stop is left out.
      if (pair.a === undefined || pair.b === undefined) break;
      const done = pair as Record<"a" | "b", Timed>;
      results.push(done);
      console.log(
        `pair ${index + 1} (${order.map((name) => name.toUpperCase()).join(" then ")}): A ${done.a.seconds.toFixed(3)} s, B ${done.b.seconds.toFixed(3)} s${stealText(done.a.steal, done.b.steal)}`,
      );
    }
    if (results.length === 0) return;
    console.log(summaryLine(pairedSummary(results)));
    const calm = calmPairs(results);
    if (calm.length > 0 && calm.length < results.length) {
      console.log(
        `calm pairs only (the host took under ${ROUND_STEAL_SHARE * 100} % of either side's time in ${calm.length}): ${summaryLine(pairedSummary(calm))}`,
      );
    }
    const steal = stolen();
    if (steal !== null) {
      console.log(`steal: the host took ${steal.toFixed(1)} s of CPU from this VM meanwhile`);
    }
    for (const note of notes) console.log(`note: ${note}`);
  } finally {
    await bench.teardown?.();
    // What the samples set aside (fresh publishes' outputs) goes now, as after `npm run bench`.
    emptyTrash();
  }
}

try {
  await main();
} catch (error) {
  // A side that fails (a broken build, a config the rerun rejects) ends the comparison.
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
