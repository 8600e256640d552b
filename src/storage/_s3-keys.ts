/**
 * Bucket-level key operations of the S3 driver: the mapping of driver paths to
 * keys (S3Keyspace), paginated listing, and batched deletes (DeleteObjects takes at most
 * 1000 keys per request; an already-missing key is a success).
 */
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { DistributorError } from "../errors.js";
import { cleanPathProblem, RESERVED_PREFIX } from "../paths.js";
import { storageError } from "./_s3-errors.js";

const DELETE_BATCH = 1000;

/**
 * Delete `keys` in batches and return the error message of each key that could
 * not be deleted (absent from the map = deleted). A failed request marks every
 * key of its batch with `describe(error)` and the next batches still run.
 */
export async function deleteKeys(
  client: S3Client,
  bucket: string,
  options: {
    keys: readonly string[];
    describe: (error: unknown) => string;
    /** Why no further batch may be sent (the process is stopping), or null. */
    stopped?: () => string | null;
  },
): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  for (let start = 0; start < options.keys.length; start += DELETE_BATCH) {
    const batch = options.keys.slice(start, start + DELETE_BATCH);
    const stopped = options.stopped?.() ?? null;
    if (stopped !== null) {
      for (const key of options.keys.slice(start)) failures.set(key, stopped);
      break;
    }
    try {
      const out = await client.send(
        new DeleteObjectsCommand({
          Bucket: bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      for (const failure of out.Errors ?? []) {
        if (failure.Key === undefined || failure.Code === "NoSuchKey") continue;
        failures.set(failure.Key, `DeleteObjects failed: ${failure.Code ?? "UnknownError"}`);
      }
    } catch (error) {
      const message = options.describe(error);
      for (const key of batch) failures.set(key, message);
    }
  }
  return failures;
}

/**
 * Where one driver's objects live, and how its paths map to keys: `path` is
 * `<prefix>/<path>` in `bucket`. Every key the driver sends comes from `key`,
 * which refuses paths that could escape or alias the prefix.
 */
export class S3Keyspace {
  readonly bucket: string;
  /** `s3://bucket/prefix/`, as reports show the root. */
  readonly root: string;
  /** `prefix/` ("" for the whole bucket): what every key starts with. */
  readonly keyPrefix: string;

  /** @throws DistributorError `config_invalid` when `prefix` is not "" or a clean path. */
  constructor(bucket: string, prefix: string) {
    const problem = cleanPathProblem(prefix, { allowEmpty: true });
    if (problem !== null) {
      throw new DistributorError("config_invalid", `S3 prefix "${prefix}" ${problem}.`);
    }
    this.bucket = bucket;
    this.keyPrefix = prefix === "" ? "" : `${prefix}/`;
    this.root = `s3://${bucket}/${this.keyPrefix}`;
  }

  /** The key of a driver path; refuses paths that could escape or alias the prefix. */
  key(path: string): string {
    const problem = driverPathProblem(path);
    if (problem !== null) {
      throw new DistributorError("unsafe_path", `${this.root}: path "${path}" ${problem}.`, {
        paths: [path],
      });
    }
    return `${this.keyPrefix}${path}`;
  }

  /** The driver path of a listed key (which starts with keyPrefix). */
  pathOf(key: string): string {
    return key.slice(this.keyPrefix.length);
  }

  /** `s3://bucket/key` of a path, for messages. */
  location(path: string): string {
    return this.locationOfKey(this.key(path));
  }

  /** `s3://bucket/key` of a key already checked by `key`. */
  locationOfKey(key: string): string {
    return `s3://${this.bucket}/${key}`;
  }

  /** A failed request as a storage_error naming the operation and object (DistributorErrors pass). */
  failure(error: unknown, operation: string, path?: string): Error {
    if (error instanceof DistributorError) return error;
    const location = path === undefined ? this.root : this.location(path);
    return storageError(error, { operation, location, path });
  }
}

/**
 * Why `path` cannot be a driver path, or `null`. Driver paths are clean paths,
 * and reserved tool names (state, lock, temp files) are allowed in them.
 */
export function driverPathProblem(path: string): string | null {
  const masked = path
    .split("/")
    .map((segment) => (segment.startsWith(RESERVED_PREFIX) ? "x" : segment))
    .join("/");
  return cleanPathProblem(masked);
}

export interface ListedObject {
  key: string;
  size: number;
}

/** Every object whose key starts with `prefix` ("" = the whole bucket), page by page. */
export async function listKeys(
  client: S3Client,
  bucket: string,
  options: { prefix: string; pageSize?: number },
): Promise<ListedObject[]> {
  const objects: ListedObject[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: options.prefix || undefined,
        ContinuationToken: token,
        MaxKeys: options.pageSize,
      }),
    );
    for (const object of page.Contents ?? []) {
      if (object.Key !== undefined) objects.push({ key: object.Key, size: object.Size ?? 0 });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return objects;
}
