/**
 * Catalog records made from planned outputs, and the per-output change rules of
 * SPEC §6 (create / update / unchanged), each with the reason a report prints.
 */
import type { OutputChangeKind, Owner, PlannedOutput, SourceIdentity } from "../model.js";
import type { OutputRecord } from "../state/types.js";
import { outputUrl } from "../state/write.js";
import type { StorageEntry } from "../storage/driver.js";

export interface RecordContext {
  owner: Owner;
  source: SourceIdentity;
  urlBase?: string;
  now: string;
}

/** The record this run writes for `output`, with the given timestamps. */
export function recordFor(
  output: PlannedOutput,
  context: RecordContext,
  times: { created_at: string; updated_at: string },
): OutputRecord {
  // Optional fields are left out rather than set to undefined, so records compare
  // equal to the ones read back from the file.
  const record: OutputRecord = {
    path: output.path,
    pipeline_id: context.owner.pipelineId,
    destination_id: context.owner.destinationId,
    source: {
      id: context.source.id,
      digest: context.source.digest,
      created: context.source.created,
    },
    kind: output.kind,
    sha256: output.sha256,
    size: output.size,
    created_at: times.created_at,
    updated_at: times.updated_at,
  };
  if (output.kind === "generated") {
    record.source_path = output.sourcePath;
    if (output.transform !== undefined) record.transform = output.transform;
  }
  if (context.urlBase !== undefined) record.url = outputUrl(context.urlBase, output.path);
  return record;
}

/** The names of the fields in which two records of the same path differ. */
export function recordDifferences(a: OutputRecord, b: OutputRecord): string[] {
  const differs: string[] = [];
  if (a.pipeline_id !== b.pipeline_id || a.destination_id !== b.destination_id) {
    differs.push("owner");
  }
  const { source: sa } = a;
  const { source: sb } = b;
  if (sa.id !== sb.id || sa.digest !== sb.digest || sa.created !== sb.created) {
    differs.push("source");
  }
  for (const key of _COMPARED) if (a[key] !== b[key]) differs.push(key);
  return differs;
}

// Hoisted: this runs once per output, 100k times on a large catalog.
const _COMPARED = [
  "kind",
  "source_path",
  "transform",
  "url",
  "sha256",
  "size",
  "created_at",
  "updated_at",
] as const;

export function ownerLabel(record: OutputRecord): string {
  return `${record.pipeline_id}/${record.destination_id}`;
}

export function ownsRecord(owner: Owner, record: OutputRecord): boolean {
  return record.pipeline_id === owner.pipelineId && record.destination_id === owner.destinationId;
}

export interface ChangeDecision {
  change: Extract<OutputChangeKind, "update" | "unchanged">;
  reason: string;
}

/**
 * Update or unchanged for an output that has a record. Content reasons come
 * first (the record's digest and size, then what storage holds, then `--verify`);
 * taking over another owner's record is always an update and says so.
 */
export function decideRecorded(
  output: PlannedOutput,
  context: { record: OutputRecord; entry?: StorageEntry; verified?: string; owner: Owner },
): ChangeDecision {
  const { record, entry, verified } = context;
  const reasons: string[] = [];
  const content = _contentReason(output, record, entry);
  if (content !== null) reasons.push(content);
  if (!ownsRecord(context.owner, record)) reasons.push(`taken over from ${ownerLabel(record)}`);
  if (reasons.length === 0 && verified !== undefined && verified !== output.sha256) {
    reasons.push("content differs (verify)");
  }
  if (reasons.length > 0) return { change: "update", reason: reasons.join("; ") };
  return { change: "unchanged", reason: "same sha256 and size" };
}

function _contentReason(
  output: PlannedOutput,
  record: OutputRecord,
  entry: StorageEntry | undefined,
): string | null {
  if (record.sha256 !== output.sha256) return "sha256 differs";
  if (record.size !== output.size) return "size differs";
  if (entry === undefined) return "file missing";
  if (entry.type !== "file") return `not a regular file in storage (${entry.type})`;
  if (entry.size !== output.size) return "size on disk differs";
  return null;
}
