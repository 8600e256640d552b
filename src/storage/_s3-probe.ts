/**
 * Finds out whether an S3-compatible server enforces conditional writes
 * (If-None-Match "*" and If-Match on PutObject) or accepts and ignores them.
 * The answer decides whether the state and the lock can rely on the server
 * (compare-and-swap) or must fall back to best effort (read, compare, write).
 */
import { randomBytes } from "node:crypto";
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { tokenOfEtag } from "./_s3-client.js";
import { isNotFound, isPreconditionFailed } from "./_s3-errors.js";
import type { VersionToken } from "./driver.js";

/** Name prefix of the probe object: reserved (`.distributor.`), so never an output or unmanaged. */
export const PROBE_PREFIX = ".distributor.probe-";

/** The name of a probe object (PROBE_PREFIX and 16 hex digits): the longest name distributor gives an object of its own. */
export const PROBE_NAME_BYTES = PROBE_PREFIX.length + 16;

/** What the probe needs from the driver: raw conditional PUTs that always send the headers. */
export interface ProbeStore {
  /**
   * PUT a zero-byte object with the condition: `"refused"` when the server
   * answered 412, else the new object's version token (`""` when the server
   * gave no ETag).
   */
  put(path: string, ifMatch: VersionToken | null): Promise<"refused" | VersionToken>;
  /** Delete the object; already missing is fine. */
  remove(path: string): Promise<void>;
}

/** An ETag no object can have (S3 ETags are hex MD5s, possibly with a part count). */
const IMPOSSIBLE_ETAG = "distributor-probe-never-matches";

/**
 * True when the server refuses a second `If-None-Match: *` create of a key
 * and an `If-Match` with an ETag the object does not have, and accepts an
 * `If-Match` with the ETag it does have: a server that refused every
 * `If-Match` (or wanted the ETag written another way) would otherwise pass,
 * and every later state update would fail as a false `state_conflict`.
 * Uses three fresh random keys (`.distributor.probe-<hex>`), one per check,
 * so concurrent probes and runs never meet, and deletes them afterwards; a
 * probe killed midway leaves zero-byte reserved objects that every command
 * ignores (force_replace too, as every reserved name but the state).
 *
 * The keys are probed side by side: three round trips, whatever the number
 * of checks, and the refusals are awaited together. Some servers (Ceph RGW)
 * send a 412's body a delayed ACK after its headers, about 40 ms on
 * loopback, which the SDK waits for; every run that writes to S3 pays the
 * probe first.
 */
export async function probeConditionalWrites(store: ProbeStore): Promise<boolean> {
  const key = () => `${PROBE_PREFIX}${randomBytes(8).toString("hex")}`;
  const [recreated, swapped, matched] = [key(), key(), key()];
  try {
    // A refused first create of a random key cannot be a lost race: the server
    // checks conditions, which is all this asks.
    const created = await settledAll([
      store.put(recreated, null),
      store.put(swapped, null),
      store.put(matched, null),
    ]);
    if (created.includes("refused")) return true;
    const token = created[2] as VersionToken;
    // Never two requests to one key at once: AWS may answer concurrent
    // conditional writes to one key with 409 ConditionalRequestConflict,
    // which would fail the probe for nothing.
    const [recreate, staleSwap, swap] = await settledAll([
      store.put(recreated, null),
      store.put(swapped, IMPOSSIBLE_ETAG),
      // Without an ETag to send there is nothing to check.
      token === "" ? Promise.resolve("") : store.put(matched, token),
    ]);
    return recreate === "refused" && staleSwap === "refused" && swap !== "refused";
  } finally {
    await settledAll([store.remove(recreated), store.remove(swapped), store.remove(matched)]);
  }
}

/**
 * Every result once all have settled, or the first failure then: a request
 * still in flight when the probe moves on could land after its delete.
 */
async function settledAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((result) => result.status === "rejected");
  if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
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
        const { ETag } = await client.send(new PutObjectCommand({ ...input, ...condition }));
        return tokenOfEtag(ETag) ?? "";
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
  return `warning: ${root}: the server does not honour conditional writes (If-None-Match/If-Match) as S3 does; the state and the lock fall back to best effort (read, compare, write), so a concurrent writer may go undetected in a short window. Run one writer at a time here (see docs/storage-s3.md).`;
}
