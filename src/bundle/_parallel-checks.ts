/**
 * Spreads the per-file checks of a bundle over helper threads and the calling
 * thread. Verification is CPU work (SHA-256) plus four system calls per file;
 * on the main thread alone it used one core, and per-file promises cost more
 * than the hashing on 100,000 small files. Each helper checks its shard
 * synchronously from the front, and the calling thread, once its own work is
 * done, from the back: all cores hash and no file costs a trip through
 * libuv's thread pool.
 */
import { availableParallelism } from "node:os";
import {
  EventLoopTurns,
  FollowUp,
  newWorkClaims,
  onHelperOrHere,
  startHelpers,
  takeBack,
  type WorkClaims,
} from "../threads.js";
import { FileChecker, type FileToCheck } from "./_file-checks.js";
import { type PackedFiles, packFiles } from "./_packed-files.js";
import type { VerifiedBytesStore } from "./_verified-bytes.js";

/** What one worker is sent. */
export interface ShardInput {
  root: string;
  files: PackedFiles;
  /** The helper takes files from the front; the calling thread from the back (see shareTails). */
  claims: WorkClaims;
  /** Where to keep small good files' bytes (_verified-bytes.ts); shared, not copied. */
  store: VerifiedBytesStore | null;
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
/** Larger files are checked on helpers only (about 40 ms of hashing; see shareTails). */
const HERE_MAX_FILE_BYTES = 64 * 1024 * 1024;

export interface CheckOptions {
  /**
   * Helper threads to use besides the calling thread; 0 checks everything on
   * the calling thread. Default: by bundle size (see defaultWorkers).
   */
  workers?: number;
  /**
   * The caller's own work on this thread, called once as soon as the helper
   * threads have their files (without helpers: before this thread checks
   * them all). This thread then helps the helpers finish. Planning the
   * layout and rendering go there (planOutputs), and run.ts starts reading
   * the destination states; what that starts asynchronously progresses at
   * the turns of the event loop this thread's checks of the helpers' files
   * leave (every 20 ms; without helpers, only after all checks). It must
   * not throw: verifyFiles keeps the caller's errors for after the report.
   * With `handOff` it can give the helpers a share of that work.
   */
  meanwhile?: (handOff: HandOff) => void;
}

/**
 * Gives every helper thread follow-up work (threads.ts: FollowUp): each runs
 * the job module `job` with what `input()` returns once its shard is
 * checked, before it answers. Returns a function that gives the answers of
 * the helpers that ran it, to call once checkFiles has resolved. Without
 * helpers nothing is sent (nor `input` called) and that function gives
 * none. Only the first hand-off counts.
 */
export type HandOff = (job: URL, input: () => unknown) => () => unknown[];

/** A hand-off's answers when nothing was handed off. */
export const NO_ANSWERS = (): unknown[] => [];
/** The hand-off where there is no helper to hand to: nothing is sent. */
export const NO_HAND_OFF: HandOff = () => NO_ANSWERS;

/**
 * Helper threads for a bundle this large: one per core but one, as the calling
 * thread takes part too (it renders Markdown, then checks the helpers' last
 * files). A third thread competing for two cores made verification plus
 * rendering slower (M: 1.1-1.2 s vs 1.0-1.07 s), and a second helper instead
 * of the calling thread cost an unchanged rerun of M about 0.1 s of CPU to
 * start (docs/performance.md, item 34). At most MAX_WORKERS.
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
 * Split into one shard per helper of similar cost. The calling thread has no
 * shard of its own: it does the caller's work first (CheckOptions.meanwhile),
 * then takes the helpers' last files, so its share is whatever is left.
 */
export function shardsOf(files: readonly FileToCheck[], helpers: number): Shard[] {
  const newShard = (): Shard => ({ cost: 0, files: [], indexes: [] });
  const shards = Array.from({ length: helpers }, newShard);
  // Large files first, largest first, each to the cheapest shard so far:
  // placed after the small ones, a few of them would land together wherever
  // the small ones had left room. The small ones then even the shards out,
  // in list order (sorting 100,000 of them would cost more than it evens).
  // A shard's small files are then at its back, where this thread takes them.
  const large: number[] = [];
  const small: number[] = [];
  files.forEach((file, index) => {
    (file.size >= LARGE_FILE_BYTES ? large : small).push(index);
  });
  large.sort((a, b) => (files[b] as FileToCheck).size - (files[a] as FileToCheck).size);
  for (const index of [...large, ...small]) {
    const file = files[index] as FileToCheck;
    let cheapest = shards[0] as Shard;
    for (const shard of shards) if (shard.cost < cheapest.cost) cheapest = shard;
    cheapest.cost += file.size + PER_FILE_COST;
    // Only the fields the check needs cross the thread boundary.
    cheapest.files.push({ path: file.path, size: file.size, sha256: file.sha256, at: index });
    cheapest.indexes.push(index);
  }
  return shards.filter((shard) => shard.files.length > 0);
}

/**
 * Check files on the calling thread (the part of a shard a failed helper did
 * not answer for), letting its event loop run every few milliseconds: a
 * signal (Ctrl-C) is handled there, and a large bundle's shard takes seconds.
 */
export async function checkHere(
  root: string,
  files: readonly FileToCheck[],
  store: VerifiedBytesStore | null = null,
  turns = new EventLoopTurns(),
): Promise<(string | null)[]> {
  const checker = new FileChecker(root, store);
  const problems: (string | null)[] = [];
  for (const file of files) {
    problems.push(checker.check(file));
    if (turns.due()) await turns.take();
  }
  return problems;
}

/**
 * Check one shard on a helper thread: the answer covers the files the helper
 * took from the front, the first ones in order. A helper that cannot start or
 * dies (thread limits, out of memory) does not fail the run: it answers null,
 * and shardProblems checks its part here.
 */
function checkInWorker(input: ShardInput, followUp: FollowUp): Promise<(string | null)[] | null> {
  const count = input.files.sizes.length;
  return onHelperOrHere(
    VERIFY_JOB,
    input,
    // Anything but an array of at most one answer per file is a broken worker, never "all good".
    (problems) =>
      Array.isArray(problems) && problems.length <= count ? (problems as (string | null)[]) : null,
    () => null,
    followUp,
  );
}

/**
 * A helper's shard that this thread helps finish: once done with the
 * caller's work, it takes the helper's last files (up to HERE_MAX_FILE_BYTES
 * each).
 */
export interface SharedShard {
  files: FileToCheck[];
  claims: WorkClaims;
  answer: Promise<(string | null)[] | null>;
  /** Problems of the files taken here from the back, by index in `files`. */
  taken: Map<number, string | null>;
}

/** Take files from the back of each shard until its helper and this thread meet. */
async function shareTails(
  root: string,
  shards: readonly SharedShard[],
  store: VerifiedBytesStore | null,
): Promise<void> {
  const checker = new FileChecker(root, store);
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
export async function shardProblems(
  root: string,
  shard: SharedShard,
  store: VerifiedBytesStore | null = null,
): Promise<(string | null)[]> {
  const { files, taken } = shard;
  const back = files.length - taken.size;
  for (let index = back; index < files.length; index++) {
    // The back is taken in one run from the end; anything else is a bug, and
    // a file is never reported good without a check: all are checked here.
    if (!taken.has(index)) return checkHere(root, files, store);
  }
  let front = await shard.answer;
  if (front === null || front.length !== back)
    front = await checkHere(root, files.slice(0, back), store);
  const problems = [...front];
  for (let index = back; index < files.length; index++) {
    problems.push(taken.get(index) as string | null);
  }
  return problems;
}

/**
 * Problems of `files` (null = good), in the order of `files`. Shards go to
 * `options.workers` helper threads (by default: by bundle size, see
 * defaultWorkers); this thread does the caller's work (`options.meanwhile`)
 * and then takes files from the back of each shard while its helper takes
 * from the front, so that all end at about the same time.
 */
export async function checkFiles(
  root: string,
  files: readonly FileToCheck[],
  options: CheckOptions & { store?: VerifiedBytesStore | null } = {},
): Promise<(string | null)[]> {
  const store = options.store ?? null;
  const helpers = Math.min(options.workers ?? defaultWorkers(files), files.length);
  if (helpers <= 0) {
    options.meanwhile?.(NO_HAND_OFF);
    return new FileChecker(root, store).checkAll(files);
  }
  const shards = shardsOf(files, helpers);
  const followUps = shards.map(() => new FollowUp());
  const shared: SharedShard[] = shards.map((shard, s) => {
    const claims = newWorkClaims(shard.files.length);
    const input = { root, files: packFiles(shard.files), claims, store };
    const answer = checkInWorker(input, followUps[s] as FollowUp);
    return { files: shard.files, claims, answer, taken: new Map() };
  });
  const handOff: HandOff = (job, input) => {
    const sent = input();
    for (const followUp of followUps) followUp.send(job, sent);
    return () => followUps.map((followUp) => followUp.answer()).filter((a) => a !== undefined);
  };
  try {
    options.meanwhile?.(handOff);
  } finally {
    // A helper waits for its follow-up before it answers: never leave one waiting.
    for (const followUp of followUps) followUp.cancel();
  }
  await shareTails(root, shared, store);
  const problems = new Array<string | null>(files.length);
  for (const [s, shard] of shards.entries()) {
    const shardResult = await shardProblems(root, shared[s] as SharedShard, store);
    shard.indexes.forEach((index, i) => {
      problems[index] = shardResult[i] as string | null;
    });
  }
  return problems;
}
