/**
 * The retention planner behind `distributor prune` (seed: Prune Semantics).
 * Pure: the valid state, the owner, the policy and the instant in; the records
 * to delete, each with the reason it was chosen, out. No I/O, no clock.
 */
import type { PrunePolicy } from "../config/types.js";
import type { Owner } from "../model.js";
import { compareUtf8 } from "../paths.js";
import type { CatalogState, OutputRecord } from "../state/types.js";
import { parseRfc3339 } from "../timestamps.js";
import { type CaseFoldClash, caseFoldClashes } from "./_case-fold.js";

export interface PrunePlanInput {
  /** The root's valid catalog state. */
  state: CatalogState;
  /** Only this owner's records are ever considered. */
  owner: Owner;
  policy: PrunePolicy;
  /** The instant the policy is evaluated at (real time, or `prune --now`). */
  now: Date;
  /** The root treats names that differ only by case as one (see _case-fold.ts). */
  foldsCase?: boolean;
}

export interface PlannedPrune {
  path: string;
  /** The record's `updated_at`, as stored. */
  updated_at: string;
  /** Whole seconds between `updated_at` and `now`. */
  age: number;
  /** Why it was chosen, for humans: its age against max_age, and the keep_latest rule. */
  reason: string;
}

export interface PrunePlan {
  /** Records to delete, sorted by path. */
  planned: PlannedPrune[];
  /**
   * On a root that folds case: a planned delete whose name another record's
   * folds onto (one file there, so deleting it would take the other's file),
   * for humans. Nothing may be deleted while any is listed.
   */
  caseClashes: CaseFoldClash[];
}

/**
 * Select the owner's records whose `updated_at` is strictly older than
 * `now − maxAgeSeconds`, minus the `keepLatest` most recently updated records of
 * the owner (newest first; among equal timestamps the smaller path is kept).
 * Other owners' records are never selected.
 */
export function planPrune(input: PrunePlanInput): PrunePlan {
  const { owner, policy } = input;
  const nowMs = input.now.getTime();
  const cutoffMs = nowMs - policy.maxAgeSeconds * 1000;
  const owned = input.state.outputs
    .filter(
      (record) =>
        record.pipeline_id === owner.pipelineId && record.destination_id === owner.destinationId,
    )
    .map((record) => ({ record, updatedMs: parseRfc3339(record.updated_at).getTime() }));
  const kept = new Set(
    [...owned]
      .sort((a, b) => b.updatedMs - a.updatedMs || compareUtf8(a.record.path, b.record.path))
      .slice(0, policy.keepLatest)
      .map((entry) => entry.record),
  );
  const planned = owned
    .filter((entry) => entry.updatedMs < cutoffMs && !kept.has(entry.record))
    .map((entry) => _planned(entry.record, { ageMs: nowMs - entry.updatedMs, policy }))
    .sort((a, b) => compareUtf8(a.path, b.path));
  const caseClashes = input.foldsCase
    ? caseFoldClashes({
        planned: [],
        deleting: planned.map((entry) => entry.path),
        recorded: input.state.outputs.map((record) => record.path),
      })
    : [];
  return { planned, caseClashes };
}

function _planned(
  record: OutputRecord,
  context: { ageMs: number; policy: PrunePolicy },
): PlannedPrune {
  const age = Math.floor(context.ageMs / 1000);
  const { maxAgeSeconds, keepLatest } = context.policy;
  const keepText =
    keepLatest === 0
      ? "keep_latest 0"
      : `not among the ${keepLatest} latest kept (keep_latest ${keepLatest})`;
  return {
    path: record.path,
    updated_at: record.updated_at,
    age,
    reason: `updated ${formatDuration(age)} ago, older than max_age ${formatDuration(maxAgeSeconds)}; ${keepText}`,
  };
}

const UNITS: ReadonlyArray<[string, number]> = [
  ["w", 7 * 86400],
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
  ["s", 1],
];

/**
 * A duration in the config's units, largest first, at most two parts:
 * `formatDuration(90061)` is `1d1h`, `formatDuration(0)` is `0s`.
 */
export function formatDuration(seconds: number): string {
  let rest = Math.max(0, Math.floor(seconds));
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    } else if (parts.length > 0) break;
  }
  return parts.length === 0 ? "0s" : parts.join("");
}
