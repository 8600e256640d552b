/**
 * Deterministic benchmark workloads (issue #5): source bundles with a valid
 * manifest.json, generated from a seed into a temp folder (BENCH_DIR, else the
 * OS temp dir), never into the repository. A set already generated with the
 * same seed and spec is reused as it is.
 *
 * Binary content comes from an AES-256-CTR keystream keyed by the seed: as
 * deterministic as a PRNG and fast enough for gigabytes.
 */
import { createCipheriv, createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { markdownDocument, type Random, randomInt, seededRandom } from "./_markdown.js";

/** The shape of one workload set. */
export interface SetSpec {
  name: "S" | "M" | "L" | "C";
  /** Files of 1–20 KB (C: 200 B–2 KB). */
  smallFiles: number;
  /** How many of the small files are Markdown. */
  markdownFiles: number;
  /** Large files sharing the bytes left over to reach `totalBytes`. */
  largeFiles: number;
  totalBytes: number;
  /** Size range of the small files. */
  smallRange: [number, number];
}

const KB = 1024;
const MB = 1024 * KB;

export const SETS: Record<SetSpec["name"], SetSpec> = {
  S: {
    name: "S",
    smallFiles: 996,
    markdownFiles: 100,
    largeFiles: 4,
    totalBytes: 50 * MB,
    smallRange: [KB, 20 * KB],
  },
  M: {
    name: "M",
    smallFiles: 9992,
    markdownFiles: 1000,
    largeFiles: 8,
    totalBytes: 500 * MB,
    smallRange: [KB, 20 * KB],
  },
  L: {
    name: "L",
    smallFiles: 0,
    markdownFiles: 0,
    largeFiles: 1,
    totalBytes: 2048 * MB,
    smallRange: [KB, KB],
  },
  C: {
    name: "C",
    smallFiles: 100_000,
    markdownFiles: 0,
    largeFiles: 0,
    totalBytes: 0,
    smallRange: [200, 2 * KB],
  },
};

export const DEFAULT_SEED = 20260604;
const GENERATOR_VERSION = 1;
const BINARY_EXTENSIONS = [".png", ".json", ".css", ".js", ".txt", ".pdf", ".svg", ".csv"];

export interface ManifestEntry {
  path: string;
  size: number;
  sha256: string;
}

/** A generated bundle on disk. */
export interface Workload {
  dir: string;
  files: ManifestEntry[];
  bytes: number;
}

/** Where generated sets live: `$BENCH_DIR`, else `<os temp>/distributor-bench`. */
export function benchDir(): string {
  return process.env.BENCH_DIR ?? path.join(os.tmpdir(), "distributor-bench");
}

function keystream(seed: number, label: string) {
  const key = createHash("sha256").update(`${seed}:${label}`).digest();
  const cipher = createCipheriv("aes-256-ctr", key, Buffer.alloc(16));
  return (size: number) => cipher.update(Buffer.alloc(size));
}

/** A nested folder path, 1–3 levels deep, `fanout` names per level. */
function folderFor(random: Random, fanout: number): string {
  const depth = randomInt(random, 1, 3);
  const names = ["sec", "part", "unit"];
  return Array.from(
    { length: depth },
    (_, i) => `${names[i]}-${randomInt(random, 0, fanout - 1)}`,
  ).join("/");
}

interface PlannedFile {
  path: string;
  size: number;
  markdown: boolean;
}

function planFiles(spec: SetSpec, random: Random): PlannedFile[] {
  const fanout = Math.max(4, Math.round(Math.cbrt(spec.smallFiles / 10)));
  const files: PlannedFile[] = [];
  for (let i = 0; i < spec.smallFiles; i++) {
    const markdown = i < spec.markdownFiles;
    const ext = markdown ? ".md" : BINARY_EXTENSIONS[i % BINARY_EXTENSIONS.length];
    const size = randomInt(random, spec.smallRange[0], spec.smallRange[1]);
    files.push({ path: `${folderFor(random, fanout)}/file-${i}${ext}`, size, markdown });
  }
  const smallBytes = files.reduce((sum, file) => sum + file.size, 0);
  const left = Math.max(0, spec.totalBytes - smallBytes);
  for (let i = 0; i < spec.largeFiles; i++) {
    const size = Math.floor(left / spec.largeFiles) + (i === 0 ? left % spec.largeFiles : 0);
    files.push({ path: `large/blob-${i}.bin`, size, markdown: false });
  }
  return files;
}

/** Write `size` keystream bytes to `absPath` in chunks; returns the sha256. */
function writeBinary(absPath: string, size: number, next: (n: number) => Buffer): string {
  const hash = createHash("sha256");
  const fd = openSync(absPath, "w");
  try {
    for (let done = 0; done < size; ) {
      const chunk = next(Math.min(8 * MB, size - done));
      hash.update(chunk);
      writeSync(fd, chunk);
      done += chunk.length;
    }
  } finally {
    closeSync(fd);
  }
  return `sha256:${hash.digest("hex")}`;
}

function writeManifest(dir: string, id: string, files: ManifestEntry[]): void {
  const sorted = [...files].sort((a, b) =>
    Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)),
  );
  const manifest = { schema_version: 1, id, created: "2026-06-04T00:00:00Z", files: sorted };
  writeFileSync(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}

function generate(spec: SetSpec, seed: number, dir: string): Workload {
  rmSync(dir, { recursive: true, force: true });
  const random = seededRandom(seed ^ spec.name.charCodeAt(0));
  const planned = planFiles(spec, random);
  const markdownPaths = planned.filter((file) => file.markdown).map((file) => file.path);
  const bytes = keystream(seed, spec.name);
  const files: ManifestEntry[] = [];
  for (const file of planned) {
    const absPath = path.join(dir, file.path);
    mkdirSync(path.dirname(absPath), { recursive: true });
    if (file.markdown) {
      const text = Buffer.from(
        markdownDocument(random, { from: file.path, others: markdownPaths, size: file.size }),
      );
      writeFileSync(absPath, text);
      files.push({ path: file.path, size: text.length, sha256: sha256Of(text) });
    } else {
      files.push({
        path: file.path,
        size: file.size,
        sha256: writeBinary(absPath, file.size, bytes),
      });
    }
  }
  writeManifest(dir, `bench.${spec.name}.${seed}`, files);
  return { dir, files, bytes: files.reduce((sum, file) => sum + file.size, 0) };
}

function sha256Of(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * The set `name` for `seed`, generated unless a complete copy with the same
 * seed and spec is already there (a marker beside the folder records both).
 */
export function ensureWorkload(name: SetSpec["name"], seed = DEFAULT_SEED): Workload {
  const spec = SETS[name];
  const dir = path.join(benchDir(), `${name}-${seed}`);
  const marker = `${dir}.done.json`;
  const identity = JSON.stringify({ spec, seed, version: GENERATOR_VERSION });
  if (existsSync(marker)) {
    const saved = JSON.parse(readFileSync(marker, "utf8")) as {
      identity: string;
      workload: Workload;
    };
    if (saved.identity === identity && existsSync(path.join(dir, "manifest.json")))
      return saved.workload;
  }
  mkdirSync(benchDir(), { recursive: true });
  const workload = generate(spec, seed, dir);
  writeFileSync(marker, JSON.stringify({ identity, workload }));
  return workload;
}

/**
 * A copy of `base` in which one Markdown file (the first, else the first file)
 * has different bytes: everything else is hard-linked, so it costs no space.
 * `variant` picks the new content; two variants differ from each other too.
 */
export function changedVariant(base: Workload, variant: string): Workload {
  const dir = `${base.dir}-changed-${variant}`;
  rmSync(dir, { recursive: true, force: true });
  const target = base.files.find((file) => file.path.endsWith(".md")) ?? base.files[0];
  if (!target) throw new Error(`workload ${base.dir} has no files to change`);
  const files = base.files.map((file) => {
    const absPath = path.join(dir, file.path);
    mkdirSync(path.dirname(absPath), { recursive: true });
    if (file.path !== target.path) {
      linkSync(path.join(base.dir, file.path), absPath);
      return file;
    }
    const text = Buffer.concat([
      readFileSync(path.join(base.dir, file.path)),
      Buffer.from(`\nEdited: variant ${variant}.\n`),
    ]);
    writeFileSync(absPath, text);
    return { path: file.path, size: text.length, sha256: sha256Of(text) };
  });
  writeManifest(dir, `bench.changed.${variant}`, files);
  return { dir, files, bytes: files.reduce((sum, file) => sum + file.size, 0) };
}

/** The path of the one file whose bytes `variant` (a changedVariant of `base`) changed. */
export function changedPathOf(base: Workload, variant: Workload): string {
  const changed = variant.files.find((file, index) => file.sha256 !== base.files[index]?.sha256);
  if (!changed) throw new Error(`${variant.dir} changes no file of ${base.dir}`);
  return changed.path;
}

// `node dist/bench/workload.js M [seed]` generates (or finds) one set and prints where.
if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const name = (process.argv[2] ?? "S") as SetSpec["name"];
  if (!(name in SETS)) throw new Error(`unknown set ${name}: use S, M, L or C`);
  const workload = ensureWorkload(name, Number(process.argv[3] ?? DEFAULT_SEED));
  console.log(
    `${name}: ${workload.files.length} files, ${(workload.bytes / MB).toFixed(1)} MB in ${workload.dir}`,
  );
}
