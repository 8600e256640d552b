/**
 * The report objects of every command: what `--json` prints and what the library
 * returns. Field names are the wire format (snake_case), fixed by SPEC §10.
 */
import type { ErrorReport } from "../errors.js";
import type { Action, OutputChangeKind, OutputKind, SourceIdentity } from "../model.js";
import { writesOf } from "../planning/plan-run.js";
import type { OutputChange } from "../planning/types.js";
import type { StateClass } from "../state/types.js";

export interface OutputReport {
  path: string;
  kind: OutputKind;
  change: Exclude<OutputChangeKind, "delete">;
  /** Why this change was planned ("not in catalog", "sha256 differs", ...). */
  reason: string;
  sha256: string;
  size: number;
  url?: string;
}

export interface ChangeCounts {
  created: number;
  updated: number;
  unchanged: number;
  deleted: number;
}

export interface PairResult {
  pipeline_id: string;
  destination_id: string;
  root: string;
  state: StateClass;
  action: Action;
  /** True when the plan was carried out (false for dry runs and runs stopped by a failing pair). */
  applied: boolean;
  source: SourceIdentity;
  outputs: OutputReport[];
  /** Paths deleted (or, not applied, to be deleted), records whose file was already gone included. */
  deleted: string[];
  /** The same paths, each with its reason (`omitted by this run (replacement)`, ...). */
  deletions: { path: string; reason: string }[];
  counts: ChangeCounts;
  /** Bytes written (or that would be written) for created and updated outputs. */
  bytes: number;
  duration_ms: number;
  error: ErrorReport | null;
}

export interface RunReport {
  ok: boolean;
  dry_run: boolean;
  distributor_version: string;
  results: PairResult[];
}

/** The one JSON document printed for an error before any pair was planned. */
export interface ErrorOnlyReport {
  ok: false;
  error: ErrorReport;
}

export function outputReports(changes: readonly OutputChange[]): OutputReport[] {
  const reports: OutputReport[] = [];
  for (const change of changes) {
    if (change.change === "delete" || !change.output) continue;
    const report: OutputReport = {
      path: change.path,
      kind: change.output.kind,
      change: change.change,
      reason: change.reason,
      sha256: change.output.sha256,
      size: change.output.size,
    };
    if (change.url !== undefined) report.url = change.url;
    reports.push(report);
  }
  return reports;
}

export function countChanges(changes: readonly OutputChange[]): ChangeCounts {
  const counts: ChangeCounts = { created: 0, updated: 0, unchanged: 0, deleted: 0 };
  for (const { change } of changes) {
    if (change === "create") counts.created++;
    else if (change === "update") counts.updated++;
    else if (change === "unchanged") counts.unchanged++;
    else counts.deleted++;
  }
  return counts;
}

export function bytesToWrite(changes: readonly OutputChange[]): number {
  let total = 0;
  for (const { output } of writesOf(changes)) total += output.size;
  return total;
}
