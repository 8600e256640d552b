/**
 * `distributor prune` as a library operation (SPEC §8, seed: Prune Semantics):
 * delete the selected owner's outputs that the destination's `retention.prune`
 * policy selects. A dry run unless `apply` is set.
 *
 * Crash safety: files are deleted first, then the state is rewritten without the
 * records of confirmed deletions. A crash in between leaves records whose files
 * are gone; the next prune selects them again, the delete finds them already
 * missing (which counts as deleted) and the state converges.
 */
import type { PrunePolicy } from "../config/types.js";
import { DistributorError } from "../errors.js";
import { clashPaths } from "../planning/_case-fold.js";
import { MAX_ERROR_PATHS } from "../planning/_failures.js";
import { removalOf, storageView } from "../planning/_storage-view.js";
import { type PlannedPrune, planPrune } from "../planning/plan-prune.js";
import type { CatalogState } from "../state/types.js";
import { openDestination } from "../storage/create-driver.js";
import type { StorageDriver } from "../storage/driver.js";
import { formatTimestamp, isRfc3339, parseRfc3339 } from "../timestamps.js";
import { DISTRIBUTOR_VERSION } from "../version.js";
import {
  type MaintenanceOptions,
  maintenanceConfig,
  requireValidState,
  selectOwnerPair,
} from "./_maintenance.js";
import { unlessStopped, withLocks } from "./locks.js";
import { readState, writeState } from "./root-io.js";
import { removeStaleTempFiles } from "./stale-temp.js";

export interface PruneOptions extends MaintenanceOptions {
  /** Delete the planned outputs. Default false: a dry run (no lock, no write). */
  apply?: boolean;
  /** RFC 3339 instant to evaluate the policy at (`--now`). Default: the real time. */
  now?: string;
  /** The real clock (state `updated_at`, default policy instant), for tests. */
  clock?: () => Date;
  /** Warnings (stale lock taken over). */
  onWarning?: (message: string) => void;
}

/** The `prune --json` document (SPEC §10), plus the owner, root and policy. */
export interface PruneReport {
  /** False when any planned delete failed. */
  ok: boolean;
  dry_run: boolean;
  pipeline_id: string;
  destination_id: string;
  root: string;
  /** The instant the policy was evaluated at, `YYYY-MM-DDTHH:MM:SSZ`. */
  now: string;
  policy: { max_age_seconds: number; keep_latest: number };
  /** Selected outputs, sorted by path, each with why it was chosen. */
  planned: Array<Pick<PlannedPrune, "path" | "updated_at" | "reason">>;
  /**
   * Records removed (SPEC §8): confirmed deletions, already-missing files, and
   * the paths in `left`.
   */
  deleted: string[];
  /**
   * Of `deleted`, paths whose record went but whose storage entry was not
   * ours to delete, and stays: a symbolic link put there since, or a file
   * inside a root nested in this one. As with an already-missing file, the
   * output this owner published is no longer there to delete.
   */
  left: Array<{ path: string; why: string }>;
  /** Deletes that failed; their records are kept. */
  failed: Array<{ path: string; message: string }>;
}

/**
 * Plan (and with `apply`, carry out) retention for one owner. Throws
 * `config_invalid` when the destination has no `retention.prune`, `usage` for a
 * bad `now`, `no_state` / `state_conflict` for a missing or unusable state,
 * `locked` when another writer holds the root.
 */
export async function prune(options: PruneOptions = {}): Promise<PruneReport> {
  const clock = options.clock ?? (() => new Date());
  const policyInstant = _policyInstant(options.now, clock);
  const config = await maintenanceConfig(options);
  const { pipeline, destination } = selectOwnerPair(config, { ...options, command: "prune" });
  const policy = destination.retention?.prune;
  if (policy === undefined) {
    throw new DistributorError(
      "config_invalid",
      `destinations.${destination.id}.retention.prune is not set in ${config.file}: prune has no policy to apply. Add retention: { prune: { max_age: 30d, keep_latest: 0 } } to destination ${destination.id}.`,
      { paths: [`destinations.${destination.id}.retention.prune`] },
    );
  }
  const driver = await openDestination(destination);
  const owner = { pipelineId: pipeline.id, destinationId: destination.id };
  const body = () =>
    _prune(driver, { owner, policy, now: policyInstant, apply: options.apply, clock });
  const result = options.apply
    ? await withLocks([driver], body, { onWarning: options.onWarning })
    : await body();
  return {
    ok: result.failed.length === 0,
    dry_run: !options.apply,
    pipeline_id: pipeline.id,
    destination_id: destination.id,
    root: driver.root,
    now: formatTimestamp(policyInstant),
    policy: { max_age_seconds: policy.maxAgeSeconds, keep_latest: policy.keepLatest },
    ...result,
  };
}

function _policyInstant(now: string | undefined, clock: () => Date): Date {
  if (now === undefined) return clock();
  if (!isRfc3339(now)) {
    throw new DistributorError(
      "usage",
      `--now ${JSON.stringify(now)} is not an RFC 3339 timestamp. Write it like 2026-06-30T12:00:00Z.`,
    );
  }
  const instant = parseRfc3339(now);
  // An offset can carry a date at the edge of the format past it (year 9999
  // at -01:00 is year 10000 in UTC). Refused here, before anything is read:
  // the report and the state could not record that instant.
  const year = instant.getUTCFullYear();
  if (year < 0 || year > 9999) {
    throw new DistributorError(
      "usage",
      `--now ${JSON.stringify(now)} is outside the years 0000-9999 in UTC, which states and reports can record. Give an instant in that range.`,
    );
  }
  return instant;
}

type PruneResult = Pick<PruneReport, "planned" | "deleted" | "left" | "failed">;

interface PruneContext {
  owner: { pipelineId: string; destinationId: string };
  policy: PrunePolicy;
  now: Date;
  apply?: boolean;
  clock: () => Date;
}

async function _prune(driver: StorageDriver, context: PruneContext): Promise<PruneResult> {
  const { state, stateToken } = await readState(driver);
  const catalog = requireValidState(state, { root: driver.root, command: "prune" });
  const plan = planPrune({
    state: catalog,
    owner: context.owner,
    policy: context.policy,
    now: context.now,
    foldsCase: (await driver.foldsCase?.()) ?? false,
  });
  if (plan.caseClashes.length > 0) {
    throw new DistributorError(
      "state_conflict",
      `The destination root ${driver.root} does not tell names apart by case, and its state records names that differ only by case (written before distributor checked this): ${plan.caseClashes.map((clash) => clash.description).join("; ")}. Here each pair is one file, so deleting one would delete the other's. Nothing was deleted. \`distributor run --force\` for the pipeline rewrites the root with one record per file.`,
      { paths: clashPaths(plan.caseClashes, MAX_ERROR_PATHS) },
    );
  }
  const planned = plan.planned.map(({ path, updated_at, reason }) => ({
    path,
    updated_at,
    reason,
  }));
  if (!context.apply || planned.length === 0) return { planned, deleted: [], left: [], failed: [] };
  // Listed under the lock, as a run's plan: what is at each planned path
  // decides whether the driver is asked to delete it (removalOf). A symlink
  // there now, a file inside a root nested in this one, or a path whose
  // folder is gone is left alone; its record goes all the same, as an
  // already-missing file's does (SPEC §8), and as a replacement run drops it.
  const listing = await driver.list();
  await removeStaleTempFiles(driver, listing);
  const view = storageView(listing);
  const touched: string[] = [];
  const left: PruneReport["left"] = [];
  for (const { path } of planned) {
    const removal = removalOf(view, path);
    if (removal.kind === "left") left.push({ path, why: removal.why });
    else if (removal.kind !== "gone") touched.push(path);
  }
  // Under unlessStopped, as the apply steps of a run: a signal waits for these
  // deletes to end before it releases the lock (locks.ts).
  const results = touched.length === 0 ? [] : await unlessStopped(() => driver.deleteMany(touched));
  const failed = results.flatMap((result) =>
    result.error === undefined ? [] : [{ path: result.path, message: result.error }],
  );
  const failedPaths = new Set(failed.map((failure) => failure.path));
  const deleted = planned.map((entry) => entry.path).filter((path) => !failedPaths.has(path));
  if (deleted.length > 0) {
    const next = _withoutRecords(catalog, {
      paths: deleted,
      now: formatTimestamp(context.clock()),
    });
    await unlessStopped(() => writeState(driver, next, stateToken));
  }
  return { planned, deleted, left, failed };
}

function _withoutRecords(
  state: CatalogState,
  change: { paths: string[]; now: string },
): CatalogState {
  const gone = new Set(change.paths);
  return {
    ...state,
    distributor_version: DISTRIBUTOR_VERSION,
    updated_at: change.now,
    outputs: state.outputs.filter((record) => !gone.has(record.path)),
  };
}
