/**
 * `distributor reconcile-state` as a library operation (SPEC §7, seed: Repair
 * Semantics): forget the catalog records whose files are gone. It never deletes
 * a destination file, never adopts an unmanaged entry, never validates digests
 * and never rewrites a state that is not valid.
 */

import { mapLimit } from "../concurrency.js";
import { type MissingRecord, planReconcile } from "../planning/plan-reconcile.js";
import { openDestination } from "../storage/create-driver.js";
import type { StorageDriver, StorageEntry } from "../storage/driver.js";
import { formatTimestamp } from "../timestamps.js";
import { DISTRIBUTOR_VERSION } from "../version.js";
import {
  type MaintenanceOptions,
  maintenanceConfig,
  requireValidState,
  selectOwnerPair,
} from "./_maintenance.js";
import { unlessStopped, withLocks } from "./locks.js";
import { readState, writeState } from "./root-io.js";

export interface ReconcileOptions extends MaintenanceOptions {
  /** Check every record of the root, not only the selected owner's. Default false. */
  allOwners?: boolean;
  /** Report only: no lock, no write. Default false. */
  dryRun?: boolean;
  /** Clock for the rewritten state's `updated_at`, for tests. */
  now?: () => Date;
  /** Warnings (stale lock taken over). */
  onWarning?: (message: string) => void;
}

/** The `reconcile-state --json` document (SPEC §10). */
export interface ReconcileReport {
  ok: boolean;
  dry_run: boolean;
  pipeline_id: string;
  destination_id: string;
  root: string;
  missing: MissingRecord[];
  unmanaged: string[];
  /** Records removed from the state (empty in a dry run or when nothing was missing). */
  removed: string[];
}

const STAT_CONCURRENCY = 16;

/**
 * Reconcile one root's catalog with its storage. Throws `no_state` when the root
 * has no state, `state_conflict` when it is invalid, legacy or unsupported (the
 * bytes are left as they are), `locked` when another writer holds the root.
 * Without `dryRun` it takes the lock and rewrites the state (durably, only if it
 * is still the state that was read) only when a record was removed.
 */
export async function reconcileState(options: ReconcileOptions = {}): Promise<ReconcileReport> {
  const config = await maintenanceConfig(options);
  const { pipeline, destination } = selectOwnerPair(config, {
    ...options,
    command: "reconcile-state",
  });
  const driver = await openDestination(destination);
  const owner = { pipelineId: pipeline.id, destinationId: destination.id };
  const body = () => _reconcile(driver, { ...options, owner });
  const result = options.dryRun
    ? await body()
    : await withLocks([driver], body, { onWarning: options.onWarning });
  return {
    ok: true,
    dry_run: options.dryRun ?? false,
    pipeline_id: pipeline.id,
    destination_id: destination.id,
    root: driver.root,
    ...result,
  };
}

type ReconcileResult = Pick<ReconcileReport, "missing" | "unmanaged" | "removed">;

async function _reconcile(
  driver: StorageDriver,
  options: ReconcileOptions & { owner: { pipelineId: string; destinationId: string } },
): Promise<ReconcileResult> {
  const { state, stateToken } = await readState(driver);
  const catalog = requireValidState(state, { root: driver.root, command: "reconcile-state" });
  const input = {
    state: catalog,
    owner: options.owner,
    allOwners: options.allOwners ?? false,
    now: formatTimestamp((options.now ?? (() => new Date()))()),
    distributorVersion: DISTRIBUTOR_VERSION,
  };
  const listing = await driver.list();
  const firstLook = planReconcile({ ...input, listing });
  // The listing is a snapshot; a record is only forgotten when a stat of its own
  // path says "nothing there". A stat that fails is a storage error, not absence.
  const reappeared = await _presentAfterAll(driver, firstLook.missing);
  const plan =
    reappeared.length === 0
      ? firstLook
      : planReconcile({ ...input, listing: [...listing, ...reappeared] });
  if (options.dryRun || plan.nextState === null) {
    return { missing: plan.missing, unmanaged: plan.unmanaged, removed: [] };
  }
  const next = plan.nextState;
  await unlessStopped(() => writeState(driver, next, stateToken));
  return {
    missing: plan.missing,
    unmanaged: plan.unmanaged,
    removed: plan.missing.map((record) => record.path),
  };
}

async function _presentAfterAll(
  driver: StorageDriver,
  missing: readonly MissingRecord[],
): Promise<StorageEntry[]> {
  const entries = await mapLimit(missing, (record) => driver.stat(record.path), {
    limit: STAT_CONCURRENCY,
  });
  return entries.filter((entry): entry is StorageEntry => entry !== null);
}
