/**
 * Small filesystem writes spread over worker threads. Creating files is kernel
 * work (on this project's benchmark machine about 0.6 ms per new file, nearly
 * all of it in `openat`), and a single thread runs it on one core: copying
 * M's 9,992 small files with temp + rename took 5.9-7.2 s on one thread and
 * 4.1-4.9 s on two. Each worker runs the same synchronous steps as the calling
 * thread would (writeSmallSync), so only where they run differs.
 *
 * The pool starts only after WARM_UP small writes in this process: a run that
 * writes a handful of files never pays for starting threads. Workers keep the
 * process alive only while they have writes in flight.
 *
 * Writes travel in batches, one message each way: a message per write cost
 * each worker 0.5-0.65 s of a fresh publish of C (100,000 small files) in
 * `postMessage` alone, and the calling thread as much again. A worker has at
 * most two batches (see maxBatchWrites): one it works on and the next,
 * so that it has the next at hand while the calling thread handles the
 * answers to the first; writes asked for meanwhile gather into the batch
 * after. (Sending whatever one turn of the event loop asked for instead made
 * batches of 6 writes on average.)
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { DistributorError, type ErrorCode } from "../errors.js";
import type { OutputContent } from "../model.js";
import type { FolderId } from "./_fs-pinned.js";
import type { VersionToken } from "./driver.js";

/** One small write, as sent to a worker. */
export interface SmallWrite {
  root: string;
  relPath: string;
  target: string;
  content: OutputContent;
  /**
   * The temporary folder that `target` is in, under the root, which nobody
   * else sees (_fs-staging.ts): the file is created under its final name,
   * with no temp file and rename, and the folder is never made again if it
   * is gone. Set for a temporary folder that is not `held`: on Linux each
   * folder on the way is then opened with O_NOFOLLOW (_fs-write.ts,
   * writeSmallPinned). Elsewhere only the way to that folder is checked
   * for symlinks, not the folders inside it: this run made them moments
   * ago in a folder with a random name, and one made by someone else
   * meanwhile could as well be made between a check and the write.
   * Checking each of them cost every file of a fresh publish an lstat of
   * its folder (the way to the temporary folder is checked once per batch).
   */
  staging?: string;
  /**
   * Instead of `staging`: the temporary folder `target` is in is held open
   * by the calling thread and nobody else can enter it (_fs-staging.ts);
   * this is the path that names it through its descriptor, and `target`
   * is inside it. Nothing on the way is checked.
   */
  held?: string;
  /** With `staging`: the private folder it is in, as made (see Staged.made). */
  made?: FolderId;
  /** Answer with the new file's token (StorageDriver.write); a batch's writes need none. */
  token?: true;
}

/**
 * A worker's answer to one write, at the write's place in its batch: null
 * when done, the new token when one was asked for, or the error to rethrow
 * here. No ids: a worker answers each batch whole, in order, and the
 * calling thread keeps each batch's callbacks in that order.
 */
export type SmallWriteAnswer =
  | null
  | VersionToken
  | { error: { code?: ErrorCode; message: string; paths: string[] } };

/**
 * What a worker is sent: small writes to do in order, a column per field
 * of SmallWrite, the write at index i in each (`staging`: null when not
 * staged). A structured clone of 64 writes as objects, a dozen
 * keys each, cost about twice these columns on the calling thread (a
 * scratch loop of 1,600 batches, 2026-12-01), and that clone was the
 * calling thread's largest cost in the writes of a fresh publish of C.
 */
export interface SmallWriteBatch {
  roots: string[];
  relPaths: string[];
  targets: string[];
  contents: OutputContent[];
  stagings: (string | null)[];
  helds: (string | null)[];
  mades: (FolderId | null)[];
  tokens: boolean[];
}
export type SmallWriteAnswers = SmallWriteAnswer[];

/** The writes of a batch as the worker runs them. */
export function writesOf(batch: SmallWriteBatch): SmallWrite[] {
  return batch.relPaths.map((relPath, i) => {
    const write: SmallWrite = {
      root: batch.roots[i] as string,
      relPath,
      target: batch.targets[i] as string,
      content: batch.contents[i] as OutputContent,
    };
    const staging = batch.stagings[i];
    if (staging != null) write.staging = staging;
    const held = batch.helds[i];
    if (held != null) write.held = held;
    const made = batch.mades[i];
    if (made != null) write.made = made;
    if (batch.tokens[i] === true) write.token = true;
    return write;
  });
}

/** The columns of `writes` (see SmallWriteBatch). */
export function batchOf(writes: readonly SmallWrite[]): SmallWriteBatch {
  const batch: SmallWriteBatch = {
    roots: [],
    relPaths: [],
    targets: [],
    contents: [],
    stagings: [],
    helds: [],
    mades: [],
    tokens: [],
  };
  for (const write of writes) {
    batch.roots.push(write.root);
    batch.relPaths.push(write.relPath);
    batch.targets.push(write.target);
    batch.contents.push(write.content);
    batch.stagings.push(write.staging ?? null);
    batch.helds.push(write.held ?? null);
    batch.mades.push(write.made ?? null);
    batch.tokens.push(write.token === true);
  }
  return batch;
}

const WARM_UP = 64;
const MAX_WORKERS = 4;

/**
 * How a write ends: with its token (null when none was asked for), or an
 * error. A callback, not a promise: see eachLimit (concurrency.ts).
 */
export type WriteDone = (error: Error | null, token: VersionToken | null) => void;

interface PoolWorker {
  worker: Worker;
  inFlight: number;
  /** Writes not sent yet: the next batch. */
  outbox: SmallWrite[];
  /** How each write of the outbox ends, at the same index. */
  outboxDone: WriteDone[];
  /**
   * How each write of each batch sent and not answered yet ends, oldest
   * batch first (at most MAX_BATCHES_SENT): a worker answers its batches in
   * the order it got them, each write's answer at its place in the batch.
   * (A map of pending writes by id had its share of the calling thread's
   * 0.14 s of map lookups in `perf` samples of a fresh publish of C.)
   */
  sent: WriteDone[][];
  /** A send of the outbox is scheduled for the end of this turn of the event loop. */
  sendScheduled: boolean;
}

const MAX_BATCHES_SENT = 2;

/**
 * Writes the executor keeps in flight on a filesystem (the driver's
 * writeConcurrency). Small outputs go to the write threads, and with 8 in
 * flight the threads sat idle 30 % of the time waiting for the next one: a
 * fresh publish of C (100,000 small files) took 9.3-9.5 s, and 7.4-7.7 s with
 * 64. The threads take writes in batches, which grow with this number: 13
 * writes on average with 64, 50 with 256 (C: 0.7 s less than 64 unbatched,
 * 2 alternating pairs). Large outputs meanwhile wait for one of the eight
 * places _fs-write.ts gives them.
 */
export const FS_WRITE_CONCURRENCY = 256;

/**
 * Each worker's share of the writes in flight, split into its two batch
 * places (64 with two workers): one batch of all of a worker's share would
 * leave its second place empty.
 */
function maxBatchWrites(workers: number): number {
  return Math.max(1, Math.floor(FS_WRITE_CONCURRENCY / (workers * MAX_BATCHES_SENT)));
}

/** Thrown back by `write` when the pool cannot take the write; the caller writes in-thread. */
export class PoolUnavailable extends Error {}

function directoryHash(relPath: string): number {
  const end = relPath.lastIndexOf("/");
  let hash = 0;
  for (let i = 0; i < end; i++) hash = (hash * 31 + relPath.charCodeAt(i)) >>> 0;
  return hash;
}

class WritePool {
  readonly #workers: PoolWorker[] = [];
  /** Writes submitted and not ended yet. */
  #waiting = 0;
  #broken = false;
  #mostInFlight = 0;

  readonly #maxBatch: number;

  constructor(size: number) {
    this.#maxBatch = maxBatchWrites(size);
    for (let i = 0; i < size; i++) this.#workers.push(this.#start());
  }

  get broken(): boolean {
    return this.#broken;
  }

  get size(): number {
    return this.#broken ? 0 : this.#workers.length;
  }

  /** The most writes sent to the pool and not ended at once, so far. */
  get mostInFlight(): number {
    return this.#mostInFlight;
  }

  /**
   * Send `request` to the write thread of its folder; `done` is called once,
   * later (never before this returns). A PoolUnavailable error hands the
   * write back: the caller does it on this thread.
   */
  submit(request: SmallWrite, done: WriteDone): void {
    if (this.#broken) {
      queueMicrotask(() => done(new PoolUnavailable(), null));
      return;
    }
    const target = this.#workers[
      directoryHash(request.relPath) % this.#workers.length
    ] as PoolWorker;
    if (++this.#waiting > this.#mostInFlight) this.#mostInFlight = this.#waiting;
    if (target.inFlight++ === 0) target.worker.ref();
    target.outbox.push(request);
    target.outboxDone.push(done);
    this.#scheduleSend(target);
  }

  /**
   * Send the outbox at the end of this turn of the event loop, when the worker
   * has room for another batch: every write asked for until then joins it.
   */
  #scheduleSend(target: PoolWorker): void {
    if (target.sendScheduled || target.sent.length >= MAX_BATCHES_SENT) return;
    target.sendScheduled = true;
    setImmediate(() => {
      target.sendScheduled = false;
      // A pool that broke meanwhile has handed these writes back already (#break).
      while (!this.#broken && target.sent.length < MAX_BATCHES_SENT && target.outbox.length > 0) {
        const writes = target.outbox.splice(0, this.#maxBatch);
        const dones = target.outboxDone.splice(0, writes.length);
        try {
          target.worker.postMessage(batchOf(writes));
        } catch {
          // Content that cannot cross threads: this batch never left, so the
          // pool stops taking writes and its writes go back to their callers.
          this.#break();
          this.#handBack(dones);
          return;
        }
        target.sent.push(dones);
      }
    });
  }

  #start(): PoolWorker {
    const entry: PoolWorker = {
      worker: new Worker(new URL("./_fs-write-worker.js", import.meta.url)),
      inFlight: 0,
      outbox: [],
      outboxDone: [],
      sent: [],
      sendScheduled: false,
    };
    entry.worker.unref();
    entry.worker.on("message", (answers: SmallWriteAnswers) => {
      const dones = entry.sent.shift() ?? [];
      for (let i = 0; i < dones.length; i++) {
        this.#settle(entry, dones[i] as WriteDone, answers[i]);
      }
      if (this.#broken) this.#retireIfIdle(entry);
      else this.#scheduleSend(entry);
    });
    // A worker that dies takes no write down with it: the caller redoes its
    // writes in-thread (each is atomic, so a half-done one left only a temp
    // file, as a crash would).
    // The pool breaks before any write is handed back: a caller that writes
    // it on this thread at once and asks for the next must find it broken.
    const died = () => {
      const dones = entry.sent.flat();
      entry.sent = [];
      this.#break();
      this.#handBack(dones);
    };
    entry.worker.on("error", died);
    entry.worker.on("exit", died);
    // An answer that cannot be read here: its writes are done again on this
    // thread (same bytes, atomic), while the worker, alive, finishes the batch
    // it may have started next before it ends.
    entry.worker.on("messageerror", () => {
      const dones = entry.sent.shift() ?? [];
      this.#break();
      this.#handBack(dones);
      this.#retireIfIdle(entry);
    });
    return entry;
  }

  #settle(entry: PoolWorker, done: WriteDone, answer: SmallWriteAnswer | undefined): void {
    // Writes handed back are never counted down, so a worker may stay
    // referenced after the pool broke: the pool ends every worker once it
    // has no batch left (#break).
    if (--entry.inFlight === 0) entry.worker.unref();
    this.#waiting--;
    if (answer === null || typeof answer === "string") {
      done(null, answer);
      return;
    }
    if (answer === undefined) {
      // A batch answered short: a bug in the worker, never taken for success.
      done(new Error("a write thread sent no answer for this write"), null);
      return;
    }
    const { code, message, paths } = answer.error;
    done(
      code === undefined ? new Error(message) : new DistributorError(code, message, { paths }),
      null,
    );
  }

  /** End these writes with PoolUnavailable: their callers write them on this thread. */
  #handBack(dones: readonly WriteDone[]): void {
    for (const done of dones) {
      this.#waiting--;
      done(new PoolUnavailable(), null);
    }
  }

  /**
   * A worker died or a batch could not be sent: the pool stops taking writes,
   * and the writes no worker has yet go back to their callers. The batches the
   * other workers are running are left to finish and are answered as usual;
   * each worker ends once it has answered them. Stopping those workers at once
   * instead could cut a write between its temp file and its rename, and leave
   * the temp file in a folder the run then publishes.
   */
  #break(): void {
    if (this.#broken) return;
    this.#broken = true;
    for (const entry of this.#workers) {
      const dones = entry.outboxDone;
      entry.outbox = [];
      entry.outboxDone = [];
      this.#handBack(dones);
      this.#retireIfIdle(entry);
    }
  }

  /** After the pool broke: end a worker that has no batch left to answer. */
  #retireIfIdle(entry: PoolWorker): void {
    if (entry.sent.length === 0) void entry.worker.terminate();
  }

  /** Stop every worker; a write in progress finishes its current system call first. */
  async stop(): Promise<void> {
    this.#broken = true;
    await Promise.allSettled(this.#workers.map(({ worker }) => worker.terminate()));
    for (const entry of this.#workers) {
      const dones = [...entry.sent.flat(), ...entry.outboxDone];
      entry.sent = [];
      entry.outbox = [];
      entry.outboxDone = [];
      for (const done of dones) done(stoppedError(), null);
    }
  }
}

let pool: WritePool | undefined;
let smallWrites = 0;
let stopped = false;

/** Why a write or delete did not happen once `stopWrites` was called. */
export function stoppedMessage(): string {
  return "Writing stopped: the process is exiting on a signal. Run again to finish.";
}

function stoppedError(): DistributorError {
  return new DistributorError("storage_error", stoppedMessage());
}

/** Whether `stopWrites` has been called. */
export function writesStopped(): boolean {
  return stopped;
}

/** Throws once `stopWrites` has been called: no new write may start. */
export function assertWritesAllowed(): void {
  if (stopped) throw stoppedError();
}

/**
 * Stop all filesystem writes of this process: no new write starts, and writes
 * in flight on worker threads end. Signal handlers call this before releasing
 * the lock, so that nothing is written under a root after its lock is gone.
 */
export async function stopWrites(): Promise<void> {
  stopped = true;
  await pool?.stop();
}

/**
 * The pool to send a small write to, or null to write it in-thread (too few
 * small writes so far, one core only, or the pool broke).
 */
export function writePool(): WritePool | null {
  if (pool) return pool.broken ? null : pool;
  if (++smallWrites <= WARM_UP) return null;
  const size = Math.min(availableParallelism(), MAX_WORKERS);
  if (size < 2) return null;
  try {
    pool = new WritePool(size);
  } catch {
    return null;
  }
  return pool;
}

/** Workers now taking small writes (0: all in-thread so far); for tests and diagnostics. */
export function writePoolSize(): number {
  return pool?.size ?? 0;
}

/** The most small writes the pool had at once (0: no pool yet); for tests and diagnostics. */
export function writePoolMostInFlight(): number {
  return pool?.mostInFlight ?? 0;
}
