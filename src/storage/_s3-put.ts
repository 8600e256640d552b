/**
 * Single-request uploads of small bodies. A small source file is read whole
 * with synchronous calls (from the page cache that costs less than opening a
 * stream through the thread pool, and an in-memory body can be sent again on
 * a retry). Conditional ones go as one PutObject through the SDK (putBytes);
 * unconditional ones through _s3-direct-put.ts.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { PutObjectCommand, type PutObjectCommandInput, type S3Client } from "@aws-sdk/client-s3";
import { DistributorError } from "../errors.js";
import type { FileUpload } from "./_s3-upload.js";
import { readVerifiedSync } from "./_source-read.js";

/** Source files below this size are read into memory and sent as a Buffer. */
export const SMALL_FILE = 256 * 1024;

/**
 * The whole file when it is smaller than `limit` bytes, else `null` (the
 * caller streams it). An unreadable source is a `storage_error` naming it.
 */
export function readSmallFile(upload: FileUpload, limit: number): Buffer | null {
  // A small file of verified size is read and checked whole (_source-read.ts).
  if (upload.size !== undefined && upload.size < limit) {
    try {
      return readVerifiedSync(upload);
    } catch (error) {
      if (error instanceof DistributorError) throw error;
      throw unreadableSource(upload, error);
    }
  }
  let fd: number | undefined;
  try {
    fd = openSync(upload.absPath, "r");
    const size = fstatSync(fd).size;
    if (size >= limit) return null;
    const buffer = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const n = readSync(fd, buffer, filled, size - filled, filled);
      // A file that shrank since fstat: send what is there (the digest check catches it).
      if (n === 0) return buffer.subarray(0, filled);
      filled += n;
    }
    return buffer;
  } catch (error) {
    throw unreadableSource(upload, error);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The error for a source file that cannot be opened or read. */
export function unreadableSource(upload: FileUpload, error: unknown): DistributorError {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  return new DistributorError(
    "storage_error",
    `${upload.location}: cannot read the file to upload (${code}: ${upload.absPath}). Check that the source bundle is still in place.`,
    { paths: [upload.path], cause: error },
  );
}

/** One PutObject of in-memory bytes; the SDK retries it itself. Returns the ETag, maybe absent. */
export async function putBytes(
  client: S3Client,
  params: PutObjectCommandInput,
  bytes: Uint8Array,
): Promise<string | undefined> {
  const input = { ...params, Body: bytes, ContentLength: bytes.byteLength };
  return (await client.send(new PutObjectCommand(input))).ETag;
}
