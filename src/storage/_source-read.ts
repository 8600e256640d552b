/**
 * Reading a source file for publishing, with the check that makes the bytes
 * published the bytes verified. Verification (bundle/verify.ts) hashes every
 * file before the plan; the copy comes later, and the file may have been
 * changed or swapped for a symbolic link (to anything this process can read)
 * in between. So a copy reads the file itself, without following a final
 * symlink, hashes what it read and refuses bytes whose size or SHA-256 is
 * not the verified one: nothing else is ever published under that digest.
 * The check costs one more SHA-256 pass over the bytes copied (SHA
 * extensions: about 1 GB/s), the price of never publishing unverified bytes.
 */
import { createHash, type Hash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { Transform } from "node:stream";
import { DistributorError } from "../errors.js";

/** A source file to publish: where it is, and the size and digest it was verified with. */
export interface VerifiedSource {
  absPath: string;
  /** The manifest path, which a source_invalid error lists (else `absPath`). */
  sourcePath?: string;
  size?: number;
  sha256?: string;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;
/**
 * Copy chunk: 1 MiB. The chunk is read, hashed and then written from user
 * space, so it should still be in the CPU's cache when the write copies it
 * into the page cache. Copying M's 417 MB of large files took a median
 * 0.55 s of CPU with 1 MiB chunks against 1.06 s with 4 MiB ones (0.62 s
 * with 256 KiB), and L's 2 GB file 2.5-4.1 s against 4.7-8.3 s: with 4 MiB
 * chunks half the CPU went to the kernel's copy from the buffer into the
 * page cache (`copy_folio_from_iter_atomic` in `perf record`).
 */
const CHUNK = 1024 * 1024;

/** `source_invalid`: the file is not what verification saw; nothing of it is published. */
export function changedSource(source: VerifiedSource, problem: string): DistributorError {
  return new DistributorError(
    "source_invalid",
    `Source file ${source.absPath} changed during the run (${problem}): it was not published. Outputs written before it are recorded in the state; run again once the bundle is complete.`,
    // The manifest path, as every other source_invalid lists it.
    { paths: [source.sourcePath ?? source.absPath] },
  );
}

/** Raise `source_invalid` unless `size` bytes hashed by `hash` are the verified ones. */
function assertVerified(source: VerifiedSource, size: number, hash: Hash | null): void {
  if (source.size !== undefined && size !== source.size) {
    throw changedSource(source, `${size} bytes where ${source.size} were verified`);
  }
  if (hash === null || source.sha256 === undefined) return;
  const digest = `sha256:${hash.digest("hex")}`;
  if (digest !== source.sha256) {
    throw changedSource(source, `its SHA-256 is no longer ${source.sha256}`);
  }
}

function notRegular(source: VerifiedSource): DistributorError {
  return changedSource(source, "it is no longer a regular file");
}

/** ELOOP from O_NOFOLLOW: the file was replaced by a symbolic link. */
function symlinkError(source: VerifiedSource, error: unknown): Error {
  return (error as NodeJS.ErrnoException).code === "ELOOP"
    ? changedSource(source, "it is now a symbolic link")
    : (error as Error);
}

/**
 * The whole file, checked (see the module comment). Reads one byte past the
 * verified size, so a file that grew is caught too.
 */
export function readVerifiedSync(source: VerifiedSource): Buffer {
  let fd: number;
  try {
    fd = openSync(source.absPath, READ_FLAGS);
  } catch (error) {
    throw symlinkError(source, error);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notRegular(source);
    const expected = source.size ?? stats.size;
    const buffer = Buffer.allocUnsafe(expected + 1);
    let filled = 0;
    while (filled < buffer.byteLength) {
      const n = readSync(fd, buffer, filled, buffer.byteLength - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    const bytes = buffer.subarray(0, filled);
    const hash = source.sha256 === undefined ? null : createHash("sha256").update(bytes);
    assertVerified(source, filled, hash);
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/**
 * Copy the file into `target` (open for writing) in chunks, checked as it is
 * read (see the module comment). Returns the number of bytes copied.
 */
export async function copyVerified(source: VerifiedSource, target: FileHandle): Promise<number> {
  const handle = await openVerified(source);
  try {
    const hash = source.sha256 === undefined ? null : createHash("sha256");
    // Two buffers: the next chunk is read (and hashed) while the last one is
    // being written, so reading, hashing and writing overlap.
    const buffers = [Buffer.allocUnsafe(CHUNK), Buffer.allocUnsafe(CHUNK)];
    let writing: Promise<unknown> = Promise.resolve();
    let copied = 0;
    for (let turn = 0; ; turn++) {
      // Free: the write that used it was awaited in the previous turn.
      const buffer = buffers[turn % 2] as Buffer;
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, copied);
      if (bytesRead === 0) break;
      // Grown past the verified size: refused now, not after copying it all.
      if (source.size !== undefined && copied + bytesRead > source.size) {
        await writing;
        throw changedSource(source, `more than the ${source.size} bytes verified`);
      }
      hash?.update(buffer.subarray(0, bytesRead));
      await writing;
      const write = writeFully(target, buffer.subarray(0, bytesRead), copied);
      // Awaited in the next turn; a failure meanwhile must not go unhandled.
      write.catch(() => undefined);
      writing = write;
      copied += bytesRead;
    }
    await writing;
    assertVerified(source, copied, hash);
    return copied;
  } finally {
    await handle.close();
  }
}

/** Write all of `bytes` at `position` (a write may take fewer bytes than asked). */
async function writeFully(target: FileHandle, bytes: Buffer, position: number): Promise<void> {
  for (let done = 0; done < bytes.byteLength; ) {
    const { bytesWritten } = await target.write(
      bytes,
      done,
      bytes.byteLength - done,
      position + done,
    );
    if (bytesWritten === 0) throw new Error("write took no bytes");
    done += bytesWritten;
  }
}

/** Open the file for reading without following a final symlink; it must be a regular file. */
export async function openVerified(source: VerifiedSource): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(source.absPath, READ_FLAGS);
  } catch (error) {
    throw symlinkError(source, error);
  }
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw notRegular(source);
  }
  return handle;
}

/**
 * A pass-through for the file's bytes on their way to a request body that
 * holds back the last chunk until the whole file has been checked (see the
 * module comment): a body whose bytes are not the verified ones ends with
 * `source_invalid` before its last byte is sent, so the server never
 * completes the object (a single PUT, or the last part of a multipart
 * upload, which is then aborted).
 */
export function verifyingStream(source: VerifiedSource): Transform {
  const hash = source.sha256 === undefined ? null : createHash("sha256");
  let held: Buffer | null = null;
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.byteLength;
      // A file that grew is refused before a byte past the verified size is
      // passed on: the request's Content-Length is the verified size, and a
      // server that got that many bytes would complete the object.
      if (source.size !== undefined && seen > source.size) {
        done(changedSource(source, `more than the ${source.size} bytes verified`));
        return;
      }
      hash?.update(chunk);
      const previous = held;
      held = chunk;
      done(null, previous ?? undefined);
    },
    flush(done) {
      try {
        assertVerified(source, seen, hash);
      } catch (error) {
        done(error as Error);
        return;
      }
      done(null, held ?? undefined);
    },
  });
}
