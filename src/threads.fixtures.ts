/** A job module for threads.test.ts: answers with the thread it ran on, or fails as asked. */
import { threadId } from "node:worker_threads";
import type { JobResult } from "./threads.js";

export function runJob(input: unknown): JobResult {
  const { fail, waitMs = 0 } = input as { fail?: "throw" | "exit"; waitMs?: number };
  if (fail === "throw") throw new Error("job failed on purpose");
  if (fail === "exit") process.exit(3);
  // Keeps this helper busy, so that jobs started together need distinct threads.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, waitMs);
  return { value: { threadId } };
}
