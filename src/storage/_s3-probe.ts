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
 * True when the server refuses both a second `If-None-Match: *` create of the
 * same key and an `If-Match` with an ETag the object does not have. Uses a
 * fresh random key (`.distributor.probe-<hex>`) so concurrent probes and runs
 * never meet, and deletes it afterwards; a probe killed midway leaves a
 * zero-byte reserved object that is ignored and goes with `force_replace`.
 */
export async function probeConditionalWrites(store: ProbeStore): Promise<boolean> {
  const path = `${PROBE_PREFIX}${randomBytes(8).toString("hex")}`;
  try {
    // A refused first create of a random key cannot be a lost race: the server
    // checks conditions, which is all this asks.
    if ((await store.put(path, null)) === "refused") return true;
    // One after the other, although sending them together saves a round
    // trip: AWS may answer concurrent conditional writes to one key with 409
    // ConditionalRequestConflict, which would fail the probe for nothing.
    const recreate = await store.put(path, null);
    const staleSwap = await store.put(path, IMPOSSIBLE_ETAG);
    return recreate === "refused" && staleSwap === "refused";
  } finally {
    await store.remove(path);
  }
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
