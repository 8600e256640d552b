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

/**
 * The names of the fields in which recordFor(output, context), with the
 * timestamps of `record`, would differ from `record`: owner, source, kind,
 * source_path, transform, url, sha256, size, in that order. Computed without
 * building that record: on an unchanged rerun of a large catalog it would be
 * 100,000 records (and their source objects) made only to be compared and
 * dropped. The field rules are recordFor's; a test checks the two agree.
 */
export function outputDifferences(
  output: PlannedOutput,
  context: RecordContext,
  record: OutputRecord,
): string[] {
  const differs: string[] = [];
  const { owner, source } = context;
  if (record.pipeline_id !== owner.pipelineId || record.destination_id !== owner.destinationId) {
    differs.push("owner");
  }
  const recorded = record.source;
  if (
    recorded.id !== source.id ||
    recorded.digest !== source.digest ||
    recorded.created !== source.created
  ) {
    differs.push("source");
  }
  const generated = output.kind === "generated";
  if (record.kind !== output.kind) differs.push("kind");
  if (record.source_path !== (generated ? output.sourcePath : undefined)) {
    differs.push("source_path");
  }
  if (record.transform !== (generated ? output.transform : undefined)) differs.push("transform");
  const url = context.urlBase === undefined ? undefined : outputUrl(context.urlBase, output.path);
  if (record.url !== url) differs.push("url");
  if (record.sha256 !== output.sha256) differs.push("sha256");
  if (record.size !== output.size) differs.push("size");
  return differs;
}

function ownerLabel(record: OutputRecord): string {
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
  const content = _contentReason(output, record, entry);
  // The common case on a large rerun, without a reasons array per output.
  if (content === null && ownsRecord(context.owner, record) && verified === undefined) {
    return _UNCHANGED;
  }
  const reasons: string[] = [];
  if (content !== null) reasons.push(content);
  if (!ownsRecord(context.owner, record)) reasons.push(`taken over from ${ownerLabel(record)}`);
  if (reasons.length === 0 && verified !== undefined && verified !== output.sha256) {
    reasons.push("content differs (verify)");
  }
  if (reasons.length > 0) return { change: "update", reason: reasons.join("; ") };
  return _UNCHANGED;
}

const _UNCHANGED: ChangeDecision = Object.freeze({
  change: "unchanged",
  reason: "same sha256 and size",
});

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
