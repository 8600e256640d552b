/**
 * The S3 storage driver (AWS S3 and S3-compatible servers: Ceph RGW, MinIO, R2).
 * Keys are `<prefix>/<path>`; there are no directories. Writes are one PUT (or
 * one multipart upload completed at once), so readers see old or new bytes.
 * Conditional writes use If-None-Match / If-Match, which also build the lock.
 */
import { PassThrough, type Readable } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  type S3Client,
} from "@aws-sdk/client-s3";

import { DistributorError, type LockHolder } from "../errors.js";
import { SHA256_DIGEST } from "../hashing.js";
import type { OutputContent } from "../model.js";
import { LOCK_FILE, STATE_FILE } from "../paths.js";
import { stoppedMessage, writesStopped } from "./_fs-write-pool.js";
import { createS3Client, tokenOfEtag, withRetries } from "./_s3-client.js";
import { DirectPut } from "./_s3-direct-put.js";
import {
  httpStatusOf,
  isConditionalConflict,
  isLostRace,
  isNotFound,
  isPreconditionFailed,
} from "./_s3-errors.js";
import {
  deleteKeys,
  driverPathProblem,
  type ListedObject,
  listKeys,
  S3Keyspace,
} from "./_s3-keys.js";
import { acquireObjectLock, type LockStore, readObjectLock } from "./_s3-lock.js";
import {
  noConditionalWritesWarning,
  PROBE_NAME_BYTES,
  probeConditionalWrites,
  s3ProbeStore,
} from "./_s3-probe.js";
import { sendObject } from "./_s3-write.js";
import type {
  AcquireLockOptions,
  DeleteResult,
  LockHandle,
  StorageCapabilities,
  StorageDriver,
  StorageEntry,
  StoredBytes,
  StoredDigest,
  VersionToken,
  WriteOptions,
} from "./driver.js";

const MiB = 1024 * 1024;
/** The longest key S3 (and RGW) accepts, in UTF-8 bytes. */
const MAX_KEY_BYTES = 1024;

export interface S3DriverOptions {
  bucket: string;
  /** Clean path or "" (the whole bucket). */
  prefix: string;
  /** Default: the AWS chain (AWS_REGION, shared profile). */
  region?: string;
  /** e.g. `http://127.0.0.1:7480` for a local S3-compatible server. */
  endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`), needed by most self-hosted servers. */
  forcePathStyle?: boolean;
  /**
   * Parallel connections to the server per connection pool (maxSockets of the
   * SDK's agent, and of the direct-PUT path's for small unconditional PUTs).
   * Default 16.
   */
  maxConcurrency?: number;
  /**
   * Files of this size or more go up as a multipart upload (parts of 5–16 MiB,
   * 4 in flight, so memory stays bounded for any size). Default 64 MiB.
   */
  multipartThreshold?: number;
  /**
   * A request whose connection stays silent this long fails (and is retried),
   * so a hung server ends the run with storage_error instead of hanging it.
   * Idle time, not total time: a large upload that keeps sending never trips it.
   * Default 60 s.
   */
  idleTimeoutMs?: number;
  /** ListObjectsV2 page size (MaxKeys), for tests of pagination. Default: the server's (1000). */
  listPageSize?: number;
  /** A ready client (tests; custom credentials). Default: one built from the options above. */
  client?: S3Client;
}

/** A StorageDriver over one bucket prefix; `root` is `s3://bucket/prefix/`. */
export function createS3Driver(options: S3DriverOptions): StorageDriver {
  return new S3Driver(options);
}

class S3Driver implements StorageDriver {
  readonly root: string;
  /**
   * Conditional writes are assumed until the first `acquireLock` (the first
   * step of every write) probes the server once: a server that accepts and
   * ignores If-None-Match / If-Match turns `conditionalWrite` off, and `write`
   * then emulates conditions (read, compare, write). Read-only commands and
   * dry runs never probe, since they never write.
   */
  readonly capabilities: StorageCapabilities = {
    conditionalWrite: true,
    batchDelete: true,
    remote: true,
  };
  /** One write per connection the client may open (`max_concurrency`). */
  readonly writeConcurrency: number;
  private probe: Promise<boolean> | undefined;
  private readonly client: S3Client;
  /** Unconditional small PUTs, without the SDK's per-request CPU (see _s3-direct-put.ts). */
  private readonly directPut: DirectPut;
  private readonly keys: S3Keyspace;
  private readonly multipartThreshold: number;
  private readonly listPageSize: number | undefined;

  constructor(options: S3DriverOptions) {
    this.keys = new S3Keyspace(options.bucket, options.prefix);
    this.root = this.keys.root;
    this.multipartThreshold = options.multipartThreshold ?? 64 * MiB;
    this.listPageSize = options.listPageSize;
    const maxConcurrency = options.maxConcurrency ?? 16;
    this.writeConcurrency = maxConcurrency;
    const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.client =
      options.client ??
      createS3Client({
        region: options.region,
        endpoint: options.endpoint,
        forcePathStyle: options.forcePathStyle,
        maxConcurrency,
        idleTimeoutMs,
      });
    this.directPut = new DirectPut(this.client, {
      bucket: options.bucket,
      maxConcurrency,
      idleTimeoutMs,
    });
  }

  async list(): Promise<StorageEntry[]> {
    const entries: StorageEntry[] = [];
    for (const object of await this.listObjects()) {
      const path = this.keys.pathOf(object.key);
      // Zero-byte "folder" markers made by consoles and other tools are not
      // files, and other keys that are not paths (`a//b`, `a/../b`) are none
      // of the planner's business: no output can be written there, and a
      // delete of one would be refused (a force_replace would fail after it
      // had emptied the rest of the root). They stay, as docs/storage-s3.md says.
      if (path === "" || driverPathProblem(path) !== null) continue;
      entries.push({ path, size: object.size, type: "file" });
    }
    return entries;
  }

  async stat(path: string): Promise<StorageEntry | null> {
    const head = await this.head(path);
    return head && { path, size: head.ContentLength ?? 0, type: "file" };
  }

  async read(path: string): Promise<StoredBytes | null> {
    const body = await this.getObject(path);
    if (body === null) return null;
    try {
      return { bytes: await body.stream.transformToByteArray(), token: body.token };
    } catch (error) {
      throw this.keys.failure(error, "GetObject", path);
    }
  }

  async readStream(path: string): Promise<NodeJS.ReadableStream> {
    const body = await this.getObject(path);
    if (body === null) {
      throw new DistributorError(
        "storage_error",
        `${this.keys.location(path)}: no such object (deleted or never written).`,
        {
          paths: [path],
        },
      );
    }
    // A connection lost while the body is read is a storage_error like any
    // failed request, not an error of the caller's loop.
    const source = body.stream as unknown as Readable;
    const out = new PassThrough();
    source.once("error", (error) => out.destroy(this.keys.failure(error, "GetObject", path)));
    return source.pipe(out);
  }

  /**
   * How the bytes go up is _s3-write.ts's choice: small content as one PUT
   * (straight over HTTP when unconditional, through the SDK when
   * conditional), a larger file streamed as one PutObject, and from
   * `multipartThreshold` on a multipart upload. `ifMatch` becomes
   * If-None-Match "*" or If-Match; a refused condition is `state_conflict`.
   */
  async write(
    path: string,
    content: OutputContent,
    options: WriteOptions = {},
  ): Promise<VersionToken> {
    if (options.ifMatch !== undefined && !this.capabilities.conditionalWrite) {
      return this.writeBestEffort(path, content, options);
    }
    try {
      const etag =
        options.ifMatch === undefined
          ? await this.send(path, content, options)
          : await withRetries(() => this.send(path, content, options), isConditionalConflict);
      // RGW completes multipart uploads with an empty ETag: ask for the real one.
      return tokenOfEtag(etag) ?? (await this.currentToken(path)) ?? "";
    } catch (error) {
      if (options.ifMatch !== undefined && isLostRace(error, options.ifMatch)) {
        // The SDK retries a request whose response was lost; the retry is then
        // refused by the object the first attempt wrote. Exactly our bytes in
        // place (a state holds its own timestamps) mean that write happened.
        const ours = content.type === "bytes" ? await this.tokenIfHolds(path, content.bytes) : null;
        if (ours !== null) return ours;
        // A 500 may also be a server that fails every write: unless the
        // object shows another writer's version, report the failure.
        if (httpStatusOf(error) === 500 && !(await this.changedSince(path, options.ifMatch))) {
          throw this.keys.failure(error, "PutObject", path);
        }
        throw this.conflict(path, options, error);
      }
      throw this.keys.failure(error, "PutObject", path);
    }
  }

  async deleteMany(paths: readonly string[]): Promise<DeleteResult[]> {
    const results = new Map<string, DeleteResult>();
    const keys: string[] = [];
    for (const path of paths) {
      try {
        keys.push(this.keys.key(path));
        results.set(path, { path });
      } catch (error) {
        results.set(path, { path, error: (error as Error).message });
      }
    }
    const describe = (error: unknown) => this.keys.failure(error, "DeleteObjects").message;
    // A signal stops the deletes between batches, as the filesystem's stop
    // between files: the lock is released once the batch in flight ends.
    const stopped = () => (writesStopped() ? stoppedMessage() : null);
    const failures = await deleteKeys(this.client, this.keys.bucket, { keys, describe, stopped });
    for (const [key, error] of failures) {
      const path = this.keys.pathOf(key);
      results.set(path, { path, error });
    }
    return paths.map((path) => results.get(path) as DeleteResult);
  }

  /**
   * Everything under the prefix goes, except the root's `.distributor.lock`:
   * force_replace runs while holding it, and removing it would let another
   * writer in. With an empty prefix this empties the whole bucket.
   */
  async deleteAll(): Promise<void> {
    const lockKey = this.keys.key(LOCK_FILE);
    // Raw keys, not paths: objects other tools left (folder markers, `a//b`) go too.
    const keys = (await this.listObjects()).map((o) => o.key).filter((key) => key !== lockKey);
    const describe = (error: unknown) => this.keys.failure(error, "DeleteObjects").message;
    const failures = await deleteKeys(this.client, this.keys.bucket, { keys, describe });
    if (failures.size > 0) {
      const detail = [...failures].slice(0, 5).map(([key, error]) => `${key} (${error})`);
      throw new DistributorError(
        "storage_error",
        `${this.root}: could not delete ${failures.size} object(s): ${detail.join(", ")}. Check permissions and retry.`,
        { paths: [...failures.keys()].map((key) => this.keys.pathOf(key)) },
      );
    }
  }

  async acquireLock(options: AcquireLockOptions = {}): Promise<LockHandle> {
    if (!(await this.conditionalWritesHonoured())) {
      options.onWarning?.(noConditionalWritesWarning(this.root));
    }
    return acquireObjectLock(this.lockStore(), options);
  }

  readLock(): Promise<LockHolder | null> {
    return readObjectLock(this.lockStore());
  }

  /** S3 keys hold at most 1024 bytes, the prefix included (StorageDriver.pathProblem). */
  pathProblem(path: string): string | null {
    const bytes = Buffer.byteLength(this.keys.keyPrefix) + Buffer.byteLength(path);
    if (bytes <= MAX_KEY_BYTES) return null;
    return `its key under ${this.root} would be ${bytes} bytes, and S3 keys hold at most ${MAX_KEY_BYTES}`;
  }

  /**
   * The longest key of distributor's own (StorageDriver.rootProblem): the
   * probe's, longer than the state's and the lock's. Without this check a
   * prefix of about 1,000 bytes planned a publish, dry run included, whose
   * first request (the probe) the server then refused.
   */
  rootProblem(): string | null {
    const prefix = Buffer.byteLength(this.keys.keyPrefix);
    const longest = Math.max(
      PROBE_NAME_BYTES,
      ...[STATE_FILE, LOCK_FILE].map((name) => name.length),
    );
    if (prefix + longest <= MAX_KEY_BYTES) return null;
    return `its key prefix is ${prefix} bytes, and distributor's own objects there (the state, the lock, the probe of conditional writes) need keys of up to ${prefix + longest} bytes, where S3 keys hold at most ${MAX_KEY_BYTES}`;
  }

  /** One HeadObject: the size and the `sha256` metadata written with the bytes. */
  async storedDigest(path: string): Promise<StoredDigest | null> {
    const head = await this.head(path);
    if (head === null) return null;
    const recorded = head.Metadata?.sha256;
    // Anything but a well-formed digest (another tool's metadata) means "hash it".
    const sha256 = recorded !== undefined && SHA256_DIGEST.test(recorded) ? recorded : null;
    return { size: head.ContentLength ?? 0, sha256 };
  }

  // ---- helpers -------------------------------------------------------------

  /** Probe once per driver (see `capabilities`); the answer sets `conditionalWrite`. */
  private conditionalWritesHonoured(): Promise<boolean> {
    this.probe ??= probeConditionalWrites(
      s3ProbeStore(this.client, { bucket: this.keys.bucket, keyOf: (path) => this.keys.key(path) }),
    ).then(
      (honoured) => {
        this.capabilities.conditionalWrite = honoured;
        return honoured;
      },
      (error: unknown) => {
        this.probe = undefined;
        throw this.keys.failure(error, "PutObject (conditional-write probe)");
      },
    );
    return this.probe;
  }

  /**
   * The storage contract's best-effort form for servers that ignore conditions:
   * compare the current version first, write unconditionally, then read the
   * version back so a writer that slipped in between is at least reported.
   */
  private async writeBestEffort(
    path: string,
    content: OutputContent,
    options: WriteOptions,
  ): Promise<VersionToken> {
    await this.checkPrecondition(path, options);
    const written = await this.write(path, content, { ...options, ifMatch: undefined });
    const current = await this.currentToken(path);
    if (written !== "" && current !== written) throw this.conflict(path, options, undefined);
    return written;
  }

  private listObjects(): Promise<ListedObject[]> {
    const options = {
      prefix: this.keys.keyPrefix,
      pageSize: this.listPageSize,
      // As many listings in flight as writes: both are bound by the connections.
      concurrency: this.writeConcurrency,
    };
    return listKeys(this.client, this.keys.bucket, options).catch((error: unknown) => {
      throw this.keys.failure(error, "ListObjectsV2");
    });
  }

  private async getObject(path: string) {
    const key = this.keys.key(path);
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.keys.bucket, Key: key }),
      );
      if (out.Body === undefined) throw new Error("GetObject returned no body");
      return { stream: out.Body, token: tokenOfEtag(out.ETag) ?? "" };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.keys.failure(error, "GetObject", path);
    }
  }

  private send(
    path: string,
    content: OutputContent,
    options: WriteOptions,
  ): Promise<string | undefined> {
    const key = this.keys.key(path);
    const target = {
      client: this.client,
      directPut: this.directPut,
      bucket: this.keys.bucket,
      key,
      path,
      location: this.keys.locationOfKey(key),
      multipartThreshold: this.multipartThreshold,
      checkPrecondition: () => this.checkPrecondition(path, options),
    };
    return sendObject(target, content, options);
  }

  private conflict(path: string, options: WriteOptions, cause: unknown): DistributorError {
    const what = options.ifMatch === null ? "already exists" : "was changed by another writer";
    return new DistributorError(
      "state_conflict",
      `${this.keys.location(path)} ${what} (conditional write refused). Another run may be writing here; re-run to plan against the current content.`,
      { paths: [path], cause },
    );
  }

  /** The object's token when it holds exactly `bytes`, else `null` (absent, other bytes, unreadable). */
  private async tokenIfHolds(path: string, bytes: Uint8Array): Promise<VersionToken | null> {
    const stored = await this.read(path).catch(() => null);
    if (stored === null || stored.bytes.byteLength !== bytes.byteLength) return null;
    return Buffer.from(stored.bytes).equals(bytes) ? stored.token : null;
  }

  /**
   * Whether the object is now another version than `ifMatch` names (`null`:
   * absent). False when a HEAD cannot tell (it fails too): the server's
   * failure is then what to report, not another writer.
   */
  private async changedSince(path: string, ifMatch: VersionToken | null): Promise<boolean> {
    try {
      return (await this.currentToken(path)) !== ifMatch;
    } catch {
      return false;
    }
  }

  /** The object's current version token, `null` when it is absent. */
  private async currentToken(path: string): Promise<VersionToken | null> {
    const head = await this.head(path);
    return head && tokenOfEtag(head.ETag);
  }

  /** The object's HeadObject answer, `null` when it is absent. */
  private async head(path: string): Promise<HeadObjectCommandOutput | null> {
    try {
      return await this.client.send(
        new HeadObjectCommand({ Bucket: this.keys.bucket, Key: this.keys.key(path) }),
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.keys.failure(error, "HeadObject", path);
    }
  }

  private async checkPrecondition(path: string, options: WriteOptions): Promise<void> {
    const current = await this.currentToken(path);
    if (current !== options.ifMatch) throw this.conflict(path, options, undefined);
  }

  private lockStore(): LockStore {
    return {
      root: this.root,
      read: (path: string) => this.read(path),
      currentToken: (path: string) => this.currentToken(path),
      write: (path: string, content: OutputContent, options: WriteOptions) =>
        this.write(path, content, options),
      deleteIfMatch: (path: string, token: VersionToken) => this.deleteIfMatch(path, token),
    };
  }

  /** AWS honours If-Match on delete; RGW ignores it, so callers compare content first. */
  private async deleteIfMatch(path: string, token: VersionToken): Promise<void> {
    try {
      await this.client.send(
        new DeleteObjectCommand({
          Bucket: this.keys.bucket,
          Key: this.keys.key(path),
          IfMatch: token,
        }),
      );
    } catch (error) {
      if (isNotFound(error) || isPreconditionFailed(error)) return;
      throw this.keys.failure(error, "DeleteObject", path);
    }
  }
}
