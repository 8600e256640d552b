/**
 * `node dist/bench/compare.js --case 5b --b-build <checkout> [--pairs 16]`:
 * alternating pairs of two builds (or two Node.js binaries, or two sets of
 * Node.js flags) on an unchanged rerun, the way the A/B figures of
 * docs/performance.md were taken ("Comparing two builds"). Each pair runs
 * both sides back to back, the first side switching every pair, so that the
 * machine's speed changes hit both alike; the verdict is the median of the
 * per-pair differences and how many pairs each side won.
 *
 * It reruns what `npm run bench` left in `$BENCH_DIR/work-<case>` (cases 2
 * and 5b: `rerun.yaml` and the case's render cache), so run the benchmark
 * once first. Each side is this checkout, run by the Node.js running this
 * script, unless `--a-build` / `--b-build` (a checkout with `npm run build`
 * done), `--a-node` / `--b-node` or `--a-flags=` / `--b-flags=` (Node.js
 * options, space-separated) say otherwise.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { distributorRun, REPO_ROOT, renderCacheDir } from "./_kit.js";
import { type Command, measure } from "./_measure.js";
import { type Pair, pairedSummary, summaryLine } from "./_paired.js";
import { benchDir } from "./workload.js";

/** The unchanged reruns the benchmark leaves a published root and a config for. */
const RERUN_CASES = ["2", "5b"];

export interface Side {
  build: string;
  node: string;
  flags: string[];
}

/** The command line of one side: `--x-build`, `--x-node` and `--x-flags` over this checkout's defaults. */
export function sideOf(values: Record<string, string | undefined>, name: "a" | "b"): Side {
  const flags = values[`${name}-flags`]?.trim();
  return {
    build: path.resolve(values[`${name}-build`] ?? REPO_ROOT),
    node: values[`${name}-node`] ?? process.execPath,
    flags: flags ? flags.split(/\s+/) : [],
  };
}

/** The benchmark's own rerun command (distributorRun), run by this side's build, Node.js and flags. */
function rerunCommand(side: Side, work: string): Command {
  const ours = distributorRun(path.join(work, "rerun.yaml"), renderCacheDir(work));
  const [, ...runArgs] = ours.args;
  return {
    ...ours,
    cmd: side.node,
    args: [...side.flags, path.join(side.build, "bin/distributor.js"), ...runArgs],
  };
}

function describe(side: Side): string {
  const flags = side.flags.length > 0 ? ` ${side.flags.join(" ")}` : "";
  return `${side.node}${flags} ${path.join(side.build, "bin/distributor.js")}`;
}

function usage(message: string): never {
  console.error(`${message}
usage: node dist/bench/compare.js --case 2|5b [--pairs N]
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
  if (id === undefined || !RERUN_CASES.includes(id))
    usage(`--case must be one of ${RERUN_CASES.join(", ")}`);
  const pairs = Number(values.pairs);
  if (!Number.isSafeInteger(pairs) || pairs < 1) usage("--pairs must be a whole number above 0");
  const work = path.join(benchDir(), `work-${id}`);
  if (!existsSync(path.join(work, "rerun.yaml"))) {
    usage(`${work}/rerun.yaml is missing: run \`npm run bench -- --cases ${id}\` first`);
  }
  const a = sideOf(values, "a");
  const b = sideOf(values, "b");
  for (const side of [a, b]) {
    if (!existsSync(path.join(side.build, "dist/cli/main.js"))) {
      usage(`${side.build} has no build: run \`npm run build\` there`);
    }
  }
  console.log(`case ${id}, ${pairs} alternating pairs\n  A: ${describe(a)}\n  B: ${describe(b)}`);
  // A warm-up each: the first run after a build pays for cold caches.
  await measure(rerunCommand(a, work));
  await measure(rerunCommand(b, work));
  const results: Pair[] = [];
  for (let index = 0; index < pairs; index++) {
    const order: ("a" | "b")[] = index % 2 === 0 ? ["a", "b"] : ["b", "a"];
    const pair: Partial<Pair> = {};
    for (const name of order) {
      const sample = await measure(rerunCommand(name === "a" ? a : b, work));
      pair[name] = { seconds: sample.seconds, cpuSeconds: sample.cpuSeconds };
    }
    const done = pair as Pair;
    results.push(done);
    console.log(
      `pair ${index + 1} (${order.map((name) => name.toUpperCase()).join(" then ")}): A ${done.a.seconds.toFixed(3)} s, B ${done.b.seconds.toFixed(3)} s`,
    );
  }
  console.log(summaryLine(pairedSummary(results)));
}

try {
  await main();
} catch (error) {
  // A side that fails (a broken build, a config the rerun rejects) ends the comparison.
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
