/**
 * Spreads the per-file checks of a bundle over helper threads and the calling
 * thread. Verification is CPU work (SHA-256) plus four system calls per file;
 * on the main thread alone it used one core, and per-file promises cost more
 * than the hashing on 100,000 small files. Every thread checks its shard
 * synchronously, so all cores hash and no file costs a trip through libuv's
 * thread pool.
 */
import { availableParallelism } from "node:os";
import { onHelperOrHere, startHelpers } from "../threads.js";
import { FileChecker, type FileToCheck } from "./_file-checks.js";

/** What one worker is sent. */
export interface ShardInput {
  root: string;
  files: FileToCheck[];
}

/**
 * Bundles at most this big are checked on the calling thread: starting a worker
 * costs about 30 ms, more than checking them, and blocking the event loop for a
 * few milliseconds harms nothing at this point of a run.
 */
const IN_THREAD_MAX_FILES = 500;
const IN_THREAD_MAX_BYTES = 16 * 1024 * 1024;
const MAX_WORKERS = 4;
/** Balancing weight of a file's open/fstat/close, in bytes of hashing. */
const PER_FILE_COST = 32 * 1024;

export interface CheckOptions {
  /**
   * Helper threads to use besides the calling thread; 0 checks everything on
   * the calling thread. Default: by bundle size (see defaultWorkers).
   */
  workers?: number;
}

/**
 * Helper threads for a bundle this large: one per core but one, as the calling
 * thread checks a shard too (or renders Markdown meanwhile, `busyHere`). A
 * third thread competing for two cores made verification plus rendering
 * slower (M: 1.1-1.2 s vs 1.0-1.07 s), and a second helper instead of the
 * calling thread cost an unchanged rerun of M about 0.1 s of CPU to start
 * (docs/performance.md, item 34). At most MAX_WORKERS.
 */
function helpersFor(cores: number): number {
  return Math.max(0, Math.min(cores - 1, MAX_WORKERS));
}

function defaultWorkers(files: readonly FileToCheck[]): number {
  let bytes = 0;
  for (const file of files) bytes += file.size;
  if (files.length <= IN_THREAD_MAX_FILES && bytes <= IN_THREAD_MAX_BYTES) return 0;
  return helpersFor(availableParallelism());
}

const VERIFY_JOB = new URL("./_verify-job.js", import.meta.url);

/**
 * Let the helper threads for a large bundle boot now, while the caller parses
 * its manifest and plans its layout: about 50 ms that verification no longer
 * waits for. `workers`: the caller's CheckOptions.workers; no more threads
 * than it allows are started (none for 0).
 */
export function prestartChecks(workers?: number): void {
  const count = Math.min(workers ?? helpersFor(availableParallelism()), MAX_WORKERS);
  if (count > 0) startHelpers(count, VERIFY_JOB);
}

/** Split into `count` shards of similar cost; each shard remembers the original indexes. */
function shardsOf(files: readonly FileToCheck[], count: number) {
  const shards = Array.from({ length: count }, () => ({
    cost: 0,
    files: [] as FileToCheck[],
    indexes: [] as number[],
  }));
  files.forEach((file, index) => {
    let cheapest = shards[0] as (typeof shards)[number];
    for (const shard of shards) if (shard.cost < cheapest.cost) cheapest = shard;
    cheapest.cost += file.size + PER_FILE_COST;
    // Only the fields the check needs cross the thread boundary.
    cheapest.files.push({ path: file.path, size: file.size, sha256: file.sha256 });
    cheapest.indexes.push(index);
  });
  return shards.filter((shard) => shard.files.length > 0);
}

/**
 * Check one shard on a helper thread. A helper that cannot start or dies
 * (thread limits, out of memory) does not fail the run: its shard is checked
 * here.
 */
function checkInWorker(input: ShardInput): Promise<(string | null)[]> {
  return onHelperOrHere(
    VERIFY_JOB,
    input,
    // Anything but one answer per file is a broken worker, never "all good".
    (problems) =>
      Array.isArray(problems) && problems.length === input.files.length
        ? (problems as (string | null)[])
        : null,
    () => new FileChecker(input.root).checkAll(input.files),
  );
}

/**
 * Problems of `files` (null = good), in the order of `files`. Shards go to
 * `options.workers` helper threads (by default: by bundle size, see
 * defaultWorkers), and one more is checked on this thread unless `busyHere`
 * says the caller has other work for it meanwhile. Helper threads start
 * before this returns its promise.
 */
export async function checkFiles(
  root: string,
  files: readonly FileToCheck[],
  options: CheckOptions & { busyHere?: boolean } = {},
): Promise<(string | null)[]> {
  const helpers = Math.min(options.workers ?? defaultWorkers(files), files.length);
  if (helpers <= 0) return new FileChecker(root).checkAll(files);
  const shards = shardsOf(files, Math.min(helpers + (options.busyHere ? 0 : 1), files.length));
  // Handed out before this thread checks its own shard, which blocks it.
  const onHelpers = shards
    .slice(0, helpers)
    .map((shard) => checkInWorker({ root, files: shard.files }));
  const here = shards.slice(helpers).map((shard) => new FileChecker(root).checkAll(shard.files));
  const results = [...(await Promise.all(onHelpers)), ...here];
  const problems = new Array<string | null>(files.length);
  shards.forEach((shard, s) => {
    const shardProblems = results[s] as (string | null)[];
    shard.indexes.forEach((index, i) => {
      problems[index] = shardProblems[i] as string | null;
    });
  });
  return problems;
}
