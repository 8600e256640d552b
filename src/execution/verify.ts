/**
 * `distributor verify` as a library operation (SPEC §9): a read-only drift check.
 * Every managed output in scope is re-hashed from storage (or, where the driver
 * keeps a digest written with the bytes, checked against it) and compared with its
 * record. Nothing is locked or written; `run --verify` is how drift is repaired.
 */

import { mapLimit } from "../concurrency.js";
import { digestStream } from "../hashing.js";
import { compareUtf8 } from "../paths.js";
import type { OutputRecord } from "../state/types.js";
import { openDestination } from "../storage/create-driver.js";
import type { StorageDriver } from "../storage/driver.js";
import {
  type MaintenanceOptions,
  maintenanceConfig,
  requireValidState,
  selectOwnerPair,
} from "./_maintenance.js";
import { readState } from "./root-io.js";

export interface VerifyOptions extends MaintenanceOptions {
  /** Check every record of the root, not only the selected owner's. Default false. */
  allOwners?: boolean;
  /** Outputs hashed at once. Default 8: hashing is I/O bound, not memory bound. */
  concurrency?: number;
}

/** The `verify --json` document (SPEC §10), plus where and how much was checked. */
export interface VerifyReport {
  /** True when no output drifted. */
  ok: boolean;
  pipeline_id: string;
  destination_id: string;
  root: string;
  /** Number of records checked. */
  checked: number;
  /** Outputs whose stored bytes no longer match the record's sha256 and size. */
  modified: string[];
  /** Outputs whose file is gone. */
  missing: string[];
}

type Finding = "ok" | "modified" | "missing";

/**
 * Re-hash each managed output of the selected owner (or of every owner) and
 * report drift. Throws `no_state` / `state_conflict` when the state is absent or
 * not valid, and `storage_error` when a file cannot be read (never "missing").
 */
export async function verify(options: VerifyOptions = {}): Promise<VerifyReport> {
  const config = await maintenanceConfig(options);
  const { pipeline, destination } = selectOwnerPair(config, { ...options, command: "verify" });
  const driver = await openDestination(destination);
  const { state } = await readState(driver);
  const catalog = requireValidState(state, { root: driver.root, command: "verify" });
  const records = catalog.outputs.filter(
    (record) =>
      options.allOwners ||
      (record.pipeline_id === pipeline.id && record.destination_id === destination.id),
  );
  const findings = await mapLimit(records, (record) => _check(driver, record), {
    limit: options.concurrency ?? 8,
  });
  const pathsWith = (finding: Finding) =>
    records
      .filter((_, index) => findings[index] === finding)
      .map((record) => record.path)
      .sort(compareUtf8);
  const modified = pathsWith("modified");
  const missing = pathsWith("missing");
  return {
    ok: modified.length === 0 && missing.length === 0,
    pipeline_id: pipeline.id,
    destination_id: destination.id,
    root: driver.root,
    checked: records.length,
    modified,
    missing,
  };
}

/**
 * A driver that records digests with the bytes (S3 metadata) answers from one
 * metadata request; only objects without a recorded digest are downloaded.
 */
async function _check(driver: StorageDriver, record: OutputRecord): Promise<Finding> {
  if (driver.storedDigest) {
    const stored = await driver.storedDigest(record.path);
    if (stored === null) return "missing";
    if (stored.size !== record.size) return "modified";
    if (stored.sha256 !== null) return stored.sha256 === record.sha256 ? "ok" : "modified";
  }
  const entry = await driver.stat(record.path);
  // A folder where the file was: the file is gone, as reconcile-state sees it
  // too (run --verify would not rewrite it: the folder is in the way).
  if (entry === null || entry.type === "directory") return "missing";
  // Something else now stands at the path (a symlink, a fifo): not our bytes.
  if (entry.type !== "file") return "modified";
  const stream = (await driver.readStream(record.path)) as AsyncIterable<Uint8Array>;
  const digest = await digestStream(stream);
  return digest.sha256 === record.sha256 && digest.size === record.size ? "ok" : "modified";
}
