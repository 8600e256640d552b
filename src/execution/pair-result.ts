/** Turns one planned (and possibly applied) pair into its report object. */
import type { DestinationConfig, PipelineConfig } from "../config/types.js";
import type { ErrorReport } from "../errors.js";
import type { SourceIdentity } from "../model.js";
import type { RunPlan } from "../planning/types.js";
import { bytesToWrite, countChanges, outputReports, type PairResult } from "../reporting/report.js";

export interface PairOutcome {
  applied: boolean;
  /** An error while applying; fail_* plans carry their own error. */
  error?: ErrorReport;
  failedDeletes?: { path: string; message: string }[];
}

export function pairResult(
  entry: {
    pair: { pipeline: PipelineConfig; destination: DestinationConfig };
    /** The root as the pair's destination names it. */
    root: string;
    plan: RunPlan;
    stateClass: PairResult["state"];
    startedAt: number;
  },
  sources: ReadonlyMap<string, { identity: SourceIdentity }>,
  outcome: PairOutcome,
): PairResult {
  const { plan } = entry;
  const failedDeletes = outcome.failedDeletes ?? [];
  const failed = new Set(failedDeletes.map((f) => f.path));
  // force_replace empties the root without per-output delete changes; other
  // plans report every record they drop, one whose file was already gone too
  // (as prune counts an already-missing file as deleted).
  const planned =
    plan.action === "force_replace"
      ? plan.deletes.map((path) => ({ path, reason: "force_replace empties the root" }))
      : plan.changes
          .filter((change) => change.change === "delete")
          .map(({ path, reason }) => ({ path, reason }));
  const deletions = planned.filter((deletion) => !failed.has(deletion.path));
  const deleted = deletions.map((deletion) => deletion.path);
  return {
    pipeline_id: entry.pair.pipeline.id,
    destination_id: entry.pair.destination.id,
    root: entry.root,
    state: entry.stateClass,
    action: plan.action,
    applied: outcome.applied,
    source: (sources.get(entry.pair.pipeline.id) as { identity: SourceIdentity }).identity,
    outputs: outputReports(plan.changes),
    deleted,
    deletions,
    counts: { ...countChanges(plan.changes), deleted: deleted.length },
    bytes: bytesToWrite(plan.changes),
    duration_ms: Math.round(performance.now() - entry.startedAt),
    error: plan.error ?? outcome.error ?? deleteError(failedDeletes),
  };
}

function deleteError(failed: { path: string; message: string }[]): ErrorReport | null {
  if (failed.length === 0) return null;
  return {
    code: "storage_error",
    message: `could not delete ${failed.length} omitted output(s); their records were kept so a rerun retries: ${failed
      .map((f) => `${f.path} (${f.message})`)
      .join(", ")}`,
    paths: failed.map((f) => f.path),
  };
}
