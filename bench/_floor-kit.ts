/**
 * What the two floor programs share (bench/rerun-floor.ts and
 * bench/publish-floor.ts): the manifest's field checks, hashing a file in
 * chunks, and asking a worker.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
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

/** Post `job` to `worker` and wait for its one answer. */
export function ask<T>(worker: Worker, job: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    worker.once("error", onError);
    worker.once("message", (answer: T) => {
      worker.off("error", onError);
      resolve(answer);
    });
    worker.postMessage(job);
  });
}
