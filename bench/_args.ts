/**
 * The command line of `npm run bench` (bench/run.ts), checked before any
 * work starts: a full run takes ten minutes and writes gigabytes, so a typo
 * (`--case 5b`, `--runs five`) or `--help` must not start one with defaults.
 */
import { parseArgs } from "node:util";

export const BENCH_USAGE = `usage: npm run bench [-- [--cases 1,2,5b] [--runs N] [--seed N]]
  --cases  the cases to run, by id; "5" means 5a and 5b (default: all)
  --runs   samples per contender, after a warm-up (default: each case's own)
  --seed   the workload generator's seed (default: the one the docs' tables use)
  --help   print this and exit`;

export interface BenchOptions {
  /** Case ids as given; null runs every case. */
  cases: string[] | null;
  runs: number | null;
  seed: number;
}

/** A command line the benchmark refuses; `message` says why. */
export class BenchUsageError extends Error {}

/** Whether `wanted` (a case id, or its number without the letter: "5") names the case `id`. */
export function namesCase(wanted: string, id: string): boolean {
  return wanted === id || id.replace(/[a-z]$/, "") === wanted;
}

function wholeNumber(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    throw new BenchUsageError(`--${name} must be a whole number of at least ${min}, not '${text}'`);
  }
  return value;
}

/**
 * The options of `argv` (without node and the script), or "help". `caseIds`
 * are the ids of the cases there are; `defaultSeed` the generator's default.
 * Throws BenchUsageError for an unknown option, a missing or bad value, or a
 * case id that names no case.
 */
export function parseBenchArgs(
  argv: readonly string[],
  caseIds: readonly string[],
  defaultSeed: number,
): BenchOptions | "help" {
  let values: { cases?: string; runs?: string; seed?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        cases: { type: "string" },
        runs: { type: "string" },
        seed: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new BenchUsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return "help";
  let cases: string[] | null = null;
  if (values.cases !== undefined) {
    cases = values.cases.split(",").map((id) => id.trim());
    const unknown = cases.filter((wanted) => !caseIds.some((id) => namesCase(wanted, id)));
    if (unknown.length > 0 || cases.length === 0) {
      throw new BenchUsageError(
        `--cases: no case ${unknown.map((id) => `'${id}'`).join(", ") || "given"}; the cases are ${caseIds.join(", ")}`,
      );
    }
  }
  return {
    cases,
    runs: values.runs === undefined ? null : wholeNumber("runs", values.runs, 1),
    seed: values.seed === undefined ? defaultSeed : wholeNumber("seed", values.seed, 0),
  };
}
