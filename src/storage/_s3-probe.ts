/**
 * Finds out whether an S3-compatible server enforces conditional writes
 * (If-None-Match "*" and If-Match on PutObject) or accepts and ignores them.
 * The answer decides whether the state and the lock can rely on the server
 * (compare-and-swap) or must fall back to best effort (read, compare, write).
 */
import { randomBytes } from "node:crypto";
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { isNotFound, isPreconditionFailed } from "./_s3-errors.js";
import type { VersionToken } from "./driver.js";

/** Name prefix of the probe object: reserved (`.distributor.`), so never an output or unmanaged. */
export const PROBE_PREFIX = ".distributor.probe-";

/** What the probe needs from the driver: raw conditional PUTs that always send the headers. */
export interface ProbeStore {
  /** PUT a zero-byte object with the condition; `"refused"` when the server answered 412. */
  put(path: string, ifMatch: VersionToken | null): Promise<"written" | "refused">;
  /** Delete the object; already missing is fine. */
  remove(path: string): Promise<void>;
}

/** An ETag no object can have (S3 ETags are hex MD5s, possibly with a part count). */
const IMPOSSIBLE_ETAG = "distributor-probe-never-matches";

/**
 * True when the server refuses both a second `If-None-Match: *` create of a
 * key and an `If-Match` with an ETag the object does not have. Uses two fresh
 * random keys (`.distributor.probe-<hex>`), one per condition, so concurrent
 * probes and runs never meet, and deletes them afterwards; a probe killed
 * midway leaves zero-byte reserved objects that are ignored and go with
 * `force_replace`.
 *
 * The two keys are probed side by side: three round trips instead of four,
 * and the two refusals are awaited together. Some servers (Ceph RGW) send a
 * 412's body a delayed ACK after its headers, about 40 ms on loopback, which
 * the SDK waits for; every run that writes to S3 pays the probe first.
 */
export async function probeConditionalWrites(store: ProbeStore): Promise<boolean> {
  const recreated = `${PROBE_PREFIX}${randomBytes(8).toString("hex")}`;
  const swapped = `${PROBE_PREFIX}${randomBytes(8).toString("hex")}`;
  try {
    // A refused first create of a random key cannot be a lost race: the server
    // checks conditions, which is all this asks.
    const created = await settledBoth(store.put(recreated, null), store.put(swapped, null));
    if (created.includes("refused")) return true;
    // Never two requests to one key at once: AWS may answer concurrent
    // conditional writes to one key with 409 ConditionalRequestConflict,
    // which would fail the probe for nothing.
    const [recreate, staleSwap] = await settledBoth(
      store.put(recreated, null),
      store.put(swapped, IMPOSSIBLE_ETAG),
    );
    return recreate === "refused" && staleSwap === "refused";
  } finally {
    await settledBoth(store.remove(recreated), store.remove(swapped));
  }
}

/**
 * Both results once both have settled, or the first failure then: a request
 * still in flight when the probe moves on could land after its delete.
 */
async function settledBoth<T>(a: Promise<T>, b: Promise<T>): Promise<[T, T]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === "rejected") throw first.reason;
  if (second.status === "rejected") throw second.reason;
  return [first.value, second.value];
}

/**
 * The probe store of one bucket: `keyOf` maps a driver path to its key.
 * Failures other than a refused condition pass through raw for the driver to map.
 */
export function s3ProbeStore(
  client: S3Client,
  target: { bucket: string; keyOf: (path: string) => string },
): ProbeStore {
  const { bucket, keyOf } = target;
  return {
    async put(path, ifMatch) {
      const condition = ifMatch === null ? { IfNoneMatch: "*" } : { IfMatch: ifMatch };
      const input = { Bucket: bucket, Key: keyOf(path), Body: new Uint8Array(), ContentLength: 0 };
      try {
        await client.send(new PutObjectCommand({ ...input, ...condition }));
        return "written";
      } catch (error) {
        if (isPreconditionFailed(error)) return "refused";
        throw error;
      }
    },
    async remove(path) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(path) }));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
  };
}

/** The warning a run prints when the probe found conditions ignored. */
export function noConditionalWritesWarning(root: string): string {
  return `warning: ${root}: the server ignores conditional writes (If-None-Match/If-Match); the state and the lock fall back to best effort (read, compare, write), so a concurrent writer may go undetected in a short window. Run one writer at a time here (see docs/storage-s3.md).`;
}
