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
