/**
 * The one storage interface every destination type implements (filesystem, s3).
 * Planning never sees a driver: it receives the listing and the state bytes.
 * Paths are always clean relative paths under the driver's root (see paths.ts),
 * or a reserved tool name such as `.distributor.json`.
 *
 * Conformance: test/storage-conformance.ts runs the same suite against every driver.
 */
import type { LockHolder } from "../errors.js";
import type { OutputContent } from "../model.js";

/**
 * One entry found under the root. A directory that holds something is not
 * listed, only what is in it; an empty one is listed as `directory`.
 */
export interface StorageEntry {
  path: string;
  size: number;
  /**
   * `file` for regular files/objects. `symlink`, `other` (fifo, socket, ...) and
   * `directory` (an empty one, which nothing else would reveal) exist only on
   * filesystems; none is ever followed or written through.
   */
  type: "file" | "symlink" | "other" | "directory";
}

/** Opaque version token of an object (filesystem: mtime+size+ino; S3: the ETag). */
export type VersionToken = string;

export interface StoredBytes {
  bytes: Uint8Array;
  token: VersionToken;
}

export interface WriteOptions {
  /** Content-Type (S3). Ignored by the filesystem. */
  contentType?: string;
  /** `sha256:<hex>` of the bytes; S3 stores it as object metadata for cheap drift checks. */
  sha256?: string;
  /**
   * Compare-and-swap: `null` = only if the object does not exist; a token = only if
   * the object still has that version. Violation throws a `state_conflict`
   * DistributorError. Omitted = unconditional. Drivers without
   * `capabilities.conditionalWrite` emulate it best-effort (read, compare, write).
   */
  ifMatch?: VersionToken | null;
  /** fsync file and directory before returning (the state file). Default false. */
  durable?: boolean;
}

/** One write of a batch (WriteBatch.writeAll). */
export interface BatchWrite {
  path: string;
  content: OutputContent;
  options?: WriteOptions;
}

/**
 * The writes of one apply's outputs, begun together (StorageDriver.beginWrites).
 * Each write is atomic as `StorageDriver.write` is; the batch may keep some
 * out of sight until `commit`.
 */
export interface WriteBatch {
  /**
   * `StorageDriver.write` for each of `writes`, whose paths the batch was
   * begun with, as many at once as the driver's own parallelism takes, and
   * `onWritten(index)` as each ends. No token: the executor records an
   * output by its digest, and making a token can cost a system call per
   * file (a filesystem's stat). After the first failure no new write
   * starts, and the call rejects with it once the writes started have
   * ended. One call for all of them, not a call per write: a promise per
   * write cost the calling thread more than handing the writes out
   * (docs/performance.md, item 58).
   */
  writeAll(writes: readonly BatchWrite[], onWritten?: (index: number) => void): Promise<void>;
  /** Put every write of the batch in place. Call once, after all of them succeeded. */
  commit(): Promise<void>;
  /**
   * Give up after a failed write: remove what the batch holds out of sight.
   * Never throws; after a signal's stop it leaves that to the next run's
   * removal of stale temporary files.
   */
  discard(): Promise<void>;
}

export interface DeleteResult {
  path: string;
  /** Absent on success (including "was already missing"). */
  error?: string;
}

export interface StorageCapabilities {
  /** Writes honour `ifMatch` atomically on the server (If-None-Match / If-Match). */
  conditionalWrite: boolean;
  /** `deleteMany` is one request per batch rather than one per path. */
  batchDelete: boolean;
  /**
   * Each call is a request over the network that costs this process little
   * CPU: independent reads gain by being in flight together (the executor
   * reads the state and lists the root at once). A filesystem's calls are
   * CPU and kernel work on these cores instead, where running them together
   * measured slower (docs/performance.md, 5b).
   */
  remote: boolean;
}

/** What a driver recorded about an object without reading its bytes (see `storedDigest`). */
export interface StoredDigest {
  size: number;
  /** The `sha256:<hex>` written with the bytes (WriteOptions.sha256); `null` when the object has none. */
  sha256: string | null;
}

/** Options of `acquireLock`. */
export interface AcquireLockOptions {
  /** Called with the old holder when a dead local process's lock is taken over. */
  onStaleLock?: (stale: LockHolder) => void;
  /**
   * Called with a one-line warning when the driver found out, while preparing to
   * write, that it must fall back to best effort (e.g. an S3 server that ignores
   * conditional writes: `capabilities.conditionalWrite` is then false).
   */
  onWarning?: (message: string) => void;
}

export interface LockHandle {
  holder: LockHolder;
  /** Remove the lock. Idempotent; never throws for an already-removed lock. */
  release(): Promise<void>;
}

export interface ListOptions {
  /**
   * The caller has CPU work of its own while the listing runs (parsing a large
   * state): a driver whose listing is CPU or kernel work on this thread may do
   * it on another one. Same result either way.
   */
  busyHere?: boolean;
}

export interface StorageDriver {
  /** Human/JSON display of the destination root: an absolute path or `s3://bucket/prefix/`. */
  readonly root: string;
  readonly capabilities: StorageCapabilities;
  /**
   * How many `write` calls the executor keeps in flight: as many as keep the
   * driver's own parallelism busy (S3: its connections; filesystem: its write
   * threads, see filesystem.ts).
   */
  readonly writeConcurrency: number;

  /**
   * Every entry under the root, recursively, with relative paths, including
   * reserved tool files (callers filter). A missing root lists as empty.
   * Symlinks are reported, never followed.
   */
  list(options?: ListOptions): Promise<StorageEntry[]>;

  /** The entry at `path`, or `null` when nothing is there. Never follows a final symlink. */
  stat(path: string): Promise<StorageEntry | null>;

  /**
   * Whether the root treats names that differ only by case as one (a
   * filesystem on macOS or Windows, by default). Absent: it never does (S3).
   * Best-effort: answers from the tool's own files (the lock while it is
   * held, the state), so a root holding neither answers false.
   */
  foldsCase?(): Promise<boolean>;

  /**
   * Whole content of a small object (the state file) with its version token, or
   * `null` when absent. A symlink or non-file at `path` is not read: it throws
   * `storage_error` (state classification uses `stat` first).
   */
  read(path: string): Promise<StoredBytes | null>;

  /** A stream of the bytes at `path` (hashing for verify). Throws `storage_error` when absent. */
  readStream(path: string): Promise<NodeJS.ReadableStream>;

  /**
   * Atomically put `content` at `path`: readers see the old or the new bytes, never
   * a mix (filesystem: temp file + rename in the same directory; S3: one PUT or a
   * multipart upload completed at once). Creates parent directories. Refuses with
   * `unsafe_path` to write through a symlink inside the root. Returns the new token.
   */
  write(path: string, content: OutputContent, options?: WriteOptions): Promise<VersionToken>;

  /**
   * Optional: begin writing the outputs at `paths` (those of one apply) as a
   * batch. A filesystem writes the files of a folder that does not exist yet
   * under a temporary folder beside it and renames that into place on
   * `commit`: the new folder appears whole, and its files need no rename each
   * (docs/performance.md, item 48). Absent (S3): the executor calls `write`.
   */
  beginWrites?(paths: readonly string[]): Promise<WriteBatch>;

  /**
   * Delete each path (already missing counts as success), then remove directories
   * left empty up to, never including, the root. Never deletes through a symlink.
   * One failure does not stop the others; each path gets a result.
   */
  deleteMany(paths: readonly string[]): Promise<DeleteResult[]>;

  /**
   * Delete everything under the root (force_replace), keeping the root itself and
   * its `.distributor.lock`, which the caller holds while it replaces the root.
   */
  deleteAll(): Promise<void>;

  /**
   * Take the root's `.distributor.lock` (creating the root if needed; a
   * filesystem root made here is removed again on release if it is still
   * empty, so a run that writes nothing leaves no trace). Throws
   * `LockedError` naming the holder if held, or `BusyLockError` (a
   * LockedError without a holder) when other runs took and released the lock
   * each time this one looked. A lock whose holder is a dead process on this
   * host is taken over, calling `onStaleLock` with the old holder once it is
   * ours.
   */
  acquireLock(options?: AcquireLockOptions): Promise<LockHandle>;

  /**
   * The current lock holder, or `null` when unlocked (status). A lock file that
   * cannot be parsed still locks: it is UNREADABLE_LOCK_HOLDER (pid 0).
   */
  readLock(): Promise<LockHolder | null>;

  /**
   * Optional: the size and recorded digest of the object at `path` from one
   * metadata request, without reading the bytes; `null` when nothing is there.
   * `verify` trusts a non-null `sha256` instead of re-hashing, so a driver may
   * implement this only if the digest is stored atomically with the bytes it
   * describes (S3: user metadata of the same PUT), never beside them.
   */
  storedDigest?(path: string): Promise<StoredDigest | null>;

  /**
   * Optional: why this root cannot hold an output at the clean path `path`,
   * or `null` when it can (S3: a key longer than the service allows once the
   * prefix is added; a filesystem: a name longer than a folder holds). Asked
   * for every planned output before anything is written, so that such a path
   * stops the run instead of failing halfway.
   */
  pathProblem?(path: string): string | null;

  /**
   * Optional: why this root cannot hold distributor's own files (the state,
   * the lock, and a driver's own objects such as S3's probe of conditional
   * writes), or `null` when it can. Asked, as pathProblem is, before
   * anything is read or written, dry runs included: a root that cannot hold
   * them would otherwise plan a publish that then fails at its first write.
   */
  rootProblem?(): string | null;
}
