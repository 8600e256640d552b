/**
 * The repair planner behind `distributor reconcile-state` (seed: Repair
 * Semantics). Pure: the valid state, the root's listing and the scope in, the
 * missing records, the unmanaged entries and the next state out. No I/O, no clock.
 *
 * Repair only ever forgets records whose files are gone. It never deletes a
 * file, never adopts an unmanaged entry and never looks at digests.
 */
import type { Owner } from "../model.js";
import { compareUtf8, hasReservedSegment } from "../paths.js";
import type { CatalogState, OutputRecord } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";

export interface ReconcilePlanInput {
  /** The root's valid catalog state (other classes never reach the planner). */
  state: CatalogState;
  /** Everything under the root, reserved names included (ignored here). */
  listing: readonly StorageEntry[];
  /** The selected pipeline/destination pair: the default scope. */
  owner: Owner;
  /** Check every record of the root, whatever its owner (`--all-owners`). */
  allOwners: boolean;
  /** Formatted UTC timestamp for the next state's `updated_at`. */
  now: string;
  /** Written as the next state's `distributor_version`. */
  distributorVersion: string;
}

/** A managed output whose file is not in storage, with its owner. */
export interface MissingRecord {
  path: string;
  pipeline_id: string;
  destination_id: string;
}

export interface ReconcilePlan {
  /** In-scope records with nothing at their path in the listing, sorted by path. */
  missing: MissingRecord[];
  /**
   * Listed entries with no record of any owner (reserved tool files excluded),
   * sorted by path. Reported only: repair never adopts or deletes them.
   */
  unmanaged: string[];
  /**
   * The state without the missing records, `updated_at` = `now`; `null` when
   * nothing is missing (then the state is not rewritten at all).
   */
  nextState: CatalogState | null;
}

/** Plan a repair of one root's catalog for one owner (or every owner). */
export function planReconcile(input: ReconcilePlanInput): ReconcilePlan {
  // An empty directory at a recorded path is no more the file than a full one
  // (which is not listed at that path at all).
  const listed = new Set(
    input.listing
      .filter((entry) => entry.type !== "directory" && !hasReservedSegment(entry.path))
      .map((entry) => entry.path),
  );
  const inScope = (record: OutputRecord) =>
    input.allOwners ||
    (record.pipeline_id === input.owner.pipelineId &&
      record.destination_id === input.owner.destinationId);
  const missingRecords = input.state.outputs.filter(
    (record) => inScope(record) && !listed.has(record.path),
  );
  const recorded = new Set(input.state.outputs.map((record) => record.path));
  const unmanaged = [...listed].filter((path) => !recorded.has(path)).sort(compareUtf8);
  const missing = missingRecords
    .map((record) => ({
      path: record.path,
      pipeline_id: record.pipeline_id,
      destination_id: record.destination_id,
    }))
    .sort((a, b) => compareUtf8(a.path, b.path));
  return { missing, unmanaged, nextState: _nextState(input, missingRecords) };
}

function _nextState(
  input: ReconcilePlanInput,
  missingRecords: readonly OutputRecord[],
): CatalogState | null {
  if (missingRecords.length === 0) return null;
  const gone = new Set(missingRecords);
  return {
    ...input.state,
    distributor_version: input.distributorVersion,
    updated_at: input.now,
    outputs: input.state.outputs.filter((record) => !gone.has(record)),
  };
}
