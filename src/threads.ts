/**
 * One job on a worker thread, with this thread as the fallback: used where a
 * worker only speeds things up (bundle verification, the filesystem listing).
 * A worker that cannot start (thread limits), fails, dies or answers with
 * something `accept` rejects never fails the caller: the job runs here instead,
 * which then also reports any error the job meets.
 */
import { Worker } from "node:worker_threads";

export function onWorkerOrHere<T>(
  entry: URL,
  workerData: unknown,
  accept: (message: unknown) => T | null,
  here: () => T | Promise<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fallback = () => {
      if (settled) return;
      settled = true;
      Promise.resolve().then(here).then(resolve, reject);
    };
    let worker: Worker;
    try {
      worker = new Worker(entry, { workerData });
    } catch {
      fallback();
      return;
    }
    worker.once("message", (message: unknown) => {
      if (settled) return;
      const result = accept(message);
      if (result === null) return fallback();
      settled = true;
      resolve(result);
    });
    worker.once("error", fallback);
    worker.once("exit", fallback);
  });
}
