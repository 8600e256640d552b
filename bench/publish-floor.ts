/**
 * The least work a fresh publish of a bundle with Markdown can do on Node.js:
 * a reference for cases 1 and 5a, not a second implementation, and less than the
 * contract asks. In the order SPEC §2 and §6 set, each part the cheapest way
 * found:
 *
 * 1. verification: two worker threads read and hash every file that is not
 *    Markdown (`.md`; the workloads have no `.markdown`), keeping the bytes
 *    of those up to 256 KB, while this thread reads and hashes the Markdown;
 * 2. then the lock (a file created exclusively and synced), a state
 *    recording the copies, written durably (temporary file, fsync, rename,
 *    fsync of the folder), and the copies, straight into their folders: the
 *    workers write the bytes they kept and copy the large files, hashing
 *    them again on the way (distributor publishes only bytes it verified),
 *    while this thread renders the Markdown with distributor's own
 *    markdown-it setup for SPEC §4's syntax, the fastest found;
 * 3. then the state of every output, durably, and the HTML.
 *
 * Less than the contract asks: no temporary file and rename per output
 * (SPEC §11), a bare body per document (no title, style or link rewriting),
 * no config, layout, plan or report, and a root that must not exist yet.
 * Two other orders measured slower on M (docs/performance.md, case 1):
 * rendering during verification and writing everything after one state (as
 * distributor does), and the workers rendering too once they have hashed.
 *
 *   node dist/bench/publish-floor.js <bundle dir> <new destination root>
 *
 * prints what it wrote and its phase marks (milliseconds since the process
 * started) as JSON.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import type { Worker } from "node:worker_threads";
import { createRenderer } from "../src/transform/markdown-to-html.js";
import {
  ask,
  type FloorManifest,
  floorCatalog,
  floorPage,
  floorWorkers,
  type ManifestFile,
  rejectedFiles,
  runFloorModule,
  sha256Of,
  sha256OfFile,
  takeLock,
} from "./_floor-kit.js";

export interface PublishFloorResult {
  /** Outputs written (the bundle's files, with each Markdown file as HTML). */
  outputs: number;
  /** Files whose bytes did not hash to the listed digest, and entries the field checks reject. */
  bad: number;
  /** Milliseconds since the process started when each phase ended (state: the first one). */
  marks: { verified: number; state: number; written: number };
}

/** Files up to this size are kept from verification and written from memory. */
const KEEP_MAX_BYTES = 256 * 1024;
const CHUNK_BYTES = 1 << 20;

type Job = { verify: ManifestFile[]; bundle: string } | { write: string };

/** A worker's state between its two jobs: the files it verified, and the bytes it kept. */
const kept = new Map<string, Buffer>();
let verified: { files: ManifestFile[]; bundle: string } | undefined;

/** Hash every file (keeping small ones); the number that did not match. */
export function verifyAll(files: readonly ManifestFile[], bundle: string): number {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let bad = 0;
  for (const file of files) {
    const from = `${bundle}/${file.path}`;
    if (file.size <= KEEP_MAX_BYTES) {
      const bytes = readFileSync(from);
      if (sha256Of(bytes) !== file.sha256) bad++;
      kept.set(file.path, bytes);
    } else if (sha256OfFile(from, buffer) !== file.sha256) bad++;
  }
  verified = { files: [...files], bundle };
  return bad;
}

/** Write what was verified under `root`; large files hashed again as they are copied. */
export function writeAll(root: string): number {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let bad = 0;
  for (const file of verified?.files ?? []) {
    const to = `${root}/${file.path}`;
    const bytes = kept.get(file.path);
    if (bytes) {
      writeFileSync(to, bytes, { flag: "wx" });
      continue;
    }
    const out = openSync(to, "wx");
    try {
      const digest = sha256OfFile(`${verified?.bundle}/${file.path}`, buffer, (chunk) => {
        writeSync(out, chunk);
      });
      if (digest !== file.sha256) bad++;
    } finally {
      closeSync(out);
    }
  }
  return bad;
}

function runJob(job: Job): number {
  return "verify" in job ? verifyAll(job.verify, job.bundle) : writeAll(job.write);
}

/** Two halves of similar cost: large files first, each to the lighter half, then the rest. */
function halvesOf(files: readonly ManifestFile[]): [ManifestFile[], ManifestFile[]] {
  const halves: [ManifestFile[], ManifestFile[]] = [[], []];
  const cost = [0, 0];
  const large = files.filter((file) => file.size > KEEP_MAX_BYTES);
  const small = files.filter((file) => file.size <= KEEP_MAX_BYTES);
  for (const file of [...large, ...small]) {
    const k = (cost[0] ?? 0) <= (cost[1] ?? 0) ? 0 : 1;
    halves[k].push(file);
    cost[k] = (cost[k] ?? 0) + file.size + 32 * 1024;
  }
  return halves;
}

/** Replace `name` in `folder` atomically and durably, as distributor writes its state. */
function writeDurably(folder: string, name: string, text: string): void {
  const temporary = `${folder}/${name}.tmp`;
  const fd = openSync(temporary, "w");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, `${folder}/${name}`);
  const dir = openSync(folder, "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

export async function publishFloor(bundle: string, root: string): Promise<PublishFloorResult> {
  const workers = floorWorkers(import.meta.url);
  try {
    // 1. Verification on the workers; the Markdown read, hashed and rendered here meanwhile.
    const manifestBytes = readFileSync(`${bundle}/manifest.json`);
    const manifest = JSON.parse(manifestBytes.toString("utf8")) as FloorManifest;
    let bad = rejectedFiles(manifest.files);
    const markdown = manifest.files.filter((file) => file.path.endsWith(".md"));
    const others = manifest.files.filter((file) => !file.path.endsWith(".md"));
    const checked = Promise.all(
      halvesOf(others).map((half, k) =>
        ask<number>(workers[k] as Worker, { verify: half, bundle } satisfies Job),
      ),
    );
    // The Markdown is verified here (read and hashed) and rendered only after the
    // state: rendered here during verification, it left the workers idle.
    const sources = markdown.map((file) => {
      const bytes = readFileSync(`${bundle}/${file.path}`);
      if (sha256Of(bytes) !== file.sha256) bad++;
      return bytes;
    });
    for (const count of await checked) bad += count;
    const verifiedAt = performance.now();
    if (bad > 0) return { outputs: 0, bad, marks: { verified: verifiedAt, state: 0, written: 0 } };

    // 2. A state recording the copies, then the copies on the workers while the
    // Markdown renders here. Each state records every path written after it,
    // as the executor's claim does.
    const catalog = floorCatalog(manifest, manifestBytes);
    const copies = others.map(catalog.copy);
    const writeState = (records: { path: string }[]) =>
      writeDurably(root, ".distributor.json", catalog.stateText(records));
    mkdirSync(root); // a new root: fails if it exists
    const lock = takeLock(root);
    writeState([...copies]);
    const stateAt = performance.now();

    const folders = new Set<string>();
    for (const { path } of manifest.files) {
      const slash = path.lastIndexOf("/");
      if (slash > 0) folders.add(path.slice(0, slash));
    }
    for (const folder of folders) mkdirSync(`${root}/${folder}`, { recursive: true });
    const written = Promise.all(
      workers.map((worker) => ask<number>(worker, { write: root } satisfies Job)),
    );
    const md = createRenderer(false);
    const html = markdown.map((file, i) => floorPage(md, file, sources[i] as Buffer));
    const records = [
      ...copies,
      ...html.map((page, i) => catalog.page(page, markdown[i] as ManifestFile)),
    ];
    // 3. The state of every output, then the HTML.
    writeState(records);
    for (const output of html)
      writeFileSync(`${root}/${output.path}`, output.bytes, { flag: "wx" });
    for (const count of await written) bad += count;
    lock.release();
    return {
      outputs: records.length,
      bad,
      marks: { verified: verifiedAt, state: stateAt, written: performance.now() },
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

await runFloorModule({
  url: import.meta.url,
  usage: "node dist/bench/publish-floor.js <bundle dir> <new destination root>",
  runJob,
  floor: publishFloor,
  exitCode: (report) => (report.bad === 0 ? 0 : 1),
});
