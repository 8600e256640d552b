/**
 * Spreads the per-file checks of a bundle over helper threads and the calling
 * thread. Verification is CPU work (SHA-256) plus four system calls per file;
 * on the main thread alone it used one core, and per-file promises cost more
 * than the hashing on 100,000 small files. Every thread checks its shard
 * synchronously, so all cores hash and no file costs a trip through libuv's
 * thread pool.
 */
import { availableParallelism } from "node:os";
import {
  EventLoopTurns,
  newWorkClaims,
  onHelperOrHere,
  startHelpers,
  takeBack,
  type WorkClaims,
} from "../threads.js";
import { FileChecker, type FileToCheck } from "./_file-checks.js";

/** What one worker is sent. */
export interface ShardInput {
  root: string;
  files: FileToCheck[];
  /** When set, the calling thread may take files from the shard's back (see shareTail). */
  claims?: WorkClaims;
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
/** Files this large are placed first when shards are made (see shardsOf). */
const LARGE_FILE_BYTES = 1024 * 1024;
/** Larger files are checked on helpers only (about 40 ms of hashing; see shardsOf). */
const HERE_MAX_FILE_BYTES = 64 * 1024 * 1024;
/** The calling thread's share of the files, against a helper's 1 (see shardsOf). */
const HERE_SHARE = 0.5;

export interface CheckOptions {
  /**
   * Helper threads to use besides the calling thread; 0 checks everything on
   * the calling thread. Default: by bundle size (see defaultWorkers).
   */
  workers?: number;
  /**
   * Called once, as soon as the helper threads have their files (or before
   * this thread checks them all, without helpers): for work of the caller's
   * own that can run on this thread meanwhile (run.ts reads the destination
   * states early). It must not throw; what it starts runs at the turns of the
   * event loop that this thread's own checks leave (every 20 ms).
   */
  meanwhile?: () => void;
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

interface Shard {
  cost: number;
  files: FileToCheck[];
  /** Index in the checked list of each of `files`. */
  indexes: number[];
}

/**
 * Split into one shard per helper of similar cost, plus one for the calling
 * thread when `withHere` (the last). Files above HERE_MAX_FILE_BYTES never go
 * to the calling thread's shard: it yields to its event loop between files
 * (see checkHere), and hashing one of them would hold it up for longer.
 */
export function shardsOf(
  files: readonly FileToCheck[],
  helpers: number,
  withHere: boolean,
): { onHelpers: Shard[]; here: Shard } {
  const newShard = (): Shard => ({ cost: 0, files: [], indexes: [] });
  const onHelpers = Array.from({ length: helpers }, newShard);
  const here = newShard();
  const all = withHere ? [...onHelpers, here] : onHelpers;
  // Large files first, largest first, each to the cheapest shard so far:
  // placed after the small ones, a few of them would land together wherever
  // the small ones had left room. The small ones then even the shards out,
  // in list order (sorting 100,000 of them would cost more than it evens).
  const large: number[] = [];
  const small: number[] = [];
  files.forEach((file, index) => {
    (file.size >= LARGE_FILE_BYTES ? large : small).push(index);
  });
  large.sort((a, b) => (files[b] as FileToCheck).size - (files[a] as FileToCheck).size);
  for (const index of [...large, ...small]) {
    const file = files[index] as FileToCheck;
    const candidates = file.size > HERE_MAX_FILE_BYTES ? onHelpers : all;
    // This thread's shard counts double: it takes a helper's last files once
    // done (see shareTails), and the helpers may still be starting.
    const load = (shard: Shard) => (shard === here ? shard.cost / HERE_SHARE : shard.cost);
    let cheapest = candidates[0] as Shard;
    for (const shard of candidates) if (load(shard) < load(cheapest)) cheapest = shard;
    cheapest.cost += file.size + PER_FILE_COST;
    // Only the fields the check needs cross the thread boundary.
    cheapest.files.push({ path: file.path, size: file.size, sha256: file.sha256 });
    cheapest.indexes.push(index);
  }
  return { onHelpers: onHelpers.filter((shard) => shard.files.length > 0), here };
}

/**
 * Check a shard on the calling thread, letting its event loop run every few
 * milliseconds: a signal (Ctrl-C) is handled there, and a large bundle's
 * share takes seconds.
 */
export async function checkHere(
  root: string,
  files: readonly FileToCheck[],
  turns = new EventLoopTurns(),
): Promise<(string | null)[]> {
  const checker = new FileChecker(root);
  const problems: (string | null)[] = [];
  for (const file of files) {
    problems.push(checker.check(file));
    if (turns.due()) await turns.take();
  }
  return problems;
}

/**
 * Check one shard on a helper thread. A helper that cannot start or dies
 * (thread limits, out of memory) does not fail the run: its shard is checked
 * here. With `input.claims` the answer covers the files the helper took from
 * the front, the first ones in order: null when it failed.
 */
function checkInWorker(input: ShardInput): Promise<(string | null)[] | null> {
  return onHelperOrHere(
    VERIFY_JOB,
    input,
    // Anything but one answer per file (per file taken) is a broken worker, never "all good".
    (problems) =>
      Array.isArray(problems) &&
      (input.claims
        ? problems.length <= input.files.length
        : problems.length === input.files.length)
        ? (problems as (string | null)[])
        : null,
    // A failed helper's shard is checked here, letting the event loop run.
    () => (input.claims ? null : checkHere(input.root, input.files)),
  );
}

/**
 * A helper's shard that this thread helps finish: once done with its own
 * files, it takes the helper's last ones (up to HERE_MAX_FILE_BYTES each).
 */
export interface SharedShard {
  files: FileToCheck[];
  claims: WorkClaims;
  answer: Promise<(string | null)[] | null>;
  /** Problems of the files taken here from the back, by index in `files`. */
  taken: Map<number, string | null>;
}

/** Take files from the back of each shard until its helper and this thread meet. */
async function shareTails(root: string, shards: readonly SharedShard[]): Promise<void> {
  const checker = new FileChecker(root);
  const turns = new EventLoopTurns();
  for (const shard of shards) {
    const canTake = (index: number) =>
      (shard.files[index] as FileToCheck).size <= HERE_MAX_FILE_BYTES;
    for (let index = takeBack(shard.claims, canTake); index !== undefined; ) {
      shard.taken.set(index, checker.check(shard.files[index] as FileToCheck));
      if (turns.due()) await turns.take();
      index = takeBack(shard.claims, canTake);
    }
  }
}

/**
 * A shared shard's problems in order: the helper's answer for the front, this
 * thread's for the back. When the helper failed, or its answer and the back
 * do not add up to the shard, whatever this thread did not take is checked
 * here again.
 */
export async function shardProblems(root: string, shard: SharedShard): Promise<(string | null)[]> {
  const { files, taken } = shard;
  const back = files.length - taken.size;
  for (let index = back; index < files.length; index++) {
    // The back is taken in one run from the end; anything else is a bug, and
    // a file is never reported good without a check: all are checked here.
    if (!taken.has(index)) return checkHere(root, files);
  }
  let front = await shard.answer;
  if (front === null || front.length !== back) front = await checkHere(root, files.slice(0, back));
  const problems = [...front];
  for (let index = back; index < files.length; index++) {
    problems.push(taken.get(index) as string | null);
  }
  return problems;
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
  const withHere = !options.busyHere;
  // By default, no more helpers than leave this thread a file of its own (at
  // least one helper: a single file of a bundle this large is a large one).
  const helpers = Math.min(
    options.workers ??
      Math.min(defaultWorkers(files), Math.max(1, files.length - (withHere ? 1 : 0))),
    files.length,
  );
  if (helpers <= 0) {
    options.meanwhile?.();
    return new FileChecker(root).checkAll(files);
  }
  const { onHelpers, here } = shardsOf(files, helpers, withHere);
  let results: (string | null)[][];
  if (withHere) {
    // Handed out before this thread checks its own shard; then it helps with
    // theirs from the back, so that all end at about the same time.
    const shared: SharedShard[] = onHelpers.map((shard) => {
      const claims = newWorkClaims(shard.files.length);
      const answer = checkInWorker({ root, files: shard.files, claims });
      return { files: shard.files, claims, answer, taken: new Map() };
    });
    options.meanwhile?.();
    const hereProblems = await checkHere(root, here.files);
    await shareTails(root, shared);
    results = [];
    for (const shard of shared) results.push(await shardProblems(root, shard));
    results.push(hereProblems);
  } else {
    const answers = onHelpers.map((shard) => checkInWorker({ root, files: shard.files }));
    options.meanwhile?.();
    results = (await Promise.all(answers)) as (string | null)[][];
  }
  const problems = new Array<string | null>(files.length);
  [...onHelpers, ...(withHere ? [here] : [])].forEach((shard, s) => {
    const shardProblems = results[s] as (string | null)[];
    shard.indexes.forEach((index, i) => {
      problems[index] = shardProblems[i] as string | null;
    });
  });
  return problems;
}
