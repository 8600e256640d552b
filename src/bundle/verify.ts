/**
 * Loading a source bundle: read manifest.json, then prove that every listed file
 * is a regular file inside the bundle with the listed size and SHA-256 (SPEC §2),
 * before anything is written anywhere. The bundle is only ever opened read-only.
 */

import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { type FileHandle, lstat, open, realpath } from "node:fs/promises";
import path from "node:path";
import { mapLimit } from "../concurrency.js";
import { DistributorError } from "../errors.js";
import type { ManifestFile, SourceBundle } from "../model.js";
import { ancestorsOf } from "../paths.js";
import { MANIFEST_FILE, parseManifest } from "./manifest.js";

const READ_CHUNK = 1024 * 1024;
/**
 * Files up to this size are hashed with synchronous reads. From the page cache a
 * synchronous open/fstat/read/close is several times cheaper than four trips
 * through libuv's thread pool, and the thread pool never ran more than one
 * hash at a time anyway (hashing is on the main thread). Larger files stay
 * asynchronous so that a big file never blocks the event loop for long.
 */
const SYNC_HASH_LIMIT = 256 * 1024;
// O_NONBLOCK so that a FIFO planted in a bundle cannot hang the open.
const NO_FOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Digest and byte count of a file's content. */
export interface FileDigest {
  /** `sha256:<64 lowercase hex>` */
  sha256: string;
  size: number;
}

// Chunk buffers are reused: a fresh 1 MB buffer per file made a 100k-file
// bundle spend more time collecting garbage than hashing.
const spareBuffers: Buffer[] = [];

/** Hash an open handle from its start, in fixed-size chunks (never the whole file in memory). */
export async function hashHandle(handle: FileHandle): Promise<FileDigest> {
  const hash = createHash("sha256");
  const buffer = spareBuffers.pop() ?? Buffer.allocUnsafe(READ_CHUNK);
  let size = 0;
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, size);
      if (bytesRead === 0) break;
      // update() copies what it needs, so the buffer can be refilled at once.
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
  } finally {
    if (spareBuffers.length < 32) spareBuffers.push(buffer);
  }
  return { sha256: `sha256:${hash.digest("hex")}`, size };
}

/**
 * Streamed SHA-256 and size of the file at `absPath`, read once, read-only.
 *
 * @param options.followSymlinks open through a final symlink (default false: a
 *   symlink fails with the ELOOP error of `open`, so a destination check never
 *   hashes something outside its root by accident).
 * @throws the raw Node.js error (ENOENT, ELOOP, EISDIR...) for callers to classify.
 */
export async function hashFile(
  absPath: string,
  options: { followSymlinks?: boolean } = {},
): Promise<FileDigest> {
  const flags = options.followSymlinks ? constants.O_RDONLY | constants.O_NONBLOCK : NO_FOLLOW_READ;
  const handle = await open(absPath, flags);
  try {
    return await hashHandle(handle);
  } finally {
    await handle.close();
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Why the directory `dir` of the bundle cannot hold listed files; null when fine. */
async function directoryProblem(root: string, dir: string): Promise<string | null> {
  let stats: Stats;
  try {
    stats = await lstat(path.join(root, dir));
  } catch (error) {
    if (errorCode(error) === "ENOENT") return "missing";
    return `unreadable (${errorCode(error) ?? String(error)})`;
  }
  if (stats.isSymbolicLink()) return `symlink in path ('${dir}' is a symlink)`;
  if (!stats.isDirectory()) return `missing ('${dir}' is not a directory)`;
  return null;
}

/** Each directory of the bundle is checked once, however many files it holds. */
type DirectoryChecks = Map<string, Promise<string | null>>;

/** Why a listed file's location is unsafe or absent, checking each parent with lstat; null when fine. */
async function parentProblem(
  root: string,
  relativePath: string,
  checks: DirectoryChecks,
): Promise<string | null> {
  for (const dir of ancestorsOf(relativePath)) {
    let check = checks.get(dir);
    if (!check) {
      check = directoryProblem(root, dir);
      checks.set(dir, check);
    }
    const problem = await check;
    if (problem) return problem;
  }
  return null;
}

function openProblem(error: unknown): string {
  switch (errorCode(error)) {
    case "ENOENT":
      return "missing";
    case "ELOOP":
      return "symlink";
    case "ENOTDIR":
      return "missing (a parent is not a directory)";
    default:
      return `unreadable (${errorCode(error) ?? String(error)})`;
  }
}

/** Verify one listed file; returns the reason it is bad, or null. Reads the file at most once. */
async function fileProblem(
  root: string,
  file: ManifestFile,
  checks: DirectoryChecks,
): Promise<string | null> {
  const parent = await parentProblem(root, file.path, checks);
  if (parent) return parent;
  const absPath = path.join(root, file.path);
  if (file.size <= SYNC_HASH_LIMIT) return smallFileProblem(absPath, file);
  let handle: FileHandle;
  try {
    handle = await open(absPath, NO_FOLLOW_READ);
  } catch (error) {
    return openProblem(error);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return "not a regular file";
    // A size mismatch is decided without reading the content.
    if (stats.size !== file.size) return `size ${stats.size} != ${file.size}`;
    return contentProblem(file, await hashHandle(handle));
  } catch (error) {
    return `unreadable (${errorCode(error) ?? String(error)})`;
  } finally {
    await handle.close();
  }
}

/** fileProblem for a file the manifest says is small: the same checks, synchronously. */
function smallFileProblem(absPath: string, file: ManifestFile): string | null {
  let fd: number;
  try {
    fd = openSync(absPath, NO_FOLLOW_READ);
  } catch (error) {
    return openProblem(error);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return "not a regular file";
    if (stats.size !== file.size) return `size ${stats.size} != ${file.size}`;
    const hash = createHash("sha256");
    const buffer = spareBuffers.pop() ?? Buffer.allocUnsafe(READ_CHUNK);
    let size = 0;
    for (
      let n = readSync(fd, buffer, 0, READ_CHUNK, 0);
      n > 0;
      n = readSync(fd, buffer, 0, READ_CHUNK, size)
    ) {
      hash.update(buffer.subarray(0, n));
      size += n;
    }
    spareBuffers.push(buffer);
    return contentProblem(file, { sha256: `sha256:${hash.digest("hex")}`, size });
  } catch (error) {
    return `unreadable (${errorCode(error) ?? String(error)})`;
  } finally {
    closeSync(fd);
  }
}

/** Why the bytes read do not match the manifest entry; null when they do. */
function contentProblem(file: ManifestFile, actual: FileDigest): string | null {
  if (actual.size !== file.size) return `size ${actual.size} != ${file.size}`;
  if (actual.sha256 !== file.sha256) return `sha256 mismatch (file has ${actual.sha256})`;
  return null;
}

async function resolveBundleDir(dir: string): Promise<string> {
  const absolute = path.resolve(dir);
  try {
    // Resolved once, so a "latest" symlink that flips mid-run cannot mix two bundles.
    const real = await realpath(absolute);
    if ((await lstat(real)).isDirectory()) return real;
  } catch (error) {
    if (errorCode(error) !== "ENOENT" && errorCode(error) !== "ENOTDIR") {
      throw new DistributorError(
        "source_invalid",
        `Source bundle ${absolute} cannot be read (${errorCode(error) ?? String(error)}). Check its permissions.`,
        { cause: error },
      );
    }
  }
  throw new DistributorError(
    "source_invalid",
    `Source bundle ${absolute} does not exist or is not a directory. Point the pipeline's source (or run --source) at a directory holding manifest.json.`,
  );
}

async function readManifestBytes(root: string): Promise<Uint8Array> {
  const where = path.join(root, MANIFEST_FILE);
  let handle: FileHandle;
  try {
    handle = await open(where, NO_FOLLOW_READ);
  } catch (error) {
    const reason =
      errorCode(error) === "ENOENT"
        ? "has no manifest.json"
        : errorCode(error) === "ELOOP"
          ? "has a manifest.json that is a symlink (it must be a regular file)"
          : `has an unreadable manifest.json (${errorCode(error) ?? String(error)})`;
    throw new DistributorError(
      "source_invalid",
      `Source bundle ${root} ${reason}. A bundle is a directory with manifest.json at its top; see docs/manifest.md.`,
      { paths: [MANIFEST_FILE], cause: error },
    );
  }
  try {
    if (!(await handle.stat()).isFile()) {
      throw new DistributorError(
        "source_invalid",
        `Source bundle ${root}: manifest.json is not a regular file.`,
        { paths: [MANIFEST_FILE] },
      );
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/**
 * Load and verify the bundle in `dir` (SPEC §2). Every listed file must be a
 * regular file inside the bundle — neither it nor any parent directory a symlink —
 * whose size and SHA-256 match the manifest. Files are hashed streamed, with
 * bounded concurrency, each read once. Nothing in the bundle is modified.
 *
 * `dir` of the result is the bundle's real absolute path (a symlinked bundle
 * directory such as `bundles/latest` is resolved once, here).
 *
 * @throws DistributorError `source_invalid` when the directory or manifest is missing
 *   or invalid, or listing every bad file with its reason (`paths` holds them all).
 */
export async function loadBundle(dir: string): Promise<SourceBundle> {
  const root = await resolveBundleDir(dir);
  const manifest = parseManifest(await readManifestBytes(root), {
    where: path.join(root, MANIFEST_FILE),
  });
  const checks: DirectoryChecks = new Map();
  const problems = await mapLimit(manifest.files, (file) => fileProblem(root, file, checks));
  const bad = manifest.files.flatMap((file, i) => {
    const problem = problems[i];
    return problem ? [{ path: file.path, problem }] : [];
  });
  if (bad.length > 0) {
    const lines = bad.map((b) => `\n  - ${b.path}: ${b.problem}`).join("");
    throw new DistributorError(
      "source_invalid",
      `Source bundle ${root} failed verification (${bad.length} of ${manifest.files.length} listed files):${lines}\nRepair the files or regenerate manifest.json, then run again.`,
      { paths: bad.map((b) => b.path) },
    );
  }
  return { dir: root, identity: manifest.identity, files: manifest.files };
}
