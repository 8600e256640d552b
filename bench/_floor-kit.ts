/**
 * What the two floor programs share (bench/rerun-floor.ts and
 * bench/publish-floor.ts): the manifest's field checks, hashing a file in
 * chunks, and asking a worker.
 */
import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import { cleanPathProblem } from "../src/paths.js";

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

export const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function clean(path: unknown): boolean {
  return typeof path === "string" && cleanPathProblem(path) === null;
}

/** Entries that break a field rule of SPEC §2, or repeat a path. */
export function rejectedFiles(files: readonly ManifestFile[]): number {
  let rejected = 0;
  const seen = new Set<string>();
  for (const file of files) {
    const ok =
      clean(file.path) &&
      !seen.has(file.path) &&
      Number.isSafeInteger(file.size) &&
      file.size >= 0 &&
      typeof file.sha256 === "string" &&
      DIGEST.test(file.sha256);
    if (!ok) rejected++;
    seen.add(file.path);
  }
  return rejected;
}

/**
 * `sha256:<hex>` of the file at `path`, read in chunks into `buffer`; each
 * chunk is also handed to `onChunk` (a copy being written) before the next read.
 */
export function sha256OfFile(
  path: string,
  buffer: Buffer,
  onChunk?: (chunk: Buffer) => void,
): string {
  const fd = openSync(path, "r");
  try {
    const hash = createHash("sha256");
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) {
      const chunk = buffer.subarray(0, n);
      hash.update(chunk);
      onChunk?.(chunk);
    }
    return `sha256:${hash.digest("hex")}`;
  } finally {
    closeSync(fd);
  }
}

export function sha256Of(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * Post `job` to `worker` and wait for its one answer; a worker that fails or
 * exits first rejects. The promise is marked handled at once, so that a
 * failure while the caller is still busy elsewhere does not replace the
 * caller's own error; awaiting it still throws.
 */
export function ask<T>(worker: Worker, job: unknown): Promise<T> {
  const answer = new Promise<T>((resolve, reject) => {
    const onError = (error: Error) => settle(() => reject(error));
    const onExit = (code: number) =>
      settle(() => reject(new Error(`floor worker exited (${code}) before answering`)));
    const onMessage = (value: T) => settle(() => resolve(value));
    const settle = (then: () => void) => {
      worker.off("error", onError).off("exit", onExit).off("message", onMessage);
      then();
    };
    worker.once("error", onError).once("exit", onExit).once("message", onMessage);
    worker.postMessage(job);
  });
  answer.catch(() => {});
  return answer;
}

/**
 * The lock a writer takes under SPEC §6 after verification: a file created
 * exclusively, written and synced; `release` removes it.
 */
export function takeLock(root: string): { release: () => void } {
  const lock = `${root}/.distributor.lock`;
  const fd = openSync(lock, "wx");
  try {
    writeSync(fd, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() }));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { release: () => unlinkSync(lock) };
}
