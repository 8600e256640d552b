/**
 * What the floor programs share (bench/rerun-floor.ts, bench/publish-floor.ts
 * and bench/s3-publish-floor.ts): the manifest's field checks, hashing a file
 * in chunks, the state a publish writes, their worker threads, and their
 * entry point.
 */
import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { sha256Hex } from "../src/hashing.js";
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
    return sha256OfOpenFile(fd, buffer, onChunk);
  } finally {
    closeSync(fd);
  }
}

/**
 * `sha256OfFile` of an open file. One that a single read does not fill the
 * buffer with is whole (a short read of a regular file is its end): it is
 * hashed in one call, with no hash object and no second read that returns
 * nothing, as distributor's checker does; that took a tenth off the rerun
 * floor of C's 100,000 small files (docs/performance.md, 5b).
 */
export function sha256OfOpenFile(
  fd: number,
  buffer: Buffer,
  onChunk?: (chunk: Buffer) => void,
): string {
  let n = readSync(fd, buffer);
  if (n < buffer.length) {
    const whole = buffer.subarray(0, n);
    onChunk?.(whole);
    return `sha256:${sha256Hex(whole)}`;
  }
  const hash = createHash("sha256");
  for (; n > 0; n = readSync(fd, buffer)) {
    const chunk = buffer.subarray(0, n);
    hash.update(chunk);
    onChunk?.(chunk);
  }
  return `sha256:${hash.digest("hex")}`;
}

export function sha256Of(bytes: Uint8Array): string {
  return `sha256:${sha256Hex(bytes)}`;
}

/** A bundle's manifest as the floors read it. */
export interface FloorManifest {
  id: string;
  created: string;
  files: ManifestFile[];
}

/** A rendered document, as the publish floors write it. */
export interface FloorPage {
  path: string;
  bytes: Buffer;
  sha256: string;
}

/**
 * The records a publish floor's state holds, and its text: SPEC §5's shape,
 * every output owned by one pipeline and destination, stamped with one time.
 */
export function floorCatalog(manifest: FloorManifest, manifestBytes: Buffer) {
  const now = `${new Date().toISOString().slice(0, 19)}Z`;
  const source = { id: manifest.id, digest: sha256Of(manifestBytes), created: manifest.created };
  const owner = { pipeline_id: "bench", destination_id: "out", source };
  const times = { created_at: now, updated_at: now };
  return {
    copy: (file: ManifestFile) => ({
      path: file.path,
      ...owner,
      kind: "source",
      sha256: file.sha256,
      size: file.size,
      ...times,
    }),
    page: (page: FloorPage, from: ManifestFile) => ({
      path: page.path,
      ...owner,
      kind: "generated",
      source_path: from.path,
      transform: "markdown_to_html",
      sha256: page.sha256,
      size: page.bytes.length,
      ...times,
    }),
    /** The state's text, its records sorted by path (sorts `records` in place). */
    stateText: (records: { path: string }[]) => {
      records.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      const state = {
        schema_version: 4,
        distributor_version: "floor",
        ...times,
        state: { mode: "catalog" },
        outputs: records,
      };
      return `${JSON.stringify(state, null, 2)}\n`;
    },
  };
}

/** A Markdown file rendered by `md` into a bare HTML document. */
export function floorPage(
  md: { render: (text: string) => string },
  from: ManifestFile,
  text: Buffer,
): FloorPage {
  const body = md.render(text.toString("utf8"));
  const bytes = Buffer.from(`<!doctype html>\n<html><body>\n${body}</body></html>\n`);
  return { path: `${from.path.slice(0, -".md".length)}.html`, bytes, sha256: sha256Of(bytes) };
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

/** What marks a worker thread as one of a floor's own (see floorWorkers). */
const FLOOR_WORKER = "distributorFloorWorker";

/** Two worker threads running the floor module at `moduleUrl` (see runFloorModule). */
export function floorWorkers(moduleUrl: string): Worker[] {
  return [0, 1].map(() => new Worker(new URL(moduleUrl), { workerData: { [FLOOR_WORKER]: true } }));
}

/**
 * The entry of a floor module, called at its top level with its own
 * `import.meta.url`. In one of its floorWorkers it answers each job with
 * `runJob`. Run as a script with a bundle and a destination root, it runs
 * `floor` and prints the report as JSON, phase marks rounded to milliseconds;
 * the exit code is `exitCode(report)`. Imported (tests, the benchmark), it
 * does nothing.
 */
export async function runFloorModule<J, R extends { marks: Record<string, number> }>(floorModule: {
  url: string;
  usage: string;
  /** Absent for a floor that starts no worker threads. */
  runJob?: (job: J) => unknown;
  floor: (bundle: string, root: string) => Promise<R>;
  exitCode?: (report: R) => number;
}): Promise<void> {
  const { runJob } = floorModule;
  if (runJob && !isMainThread && (workerData as Record<string, unknown> | null)?.[FLOOR_WORKER]) {
    parentPort?.on("message", (job: J) => parentPort?.postMessage(runJob(job)));
    return;
  }
  if (!isMainThread || floorModule.url !== pathToFileURL(process.argv[1] ?? "").href) return;
  const [bundle, root] = process.argv.slice(2);
  if (!bundle || !root) {
    console.error(`usage: ${floorModule.usage}`);
    process.exit(2);
  }
  const report = await floorModule.floor(bundle, root);
  const marks = Object.fromEntries(
    Object.entries(report.marks).map(([phase, ms]) => [phase, Math.round(ms)]),
  );
  console.log(JSON.stringify({ ...report, marks }));
  process.exit(floorModule.exitCode?.(report) ?? 0);
}
