/**
 * The per-file half of bundle verification (SPEC §2), synchronous on purpose:
 * it runs on helper threads (src/bundle/_verify-job.ts, src/threads.ts),
 * where blocking costs nothing and saves the four thread-pool round trips per
 * file that asynchronous calls need, and on the main thread for small bundles.
 * Read-only; every file is read at most once.
 */
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { errnoCode } from "../errors.js";
import { sha256Hex } from "../hashing.js";
import { isWanted, reserve, type VerifiedBytesStore } from "./_verified-bytes.js";

/** What a check needs to know about a listed file. */
export interface FileToCheck {
  path: string;
  size: number;
  /** `sha256:<64 lowercase hex>` */
  sha256: string;
  /** Its index in the bundle's list, where a store of kept bytes records it (_verified-bytes.ts). */
  at?: number;
}

const READ_CHUNK = 1024 * 1024;
// O_NONBLOCK so that a FIFO planted in a bundle cannot hang the open.
export const NO_FOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Why the directory `dir` of the bundle cannot hold listed files; null when fine. */
function directoryProblem(root: string, dir: string): string | null {
  try {
    const stats = lstatSync(path.join(root, dir));
    if (stats.isSymbolicLink()) return `symlink in path ('${dir}' is a symlink)`;
    if (!stats.isDirectory()) return `missing ('${dir}' is not a directory)`;
    return null;
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return "missing";
    return `unreadable (${errnoCode(error) ?? String(error)})`;
  }
}

function openProblem(error: unknown): string {
  switch (errnoCode(error)) {
    case "ENOENT":
      return "missing";
    case "ELOOP":
      return "symlink";
    case "ENOTDIR":
      return "missing (a parent is not a directory)";
    default:
      return `unreadable (${errnoCode(error) ?? String(error)})`;
  }
}

function sizeProblem(file: FileToCheck, actual: number): string {
  return `size ${actual} != ${file.size}`;
}

function digestProblem(file: FileToCheck, hex: string): string | null {
  const sha256 = `sha256:${hex}`;
  return sha256 === file.sha256 ? null : `sha256 mismatch (file has ${sha256})`;
}

/**
 * Checks files of one bundle. Each directory is lstat'ed once however many
 * files it holds, and one read buffer serves every file: a buffer per file made
 * a 100k-file bundle spend more time collecting garbage than hashing.
 */
export class FileChecker {
  /** The bundle directory that the checked paths are relative to. */
  readonly root: string;
  readonly #directories = new Map<string, string | null>();
  readonly #buffer = Buffer.allocUnsafe(READ_CHUNK);
  readonly #store: VerifiedBytesStore | null;
  readonly #kept: Uint8Array | null;

  /** `store`: where to keep the bytes of small good files (see _verified-bytes.ts). */
  constructor(root: string, store: VerifiedBytesStore | null = null) {
    this.root = root;
    this.#store = store;
    this.#kept = store && new Uint8Array(store.bytes);
  }

  /** Problems of `files` in order: null for a good file, else why it is bad. */
  checkAll(files: readonly FileToCheck[]): (string | null)[] {
    return files.map((file, index) => this.check(file, index));
  }

  /**
   * Why a listed file is bad, or null: every parent must be a real directory
   * (not a symlink), the file a regular file (not a symlink) with the listed
   * size and SHA-256. A size mismatch is decided without reading the content.
   * `at`: the file's index in the bundle's list; a small good file's bytes
   * are then kept in the checker's store, if it has room.
   */
  check(file: FileToCheck, at = file.at): string | null {
    return this.#withOpenFile(file, (fd) => {
      const store = this.#store;
      if (
        store !== null &&
        at !== undefined &&
        file.size <= store.maxFileBytes &&
        isWanted(store, at)
      ) {
        const start = reserve(store, file.size + 1);
        if (start >= 0) return this.#checkKept(file, fd, start, at);
      }
      const first = this.#read(fd, 0);
      if (first < READ_CHUNK) {
        // The whole file in one read (a short read of a regular file is its
        // end): hashed in one call, without a streaming hash object.
        if (first !== file.size) return sizeProblem(file, first);
        return digestProblem(file, sha256Hex(this.#buffer.subarray(0, first)));
      }
      const hash = createHash("sha256");
      let size = 0;
      for (let n = first; n > 0; n = n < READ_CHUNK ? 0 : this.#read(fd, size)) {
        // update() copies what it needs, so the buffer can be refilled at once.
        hash.update(this.#buffer.subarray(0, n));
        size += n;
      }
      return size === file.size ? digestProblem(file, hash.digest("hex")) : sizeProblem(file, size);
    });
  }

  /**
   * The same checks as `check`, keeping the content: for files that are used
   * right away (Markdown to render), so that they are read once, and what is
   * used is exactly what was verified. Memory is bounded by the listed size.
   */
  read(file: FileToCheck): { problem: string } | { bytes: Buffer } {
    // Allocated only once fstat has confirmed the listed size.
    let content = Buffer.alloc(0);
    const problem = this.#withOpenFile(file, (fd) => {
      content = Buffer.allocUnsafe(file.size);
      let size = 0;
      while (size < file.size) {
        const n = readSync(fd, content, size, file.size - size, size);
        if (n === 0) return sizeProblem(file, size);
        size += n;
      }
      // A file that grew since fstat has more to read.
      if (this.#read(fd, size) > 0)
        return `changed while being read (longer than ${file.size} bytes)`;
      return digestProblem(file, sha256Hex(content));
    });
    return problem === null ? { bytes: content } : { problem };
  }

  /** Parent checks, open (no symlink), fstat and size check, then `readContent` on the open file. */
  #withOpenFile(file: FileToCheck, readContent: (fd: number) => string | null): string | null {
    const parent = this.#parentProblem(file.path);
    if (parent) return parent;
    let fd: number;
    try {
      // Concatenated, not path.join: manifest paths are clean (no "." or ".."
      // segments, no doubled "/"), and join cost 0.6 µs of the ~10 µs per file.
      fd = openSync(`${this.root}/${file.path}`, NO_FOLLOW_READ);
    } catch (error) {
      return openProblem(error);
    }
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) return "not a regular file";
      if (stats.size !== file.size) return sizeProblem(file, stats.size);
      return readContent(fd);
    } catch (error) {
      return `unreadable (${errnoCode(error) ?? String(error)})`;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * `check` reading into the store at `start`, where `file.size + 1` bytes are
   * reserved: a single read that fills them all means the file grew since
   * fstat. Recorded as kept only once its digest matched.
   */
  #checkKept(file: FileToCheck, fd: number, start: number, at: number): string | null {
    const kept = this.#kept as Uint8Array;
    // One byte more than listed, to see a file that grew. Read until the end:
    // a read may return less than asked before it (files kept for uploads
    // are up to 16 MiB, and not every filesystem fills such a read at once).
    let n = 0;
    for (let got = -1; got !== 0 && n <= file.size; n += got) {
      got = readSync(fd, kept, start + n, file.size + 1 - n, n);
    }
    if (n > file.size) return `changed while being read (longer than ${file.size} bytes)`;
    if (n !== file.size) return sizeProblem(file, n);
    const problem = digestProblem(file, sha256Hex(kept.subarray(start, start + n)));
    if (problem === null) Atomics.store((this.#store as VerifiedBytesStore).starts, at, start);
    return problem;
  }

  #read(fd: number, position: number): number {
    return readSync(fd, this.#buffer, 0, READ_CHUNK, position);
  }

  /** The first problem on the way to the file, shallowest directory first. */
  #parentProblem(relativePath: string): string | null {
    const slash = relativePath.lastIndexOf("/");
    return slash === -1 ? null : this.#directoryChainProblem(relativePath.slice(0, slash));
  }

  /**
   * The first problem of `dir` or its ancestors, each directory lstat'ed once:
   * one lookup per file, where walking every ancestor cost a list and a
   * string for each of them.
   */
  #directoryChainProblem(dir: string): string | null {
    let problem = this.#directories.get(dir);
    if (problem === undefined) {
      problem = this.#parentProblem(dir) ?? directoryProblem(this.root, dir);
      this.#directories.set(dir, problem);
    }
    return problem;
  }
}
