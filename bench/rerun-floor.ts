/**
 * The least work an unchanged rerun can do on Node.js: a reference for cases
 * 2 and 5b, not a second implementation, and less than the contract asks.
 * In the order SPEC §6 sets, each part the cheapest way found:
 *
 * 1. verification: the manifest is parsed; then two worker threads open,
 *    check and hash every listed file (SPEC §2's regular file with no
 *    symlink on the way, checked the cheapest way: see verifyAll) while
 *    this thread hashes the manifest (the source digest), parses the state,
 *    and checks the fields of both (the clean path rules with distributor's
 *    own check, the others by type or a regular expression each; not every
 *    rule: no unknown-field check, no ownership);
 * 2. then the lock (a file created exclusively and synced), the state read
 *    again and compared byte for byte, and the destination listed with each
 *    file's size, on this thread and one worker;
 * 3. then each listed file of the bundle is compared with its record (digest,
 *    size, source identity) and its listed size. No config, no plan, no report.
 *
 * An output is taken to be the bundle file of the same path, which is every
 * output of C (5b); on M (case 2) the 1,000 Markdown files' HTML outputs are
 * not checked at all (distributor looks them up in its render cache).
 * docs/performance.md (case 5b) compares it with `sha256sum` and distributor:
 *
 *   node dist/bench/rerun-floor.js <bundle dir> <destination root>
 *
 * prints what it compared and its phase marks (milliseconds since the process
 * started) as JSON.
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import { NO_FOLLOW_READ } from "../src/bundle/_file-checks.js";
import {
  ask,
  clean,
  DIGEST,
  floorWorkers,
  type ManifestFile,
  rejectedFiles,
  runFloorModule,
  sha256Of,
  sha256OfOpenFile,
  takeLock,
} from "./_floor-kit.js";

export interface RerunFloorResult {
  /** Files listed in the manifest. */
  files: number;
  /** Of those: hashed to their listed digest, recorded with it, and stored with the recorded size. */
  same: number;
  /** Manifest entries or state records that the field checks reject. */
  rejected: number;
  /** Files found under the destination root (the state included). */
  listed: number;
  /** Milliseconds since the process started when each phase ended. */
  marks: { parsed: number; verified: number; listed: number; compared: number };
}

type Job = { verify: string[]; root: string } | { list: string[]; root: string };

/** What verifyAll gives a file SPEC §2 rejects: no digest matches it. */
const NOT_VERIFIED = "not verified";
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const STATE_FILE = ".distributor.json";

interface StateRecord {
  path: string;
  pipeline_id: string;
  destination_id: string;
  source: { id: string; digest: string; created: string };
  kind: string;
  sha256: string;
  size: number;
  created_at: string;
  updated_at: string;
}

function rejectedRecords(records: readonly StateRecord[]): number {
  let rejected = 0;
  for (const record of records) {
    const source = record.source;
    const ok =
      clean(record.path) &&
      typeof record.pipeline_id === "string" &&
      typeof record.destination_id === "string" &&
      typeof source === "object" &&
      source !== null &&
      typeof source.id === "string" &&
      DIGEST.test(source.digest) &&
      TIMESTAMP.test(source.created) &&
      (record.kind === "source" || record.kind === "generated") &&
      DIGEST.test(record.sha256) &&
      Number.isSafeInteger(record.size) &&
      TIMESTAMP.test(record.created_at) &&
      TIMESTAMP.test(record.updated_at);
    if (!ok) rejected++;
  }
  return rejected;
}

/** Every non-folder under `root/dir` as path, size, path, size, … (the cheapest shape to send). */
function listInto(root: string, dir: string, out: (string | number)[]): void {
  for (const entry of readdirSync(dir === "" ? root : `${root}/${dir}`, { withFileTypes: true })) {
    const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) listInto(root, path, out);
    else out.push(path, lstatSync(`${root}/${path}`).size);
  }
}

/**
 * The digest of each file at `paths` under `root`, or NOT_VERIFIED for one
 * that SPEC §2 rejects whatever its bytes: a symlink, not a regular file, or
 * under a folder that is a symlink or not a folder. The least those rules
 * cost on Node.js: the open refuses a symlink (O_NOFOLLOW), one `fstat` of
 * the open file, and one `lstat` per folder, remembered with its ancestors'.
 */
function verifyAll(root: string, paths: readonly string[]): string[] {
  const buffer = Buffer.allocUnsafe(1 << 20);
  const folders = new Map<string, boolean>();
  const folderOk = (folder: string): boolean => {
    let ok = folders.get(folder);
    if (ok === undefined) {
      const slash = folder.lastIndexOf("/");
      ok =
        (slash === -1 || folderOk(folder.slice(0, slash))) &&
        lstatSync(`${root}/${folder}`, { throwIfNoEntry: false })?.isDirectory() === true;
      folders.set(folder, ok);
    }
    return ok;
  };
  return paths.map((path) => {
    const slash = path.lastIndexOf("/");
    if (slash !== -1 && !folderOk(path.slice(0, slash))) return NOT_VERIFIED;
    let fd: number;
    try {
      fd = openSync(`${root}/${path}`, NO_FOLLOW_READ);
    } catch {
      return NOT_VERIFIED; // a symlink (ELOOP), or missing
    }
    try {
      return fstatSync(fd).isFile() ? sha256OfOpenFile(fd, buffer) : NOT_VERIFIED;
    } finally {
      closeSync(fd);
    }
  });
}

function runJob(job: Job): unknown {
  if ("verify" in job) return verifyAll(job.root, job.verify);
  const out: (string | number)[] = [];
  for (const dir of job.list) listInto(job.root, dir, out);
  return out;
}

export async function rerunFloor(bundle: string, root: string): Promise<RerunFloorResult> {
  const workers = floorWorkers(import.meta.url);
  try {
    // 1. Verification on the workers, once the manifest is parsed (its paths
    // make their jobs); its digest and the state parsed and checked here meanwhile.
    const manifestBytes = readFileSync(`${bundle}/manifest.json`);
    const manifest = JSON.parse(manifestBytes.toString("utf8")) as {
      id: string;
      created: string;
      files: ManifestFile[];
    };
    const files = manifest.files;
    // A half each, front and back: in a manifest listed in path order each
    // worker then meets mostly its own folders, and lstats each once.
    const middle = Math.ceil(files.length / 2);
    const paths = files.map((file) => file.path);
    const halves = [paths.slice(0, middle), paths.slice(middle)];
    const hashed = Promise.all(
      workers.map((worker, k) => ask<string[]>(worker, { verify: halves[k] ?? [], root: bundle })),
    );
    const identity = {
      id: manifest.id,
      digest: sha256Of(manifestBytes),
      created: manifest.created,
    };
    let rejected = rejectedFiles(files);
    const early = readFileSync(`${root}/${STATE_FILE}`);
    const state = JSON.parse(early.toString("utf8")) as { outputs: StateRecord[] };
    rejected += rejectedRecords(state.outputs);
    const records = new Map(state.outputs.map((record) => [record.path, record]));
    const parsed = performance.now();
    const digests = await hashed;
    const verified = performance.now();

    // 2. Under the lock: the state read again, then the root listed on two threads.
    // A floor's lock must never stay behind: distributor could not read it.
    const lock = takeLock(root);
    let same = 0;
    const sizes = new Map<string, number>();
    let listedAt = 0;
    try {
      if (!readFileSync(`${root}/${STATE_FILE}`).equals(early))
        throw new Error("the state changed");
      const top = readdirSync(root, { withFileTypes: true });
      const folders = top.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
      const there = ask<(string | number)[]>(workers[0] as Worker, {
        list: folders.filter((_, i) => i % 2 === 0),
        root,
      });
      const here: (string | number)[] = [];
      for (const entry of top) {
        if (!entry.isDirectory()) here.push(entry.name, lstatSync(`${root}/${entry.name}`).size);
      }
      for (const dir of folders.filter((_, i) => i % 2 === 1)) listInto(root, dir, here);
      for (const flat of [here, await there]) {
        for (let i = 0; i < flat.length; i += 2)
          sizes.set(flat[i] as string, flat[i + 1] as number);
      }
      listedAt = performance.now();

      // 3. Each file against its record (digest, size, source identity) and its listed size.
      files.forEach((file, i) => {
        const record = records.get(file.path);
        const digest = i < middle ? digests[0]?.[i] : digests[1]?.[i - middle];
        if (
          digest === file.sha256 &&
          record?.sha256 === file.sha256 &&
          record.size === file.size &&
          record.source?.id === identity.id &&
          record.source.digest === identity.digest &&
          record.source.created === identity.created &&
          sizes.get(file.path) === record.size
        ) {
          same++;
        }
      });
    } finally {
      lock.release();
    }
    const compared = performance.now();
    return {
      files: files.length,
      same,
      rejected,
      listed: sizes.size,
      marks: { parsed, verified, listed: listedAt, compared },
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

await runFloorModule({
  url: import.meta.url,
  usage: "node dist/bench/rerun-floor.js <bundle dir> <destination root>",
  runJob,
  floor: rerunFloor,
});
