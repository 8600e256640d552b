/**
 * Spreads the per-file checks of a bundle over worker threads. Verification is
 * CPU work (SHA-256) plus four system calls per file; on the main thread it used
 * one core, and per-file promises cost more than the hashing on 100,000 small
 * files. Workers check their shards synchronously, so both cores hash and no
 * file costs a trip through libuv's thread pool.
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
  /** Worker threads to use; 0 checks on the calling thread. Default: by bundle size. */
  workers?: number;
}

/**
 * One worker per core, less one when the calling thread has its own work
 * meanwhile (rendering Markdown): measured on M, a third thread competing for
 * two cores made verification plus rendering slower (1.1-1.2 s vs 1.0-1.07 s).
 */
function defaultWorkers(files: readonly FileToCheck[], busyHere: boolean): number {
  let bytes = 0;
  for (const file of files) bytes += file.size;
  if (files.length <= IN_THREAD_MAX_FILES && bytes <= IN_THREAD_MAX_BYTES) return 0;
  const cores = availableParallelism();
  return Math.max(1, Math.min(busyHere ? cores - 1 : cores, MAX_WORKERS));
}

const VERIFY_JOB = new URL("./_verify-job.js", import.meta.url);

/**
 * Let the helper threads for a large bundle boot now, while the caller parses
 * its manifest and plans its layout: about 50 ms that verification no longer
 * waits for. `workers`: the caller's CheckOptions.workers; no more threads
 * than it allows are started (none for 0).
 */
export function prestartChecks(workers?: number): void {
  const count = Math.min(availableParallelism(), MAX_WORKERS, workers ?? MAX_WORKERS);
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
 * Problems of `files` (null = good), in the order of `files`. Worker threads
 * start before this returns its promise; `busyHere` says the caller has other
 * work for this thread meanwhile.
 */
export async function checkFiles(
  root: string,
  files: readonly FileToCheck[],
  options: CheckOptions & { busyHere?: boolean } = {},
): Promise<(string | null)[]> {
  const workers = Math.min(
    options.workers ?? defaultWorkers(files, options.busyHere ?? false),
    files.length,
  );
  if (workers <= 0) return new FileChecker(root).checkAll(files);
  const shards = shardsOf(files, workers);
  const results = await Promise.all(
    shards.map((shard) => checkInWorker({ root, files: shard.files })),
  );
  const problems = new Array<string | null>(files.length);
  shards.forEach((shard, s) => {
    const shardProblems = results[s] as (string | null)[];
    shard.indexes.forEach((index, i) => {
      problems[index] = shardProblems[i] as string | null;
    });
  });
  return problems;
}
