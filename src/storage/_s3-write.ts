/**
 * How the S3 driver sends an object's bytes: small content as one PUT (the
 * direct path when unconditional, the SDK when conditional), a larger file
 * streamed as one PutObject, and from the multipart threshold on a multipart
 * upload. Classifying failures stays with the driver.
 */
import type { PutObjectCommandInput, S3Client } from "@aws-sdk/client-s3";
import { limiter } from "../concurrency.js";
import type { OutputContent } from "../model.js";
import type { DirectPut } from "./_s3-direct-put.js";
import { putBytes, readSmallFile, SMALL_FILE } from "./_s3-put.js";
import { type FileUpload, putFile, sourceFileSize, uploadFileMultipart } from "./_s3-upload.js";
import type { WriteOptions } from "./driver.js";

/** One object to write and what writing it needs. */
export interface ObjectTarget {
  client: S3Client;
  directPut: DirectPut;
  bucket: string;
  key: string;
  /** Driver path, for errors. */
  path: string;
  /** `s3://bucket/key`, for errors. */
  location: string;
  multipartThreshold: number;
  /**
   * Verifies `ifMatch` by reading the current version. Called before a
   * conditional multipart upload: RGW ignores conditions on
   * CompleteMultipartUpload (best effort; AWS enforces them on completion).
   */
  checkPrecondition: () => Promise<void>;
}

function putParams(target: ObjectTarget, options: WriteOptions): PutObjectCommandInput {
  return {
    Bucket: target.bucket,
    Key: target.key,
    ContentType: options.contentType,
    Metadata: options.sha256 === undefined ? undefined : { sha256: options.sha256 },
    // RGW compares If-Match with the raw header value, so the token goes unquoted.
    IfNoneMatch: options.ifMatch === null ? "*" : undefined,
    IfMatch: typeof options.ifMatch === "string" ? options.ifMatch : undefined,
  };
}

/** Send `content` as the object; returns the ETag the server gave, maybe absent. */
export async function sendObject(
  target: ObjectTarget,
  content: OutputContent,
  options: WriteOptions,
): Promise<string | undefined> {
  const params = putParams(target, options);
  const putSmall = (bytes: Uint8Array) =>
    options.ifMatch === undefined
      ? target.directPut.put(
          { key: target.key, contentType: options.contentType, sha256: options.sha256 },
          bytes,
        )
      : putBytes(target.client, params, bytes);
  if (content.type === "bytes") return putSmall(content.bytes);
  // Bytes kept from verification (small files only) are the verified ones:
  // sent as they are, without reading the file again. The digest given for
  // the object's metadata must be theirs.
  if (content.verifiedBytes !== undefined && content.sha256 === options.sha256) {
    return putSmall(content.verifiedBytes);
  }
  const upload: FileUpload = {
    client: target.client,
    // The digest goes into the object's metadata only when the bytes sent are
    // checked against it (verify trusts that metadata instead of re-hashing).
    params: content.sha256 === options.sha256 ? params : { ...params, Metadata: undefined },
    absPath: content.absPath,
    sourcePath: content.sourcePath,
    size: content.size,
    sha256: content.sha256,
    location: target.location,
    path: target.path,
  };
  // The verified size, when the content carries it, picks the path without
  // opening the file once more just to learn its size.
  const limit = Math.min(SMALL_FILE, target.multipartThreshold);
  if (content.size === undefined || content.size < limit) {
    const small = readSmallFile(upload, limit);
    if (small !== null) return putSmall(small);
  }
  const size = content.size ?? (await sourceFileSize(upload));
  if (size < target.multipartThreshold) return putFile(upload);
  if (options.ifMatch !== undefined) await target.checkPrecondition();
  return multipartUploads(() => uploadFileMultipart(upload, target.multipartThreshold));
}

/**
 * Multipart uploads at once, in this process. Each holds up to QUEUE_SIZE
 * parts of up to 16 MiB in memory (_s3-upload.ts), and the executor keeps
 * `max_concurrency` writes in flight (up to 64): unbounded, a bundle of large
 * files could buffer gigabytes.
 */
const multipartUploads = limiter(2);
