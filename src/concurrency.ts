/** Bounded concurrency for I/O-heavy work, shared by every module. */
import { availableParallelism } from "node:os";

/**
 * Default bound for I/O on many files (hashing destination outputs for
 * `run --verify`; other callers pass their own limit): enough to
 * keep a disk or a connection pool busy, few enough that thousands of files never
 * hold thousands of handles.
 */
const FILE_CONCURRENCY = Math.min(8, Math.max(4, availableParallelism()));

/**
 * Map `items` through `fn` with at most `limit` calls in flight. Results keep the
 * order of `items`. After a rejection no new item starts, and the call rejects with
 * it once in-flight calls settle; callers that want every failure should catch inside `fn`.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  fn: (item: T, index: number) => Promise<R>,
  options: { limit?: number } = {},
): Promise<R[]> {
  const limit = Math.max(1, options.limit ?? FILE_CONCURRENCY);
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        // Stop handing out work: the call fails anyway.
        next = items.length;
        throw error;
      }
    }
  };
  const workers = Array.from({ length: Math.min(limit, items.length) }, worker);
  const settled = await Promise.allSettled(workers);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return results;
}

/**
 * A gate for calls that must not all run at once, whoever starts them: the
 * returned function runs `fn` when fewer than `limit` calls are running, and
 * otherwise waits its turn (first come, first served). A call that throws
 * frees its place like one that returns.
 */
export function limiter(limit: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running < limit) running++;
    // A waiter is handed the place of the call that ends, so none is lost or added.
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** How a step of `eachLimit` says it ended: with nothing (or null) on success, else with the error. */
export type StepDone = (error?: unknown) => void;

/**
 * mapLimit for steps that end through a callback: `start(index, done)` for
 * each index from 0 to `count - 1`, at most `limit` started and not done,
 * in order. After the first failure (a `done(error)`, or a throw from `start`
 * or `onDone`) no new step starts, and the call rejects with it once every
 * started step is done. `onDone(index)` is called for each step that
 * succeeded, as it ends.
 *
 * No promise per step: a fresh publish of 100,000 small files spent about
 * 1.3 s of the calling thread's CPU resolving the chain of awaits each write
 * went through, on the thread that also hands the write threads their work
 * (docs/performance.md, item 58). A step may call `done` before `start`
 * returns (a write done on this thread); `done` counts only its first call.
 */
export function eachLimit(
  count: number,
  limit: number,
  start: (index: number, done: StepDone) => void,
  onDone?: (index: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let next = 0;
    let running = 0;
    let failed = false;
    let failure: unknown;
    let pumping = false;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      failure = error;
    };
    const ended = (index: number, error: unknown): void => {
      running--;
      if (error != null) fail(error);
      else if (onDone) {
        try {
          onDone(index);
        } catch (thrown) {
          fail(thrown);
        }
      }
      pump();
    };
    const pump = (): void => {
      // A step done inside `start` comes back here; the loop below goes on.
      if (pumping) return;
      pumping = true;
      while (!failed && running < limit && next < count) {
        const index = next++;
        running++;
        let called = false;
        const done: StepDone = (error) => {
          if (called) return;
          called = true;
          ended(index, error);
        };
        try {
          start(index, done);
        } catch (error) {
          // Only once: a step that called done and then threw has ended already.
          if (!called) {
            called = true;
            ended(index, error ?? new Error("a step threw nothing"));
          } else fail(error);
        }
      }
      pumping = false;
      if (running === 0 && (failed || next >= count)) {
        if (failed) reject(failure);
        else resolve();
      }
    };
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`eachLimit: limit ${limit}`);
    pump();
  });
}
