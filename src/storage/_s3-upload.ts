/**
 * Uploading a local file to S3 with bounded memory: a streamed single PUT below
 * the multipart threshold, a multipart upload (lib-storage) at or above it.
 * Errors from the server pass through raw for the driver to classify; only a
 * source file that cannot be opened, or whose bytes are not the verified
 * ones (_source-read.ts), becomes a DistributorError here.
 */
import type { FileHandle } from "node:fs/promises";
import type { Readable } from "node:stream";
import { PutObjectCommand, type PutObjectCommandInput, type S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { DistributorError } from "../errors.js";
import { withRetries } from "./_s3-client.js";
import { unreadableSource } from "./_s3-put.js";
import { changedSource, openVerified, verifyingStream } from "./_source-read.js";

const MiB = 1024 * 1024;
/** Parts uploaded at once: memory stays at about queueSize × partSize for any file size. */
const QUEUE_SIZE = 4;

export interface FileUpload {
  client: S3Client;
  /** PutObject parameters without Body and ContentLength. */
  params: PutObjectCommandInput;
  absPath: string;
  /** The manifest path, for source_invalid (_source-read.ts). */
  sourcePath?: string;
  /** The verified size and digest: only those bytes are sent (_source-read.ts). */
  size?: number;
  sha256?: string;
  /** `s3://bucket/key`, for the error about an unreadable source file. */
  location: string;
  /** Driver path the error names. */
  path: string;
}

/** Open the source file, hand its stream and fstat size to `use`, and always close it. */
async function withFileStream<T>(
  upload: FileUpload,
  use: (body: Readable, length: number) => Promise<T>,
): Promise<T> {
  let handle: FileHandle;
  let length: number;
  try {
    handle = await openVerified(upload);
    length = (await handle.stat()).size;
  } catch (error) {
    if (error instanceof DistributorError) throw error;
    throw unreadableSource(upload, error);
  }
  if (upload.size !== undefined && length !== upload.size) {
    await handle.close().catch(() => undefined);
    throw changedSource(upload, `${length} bytes where ${upload.size} were verified`);
  }
  const file = handle.createReadStream({ autoClose: false });
  const body = file.pipe(verifyingStream(upload));
  // A read error ends the body with it (pipe alone would leave it hanging).
  file.once("error", (error: Error) => body.destroy(error));
  try {
    return await use(body, length);
  } finally {
    file.destroy();
    body.destroy();
    await handle.close().catch(() => undefined);
  }
}

/** Size of the source file, by fstat of an open handle. */
export function sourceFileSize(upload: FileUpload): Promise<number> {
  return withFileStream(upload, async (_body, length) => length);
}

/**
 * One streamed PutObject with ContentLength from fstat; the returned ETag may be
 * absent. The SDK does not retry streamed bodies, so each retry reopens the file.
 */
export function putFile(upload: FileUpload): Promise<string | undefined> {
  return withRetries(() =>
    withFileStream(upload, async (body, length) => {
      const input = { ...upload.params, Body: body, ContentLength: length };
      // The HTTP handler pipes the body without watching it: an error of the
      // body (bytes that are not the verified ones) aborts the request and is
      // what this write fails with.
      const controller = new AbortController();
      let bodyError: unknown;
      body.once("error", (error) => {
        bodyError = error;
        controller.abort();
      });
      try {
        const sent = await upload.client.send(new PutObjectCommand(input), {
          abortSignal: controller.signal,
        });
        return sent.ETag;
      } catch (error) {
        throw bodyError ?? error;
      }
    }),
  );
}

/** S3 takes at most this many parts in one multipart upload. */
const MAX_PARTS = 10_000;

/**
 * The part size for a file of `length` bytes: 5–16 MiB following
 * `threshold`, and larger (in whole MiB) where that would take more than
 * S3's 10,000 parts: 16 MiB parts stop at 156.25 GiB, and the upload would
 * fail only once every part had been sent.
 */
export function partSizeFor(length: number, threshold: number): number {
  const usual = Math.min(16 * MiB, Math.max(5 * MiB, threshold));
  return Math.max(usual, Math.ceil(length / MAX_PARTS / MiB) * MiB);
}

/**
 * A multipart upload completed at once (readers never see a partial object);
 * parts as partSizeFor says. Failed uploads are aborted so no parts are left
 * behind. The returned ETag is empty on servers such as RGW.
 */
export function uploadFileMultipart(
  upload: FileUpload,
  threshold: number,
): Promise<string | undefined> {
  return withFileStream(upload, async (body, length) => {
    const params = { ...upload.params, Body: body, ContentLength: length };
    const multipart = new Upload({
      client: upload.client,
      params,
      partSize: partSizeFor(length, threshold),
      queueSize: QUEUE_SIZE,
    });
    // lib-storage aborts the upload when the body fails, and an error of
    // that abort would replace the body's (source_invalid): keep the body's.
    let bodyError: unknown;
    body.once("error", (error) => {
      bodyError = error;
    });
    try {
      return (await multipart.done()).ETag;
    } catch (error) {
      throw bodyError ?? error;
    }
  });
}
