/**
 * The bytes of small bundle files, kept from verification until they are
 * published. Verification reads and hashes every listed file (SPEC §2); a copy
 * made later would have to read and hash the file again, because it may have
 * changed since (storage/_source-read.ts). For small files that second pass
 * was most of the copy: an open, a stat, a read, a close and a SHA-256 per
 * file, about 36,000 system calls for the 9,000 small files of the
 * benchmark's M. Kept here, the bytes published are the very bytes hashed,
 * and nothing is read twice.
 *
 * One block of shared memory holds them, so that the helper threads that
 * verify can fill it and the write threads can write from it without a byte
 * crossing a message: a thread that verifies a file reserves its place
 * (one compare-and-swap), reads the file straight into it and hashes it
 * there. The block is bounded (keepBudget); files that do not fit, or
 * that are larger than KEEP_MAX_FILE_BYTES, are read again when copied, as
 * before. A place is written once, by the thread that reserved it, before
 * verification ends, and only read afterwards. The bound is per run
 * (KeepBudget): the stores of a run's bundles all live until it ends.
 */
import { totalmem } from "node:os";

/**
 * Files up to this size are kept: the size up to which a filesystem write
 * runs synchronously on a write thread (storage/_fs-write.ts). Larger ones
 * are copied in chunks, where a second read costs little next to the copy.
 */
export const KEEP_MAX_FILE_BYTES = 256 * 1024;

/**
 * Files up to this size are kept for a bundle that goes to a remote
 * destination (S3): an upload of kept bytes is one request sent from memory,
 * where a file read again is streamed, re-hashed and written to the socket
 * in 64 KiB pieces on the calling thread. On the benchmark's S, whose four
 * 10 MB files are 40 of its 52 MB, keeping them took 0.12-0.16 s of the
 * client's CPU off a publish to S3 (docs/performance.md, item 62). Larger
 * files still stream (and from the multipart threshold, go in parts), so
 * that a few of them cannot take the whole budget from the small ones.
 */
export const KEEP_MAX_UPLOAD_FILE_BYTES = 16 * 1024 * 1024;

/** At most this much memory is kept in a run (see keepBudget). */
const MAX_KEPT_BYTES = 256 * 1024 * 1024;

/** What a run may still keep, in bytes, over all of its bundles. */
export interface KeepBudget {
  remaining: number;
}

/**
 * A run's budget: MAX_KEPT_BYTES, and at most 1/16 of the memory the process
 * may use (the machine's, or a container's limit when lower). The
 * benchmark's C (100,000 files, 450 MB) keeps a little over half of its
 * files within it; the rest are read again as before.
 */
export function keepBudget(
  machine = totalmem(),
  // Node 20 gives undefined or 0 without a limit, and about 2^64 for "max".
  limit: number | undefined = process.constrainedMemory?.(),
): KeepBudget {
  const memory = Math.min(machine, limit || Number.POSITIVE_INFINITY);
  return { remaining: Math.min(MAX_KEPT_BYTES, Math.floor(memory / 16)) };
}

/** Where kept bytes are: plain shared memory, so it can be sent to helper threads as is. */
export interface VerifiedBytesStore {
  bytes: SharedArrayBuffer;
  /** The first free byte of `bytes`, at [0]. */
  next: Int32Array<SharedArrayBuffer>;
  /** For each listed file (by its index in the list): where its bytes start, or -1. */
  starts: Int32Array<SharedArrayBuffer>;
  /**
   * For each listed file: 1 while it may be kept, 0 once the caller knows it
   * will not be copied (excluded, or only rendered): see keepOnly.
   */
  wanted: Uint8Array<SharedArrayBuffer>;
  /** Files larger than this are not kept (KEEP_MAX_FILE_BYTES, or more for uploads). */
  maxFileBytes: number;
}

/**
 * A store for the files of `files` up to `maxFileBytes` each, sized to hold
 * them all (one byte more each: see FileChecker) within `limit` bytes; null
 * when none would fit. Memory is only used as files are kept: the block is
 * reserved, not touched.
 */
export function newVerifiedBytesStore(
  files: readonly { size: number }[],
  limit: number,
  maxFileBytes = KEEP_MAX_FILE_BYTES,
): VerifiedBytesStore | null {
  let wanted = 0;
  for (const file of files) {
    if (file.size <= maxFileBytes) wanted += file.size + 1;
    if (wanted >= limit) break;
  }
  const capacity = Math.min(wanted, limit);
  if (capacity <= 0) return null;
  const starts = new Int32Array(new SharedArrayBuffer(files.length * 4));
  starts.fill(-1);
  const keep = new Uint8Array(new SharedArrayBuffer(files.length));
  keep.fill(1);
  return {
    bytes: new SharedArrayBuffer(capacity),
    next: new Int32Array(new SharedArrayBuffer(4)),
    starts,
    wanted: keep,
    maxFileBytes,
  };
}

/**
 * Keep only the files at `indexes` (ascending) from now on: the others are
 * not copied by this run. Files checked before this call may have been kept
 * all the same, which costs memory (and room in the store), not
 * correctness. Indexes out of order would leave files unwanted that are
 * wanted: they would be read again when copied, as without a store.
 */
export function keepOnly(store: VerifiedBytesStore, indexes: readonly number[]): void {
  let next = 0;
  for (let index = 0; index < store.wanted.length; index++) {
    if (indexes[next] === index) next++;
    else Atomics.store(store.wanted, index, 0);
  }
}

/** Whether the file at `index` may still be kept. */
export function isWanted(store: VerifiedBytesStore, index: number): boolean {
  return Atomics.load(store.wanted, index) === 1;
}

/** Reserve `length` bytes; where they start, or -1 when the store is full. */
export function reserve(store: VerifiedBytesStore, length: number): number {
  for (;;) {
    const start = Atomics.load(store.next, 0);
    if (start + length > store.bytes.byteLength) return -1;
    if (Atomics.compareExchange(store.next, 0, start, start + length) === start) return start;
  }
}

/** How many bytes of the store are taken. */
export function usedBytes(store: VerifiedBytesStore): number {
  return Atomics.load(store.next, 0);
}

/** The kept bytes of the file at `index` of the list (`size` of them), if it was kept. */
export function keptBytes(
  store: VerifiedBytesStore,
  index: number,
  size: number,
): Uint8Array | undefined {
  const start = Atomics.load(store.starts, index);
  return start < 0 ? undefined : new Uint8Array(store.bytes, start, size);
}
