/**
 * Bucket-level key operations of the S3 driver: the mapping of driver paths to
 * keys (S3Keyspace), paginated listing, and batched deletes (DeleteObjects takes at most
 * 1000 keys per request; an already-missing key is a success).
 */
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { mapLimit } from "../concurrency.js";
import { DistributorError } from "../errors.js";
import { cleanPathProblem, compareUtf8, RESERVED_PREFIX } from "../paths.js";
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

/**
 * How many top-level folders the first page of a listing may fall in for the
 * rest to be worth listing folder by folder: with more, they hold a few
 * hundred keys or fewer each.
 */
const FOLDERS_ON_FIRST_PAGE = 4;

interface ListOptions {
  prefix: string;
  pageSize?: number;
  /**
   * Requests in flight when a listing of more than one page is split by
   * top-level folder (1: never split).
   */
  concurrency?: number;
}

/**
 * Every object whose key starts with `prefix` ("" = the whole bucket), in
 * key order (S3's: by UTF-8 bytes).
 *
 * S3 hands out one listing's pages one after another, each a round trip
 * (about 60-110 ms for 1,000 keys on the local test server). A listing longer
 * than one page whose first page falls in few top-level folders, with few
 * folders after it, goes on folder by folder, all of them at once:
 * 8,000 keys in 8 folders took 217-640 ms (median 313) that way against
 * 336-710 ms (median 399) page after page there (seven alternating rounds),
 * and against a remote server round trips weigh more. Otherwise it goes on
 * page by page (see listAfter).
 */
export async function listKeys(
  client: S3Client,
  bucket: string,
  options: ListOptions,
): Promise<ListedObject[]> {
  const { prefix, pageSize } = options;
  const concurrency = options.concurrency ?? 1;
  const first = await listPage(client, bucket, { prefix, pageSize });
  if (first.next === undefined) return first.objects;
  // A page may hold fewer keys than asked for, even none, and still not be the last.
  const last = first.objects.at(-1)?.key;
  const spanned = new Set(first.objects.map((object) => topFolder(prefix, object.key)));
  if (last !== undefined && concurrency > 1 && spanned.size <= FOLDERS_ON_FIRST_PAGE) {
    const split = await listAfter(client, bucket, last, { prefix, pageSize, concurrency });
    if (split !== null) return first.objects.concat(split);
  }
  const rest = await listPages(client, bucket, { prefix, pageSize, token: first.next });
  return first.objects.concat(rest.objects);
}

/**
 * The keys after `last` under `options.prefix`, listed by top-level folder,
 * or `null` when that would not pay. One page of a listing with a
 * delimiter, from `last` on, names the keys directly under the prefix and
 * the folders; the folder holding `last` is listed from there on, the later
 * ones in full, all in one round of `concurrency` requests. More than one
 * page of names, or more folders than one round, and the rest goes page by
 * page: many small folders would cost a request each, and paging through
 * the names would cost what it saves (a review's examples: `assets/` and 63
 * one-key folders, 66 requests against 2; 50,000 keys directly under the
 * prefix, every page of them read twice).
 */
async function listAfter(
  client: S3Client,
  bucket: string,
  last: string,
  options: ListOptions & { concurrency: number },
): Promise<ListedObject[] | null> {
  const { prefix, pageSize, concurrency } = options;
  const held = topFolder(prefix, last);
  const folders = new Set(held === "" ? [] : [held]);
  const tail: ListedObject[] = [];
  const page = await listPage(client, bucket, {
    prefix,
    pageSize,
    startAfter: last,
    delimiter: "/",
  });
  if (page.next !== undefined) return null;
  // Whatever a server makes of a start inside a folder (RGW leaves out the
  // one holding `last`, AWS names it), a folder that sorts before `last`
  // without holding it holds only keys before it (they differ at a character
  // inside the folder's name), and the one holding it is listed from `last`
  // on below.
  for (const folder of page.folders) if (compareUtf8(folder, last) > 0) folders.add(folder);
  if (folders.size > concurrency) return null;
  for (const object of page.objects) if (compareUtf8(object.key, last) > 0) tail.push(object);
  const parts = await mapLimit(
    [...folders],
    (folder) =>
      listPages(client, bucket, {
        prefix: folder,
        pageSize,
        startAfter: folder === held ? last : undefined,
      }),
    { limit: concurrency },
  );
  for (const part of parts) tail.push(...part.objects);
  return tail.sort((a, b) => compareUtf8(a.key, b.key));
}

/** `prefix` plus the key's first segment and `/`, or "" for a key directly under the prefix. */
function topFolder(prefix: string, key: string): string {
  const slash = key.indexOf("/", prefix.length);
  return slash < 0 ? "" : key.slice(0, slash + 1);
}

interface Page {
  objects: ListedObject[];
  folders: string[];
  /** The continuation token; undefined on the last page. */
  next: string | undefined;
}

/** One ListObjectsV2 request: `startAfter` applies to a listing's first page only. */
interface ListRequest {
  prefix: string;
  pageSize?: number;
  token?: string;
  startAfter?: string;
  /** "/": keys below a folder are rolled up into the folder (`CommonPrefixes`). */
  delimiter?: "/";
}

async function listPage(client: S3Client, bucket: string, request: ListRequest): Promise<Page> {
  const page = await client.send(
    new ListObjectsV2Command({
      Bucket: bucket,
      Prefix: request.prefix || undefined,
      ContinuationToken: request.token,
      StartAfter: request.token === undefined ? request.startAfter : undefined,
      Delimiter: request.delimiter,
      MaxKeys: request.pageSize,
    }),
  );
  const objects: ListedObject[] = [];
  for (const object of page.Contents ?? []) {
    if (object.Key !== undefined) objects.push({ key: object.Key, size: object.Size ?? 0 });
  }
  const folders: string[] = [];
  for (const common of page.CommonPrefixes ?? []) {
    if (common.Prefix !== undefined) folders.push(common.Prefix);
  }
  if (page.IsTruncated && !page.NextContinuationToken) {
    // Taking it for the last page would hide the rest of the root from a
    // prune or a force.
    throw new Error("ListObjectsV2 answered a truncated page without a continuation token");
  }
  return { objects, folders, next: page.IsTruncated ? page.NextContinuationToken : undefined };
}

/**
 * Every page of one listing, from `token` or `startAfter` on, one after
 * another. With a delimiter: the keys directly under `prefix` and its
 * top-level folders (`<prefix><name>/`).
 */
async function listPages(
  client: S3Client,
  bucket: string,
  request: ListRequest,
): Promise<Omit<Page, "next">> {
  const objects: ListedObject[] = [];
  const folders: string[] = [];
  let token = request.token;
  do {
    const page = await listPage(client, bucket, { ...request, token });
    objects.push(...page.objects);
    folders.push(...page.folders);
    token = page.next;
  } while (token !== undefined);
  return { objects, folders };
}
