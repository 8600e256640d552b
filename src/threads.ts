/**
 * Helper threads for work that only speeds things up: bundle verification
 * shards and the filesystem listing. A job names a module that exports
 * `runJob(input)`; it runs on an idle helper thread, or here.
 *
 * Threads are kept and reused: starting one costs 25-50 ms, about as much as
 * listing a 10,000-file root, and a run verifies its bundle on helpers before
 * it lists the destination root. An idle thread does not keep the process
 * alive and ends after IDLE_MS.
 *
 * A helper that cannot start (thread limits), fails, dies or answers with
 * something `accept` rejects never fails the caller: the job runs here
 * instead, which then also reports any error the job meets.
 */
import { setImmediate } from "node:timers/promises";
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";

/** What a job module exports; it runs on a helper thread or on this one. */
export interface JobResult {
  value: unknown;
  /** Buffers to move to the caller instead of copying them. */
  transfer?: ArrayBuffer[];
}

/** The answer of a helper whose job threw (or whose module failed to load). */
export const JOB_FAILED = "distributorJobFailed";

/** The message a helper thread is sent: a job, or only a job module to load. */
export type HelperMessage =
  | { job: string; input: unknown; followUp?: FollowUpEnd }
  | { preload: string };

/** What a helper is sent of a FollowUp: the port it is moved and the shared state word. */
export interface FollowUpEnd {
  port: MessagePort;
  state: Int32Array<SharedArrayBuffer>;
}

/** FollowUpEnd.state: not decided yet, a job was sent on the port, nothing to do. */
export const FOLLOW_UP_PENDING = 0;
export const FOLLOW_UP_SENT = 1;
export const FOLLOW_UP_NONE = 2;

/**
 * Work for a helper that the caller decides on only once the helper's job
 * has started: planOutputs knows which documents to render once its layout
 * is planned, while the helpers already verify the bundle. The helper, done
 * with its job, waits for the follow-up (a job module and its input, or
 * nothing), runs it, and only then answers its job, so that it takes a
 * share of the caller's work instead of idling; the follow-up's answer
 * comes back on the follow-up's own port, and is there by the time the
 * job's answer arrives.
 *
 * The caller must `send` or `cancel` every follow-up it gave a job, or that
 * helper waits for ever (checkFiles cancels them in a `finally`). A job
 * that ran here, or a helper that failed, leaves `answer` undefined: the
 * caller then does that work itself.
 */
export class FollowUp {
  readonly #channel = new MessageChannel();
  readonly #state = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  #decided = false;

  /** What the job's message carries (the port is moved to the helper with it). */
  get end(): FollowUpEnd {
    return { port: this.#channel.port2, state: this.#state };
  }

  /** Have the helper run `job` with `input` once its job is done (only the first send or cancel counts). */
  send(job: URL, input: unknown): void {
    if (this.#decided) return;
    let decision = FOLLOW_UP_SENT;
    try {
      this.#channel.port1.postMessage({ job: job.href, input });
    } catch {
      // An input that cannot be sent: the caller does that work itself.
      decision = FOLLOW_UP_NONE;
    }
    this.#decide(decision);
  }

  /** Let the helper answer its job without a follow-up (if none was sent). */
  cancel(): void {
    if (!this.#decided) this.#decide(FOLLOW_UP_NONE);
  }

  /**
   * The follow-up's answer, once the job has answered; undefined if the
   * helper did not run it (or it failed). Closes the channel.
   */
  answer(): unknown {
    const received = receiveMessageOnPort(this.#channel.port1);
    this.#channel.port1.close();
    return received?.message;
  }

  #decide(decision: number): void {
    this.#decided = true;
    Atomics.store(this.#state, 0, decision);
    Atomics.notify(this.#state, 0);
  }
}

/** A helper thread ends after this long without a job. */
const IDLE_MS = 2000;
/** More threads than this are never started, whatever the callers ask. */
const MAX_THREADS = 8;

interface Helper {
  worker: Worker;
  busy: boolean;
  idleTimer?: NodeJS.Timeout;
}

const helpers = new Set<Helper>();

/** How many jobs ran where, and how many threads were started, since the process started (for tests). */
export const helperCounts = { onThreads: 0, here: 0, started: 0 };

function retire(helper: Helper): void {
  if (!helpers.delete(helper)) return;
  clearTimeout(helper.idleTimer);
  void helper.worker.terminate();
}

function startHelper(): Helper | null {
  let worker: Worker;
  try {
    worker = new Worker(new URL("./_helper-thread.js", import.meta.url));
  } catch {
    return null;
  }
  helperCounts.started++;
  const helper: Helper = { worker, busy: false };
  // A thread that failed is never used again; its job (if any) falls back here.
  worker.once("error", () => retire(helper));
  worker.once("exit", () => retire(helper));
  helpers.add(helper);
  return helper;
}

function idle(helper: Helper): void {
  helper.busy = false;
  helper.worker.unref();
  helper.idleTimer = setTimeout(() => retire(helper), IDLE_MS);
  helper.idleTimer.unref();
}

/**
 * Start helper threads now, up to `count` in all, loading the job module
 * `preload`: a caller that knows it will have jobs soon lets the threads boot
 * while it does other work (parsing a large manifest).
 */
export function startHelpers(count: number, preload: URL): void {
  while (helpers.size < Math.min(count, MAX_THREADS)) {
    const helper = startHelper();
    if (!helper) return;
    helper.worker.postMessage({ preload: preload.href } satisfies HelperMessage);
    idle(helper);
  }
}

/**
 * End every helper thread that is waiting for a job, now rather than after
 * IDLE_MS: for a caller that is done with them and about to use its memory
 * otherwise (a helper that verified 100,000 files keeps about 30 MB).
 */
export function stopIdleHelpers(): void {
  for (const helper of [...helpers]) if (!helper.busy) retire(helper);
}

/** How many started helper threads are waiting for a job (they cost nothing to start). */
export function idleHelperCount(): number {
  let idleCount = 0;
  for (const helper of helpers) if (!helper.busy) idleCount++;
  return idleCount;
}

/** Whether a started helper thread is waiting for a job. */
export function hasIdleHelper(): boolean {
  return idleHelperCount() > 0;
}

function claimHelper(): Helper | null {
  let helper: Helper | null = null;
  for (const candidate of helpers) {
    if (!candidate.busy) {
      helper = candidate;
      break;
    }
  }
  if (!helper && helpers.size < MAX_THREADS) helper = startHelper();
  if (!helper) return null;
  helper.busy = true;
  clearTimeout(helper.idleTimer);
  helper.worker.ref();
  return helper;
}

/** The answer as `accept` takes it; null for the failure marker, or when `accept` throws. */
function acceptAnswer<T>(value: unknown, accept: (value: unknown) => T | null): T | null {
  if (typeof value === "object" && value !== null && JOB_FAILED in value) return null;
  try {
    return accept(value);
  } catch {
    return null;
  }
}

/**
 * Run the job module `job` with `input` on a helper thread (`accept` turns its
 * answer into the result, or null for a broken answer), else `here()`.
 * Callers that want N jobs at once just start N: each gets its own thread.
 */
export function onHelperOrHere<T>(
  job: URL,
  input: unknown,
  accept: (value: unknown) => T | null,
  here: () => T | Promise<T>,
  followUp?: FollowUp,
): Promise<T> {
  const runHere = () => {
    helperCounts.here++;
    return Promise.resolve().then(here);
  };
  const helper = claimHelper();
  if (!helper) return runHere();
  const { worker } = helper;
  // Dropped once sent: the closures below live until the answer, and would
  // keep a large input (a shard of 100,000 files) alive that long.
  let message: HelperMessage | null = followUp
    ? { job: job.href, input, followUp: followUp.end }
    : { job: job.href, input };
  return new Promise<T | null>((resolve) => {
    const events = ["message", "messageerror", "error", "exit"] as const;
    const settle = (result: T | null) => {
      for (const event of events) worker.off(event, listeners[event]);
      resolve(result);
    };
    const onFailure = () => settle(null);
    const listeners = {
      message: (value: unknown) => settle(acceptAnswer(value, accept)),
      // An answer that cannot be received here is as broken as none.
      messageerror: onFailure,
      error: onFailure,
      exit: onFailure,
    };
    for (const event of events) worker.once(event, listeners[event]);
    try {
      worker.postMessage(message, followUp ? [followUp.end.port] : []);
    } catch {
      // An input that cannot be sent (not cloneable) is done here.
      onFailure();
    } finally {
      message = null;
    }
  }).then((result) => {
    if (result === null) {
      retire(helper);
      return runHere();
    }
    helperCounts.onThreads++;
    idle(helper);
    return result;
  });
}

/**
 * Items 0 to count-1 of one list of work that several threads share, in
 * shared memory (a helper is sent it as is), without a message per item.
 * Any thread takes from the front; one thread may also take from the back
 * once it has run out of work of its own (a helper's shard that the calling
 * thread helps finish). Both ends share one 64-bit word (front in the high
 * half, back in the low half), so each take is one compare-and-swap and no
 * item is ever taken twice.
 */
export type WorkClaims = BigInt64Array<SharedArrayBuffer>;

export function newWorkClaims(count: number): WorkClaims {
  const claims = new BigInt64Array(new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT));
  claims[0] = BigInt(count);
  return claims;
}

const LOW_HALF = 0xffffffffn;

/** Whether any item is left to take. */
export function hasWork(claims: WorkClaims): boolean {
  const word = Atomics.load(claims, 0);
  return Number(word >> 32n) < Number(word & LOW_HALF);
}

/** The next item from the front, now taken; undefined when the ends have met. */
export function takeFront(claims: WorkClaims): number | undefined {
  for (;;) {
    const word = Atomics.load(claims, 0);
    const front = Number(word >> 32n);
    if (front >= Number(word & LOW_HALF)) return undefined;
    if (Atomics.compareExchange(claims, 0, word, word + (1n << 32n)) === word) return front;
  }
}

/**
 * The next item from the back, now taken, if `canTake` accepts it;
 * undefined when the ends have met or it does not.
 */
export function takeBack(
  claims: WorkClaims,
  canTake: (index: number) => boolean = () => true,
): number | undefined {
  for (;;) {
    const word = Atomics.load(claims, 0);
    const back = Number(word & LOW_HALF);
    if (Number(word >> 32n) >= back || !canTake(back - 1)) return undefined;
    if (Atomics.compareExchange(claims, 0, word, word - 1n) === word) return back - 1;
  }
}

/** How long the main thread works synchronously before it lets its event loop run. */
const EVENT_LOOP_EVERY_MS = 20;

/**
 * Turns of the event loop for a long synchronous loop on the main thread, so
 * that signals (Ctrl-C) and helpers' answers are handled meanwhile: after
 * each item, `if (turns.due()) await turns.take()`.
 */
export class EventLoopTurns {
  readonly #everyMs: number;
  #since = performance.now();

  constructor(everyMs = EVENT_LOOP_EVERY_MS) {
    this.#everyMs = everyMs;
  }

  due(): boolean {
    return performance.now() - this.#since >= this.#everyMs;
  }

  async take(): Promise<void> {
    await setImmediate();
    this.#since = performance.now();
  }
}
