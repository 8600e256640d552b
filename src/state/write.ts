/**
 * Writing `.distributor.json` (SPEC §5 Writing): one canonical byte form, so the
 * same state always serializes to the same bytes and diffs stay readable.
 * Durability (temp file, fsync, rename) is the storage driver's job.
 */
import { compareUtf8 } from "../paths.js";
import type { CatalogState, OutputRecord } from "./types.js";

const UTF8 = new TextEncoder();

/**
 * The file bytes of `state`: 2-space indented JSON with a trailing newline,
 * outputs sorted by the UTF-8 bytes of their path, keys in the seed's order,
 * optional fields omitted when absent. The input is not modified.
 */
export function serializeState(state: CatalogState): Uint8Array {
  const ordered = {
    schema_version: state.schema_version,
    distributor_version: state.distributor_version,
    created_at: state.created_at,
    updated_at: state.updated_at,
    state: { mode: state.state.mode },
    outputs: sortRecords(state.outputs).map(_orderedRecord),
  };
  // JSON.stringify drops keys whose value is undefined: that is the omission.
  return UTF8.encode(`${JSON.stringify(ordered, null, 2)}\n`);
}

/** A copy of `records` sorted by the UTF-8 bytes of their path (the state's order). */
export function sortRecords(records: readonly OutputRecord[]): OutputRecord[] {
  return [...records].sort((a, b) => compareUtf8(a.path, b.path));
}

/**
 * The public URL of an output: `base` (given a trailing `/` when it lacks one)
 * followed by each path segment percent-encoded with encodeURIComponent.
 * `outputUrl("https://x.test/archive", "a b/é.html")` is
 * `https://x.test/archive/a%20b/%C3%A9.html`.
 */
export function outputUrl(base: string, path: string): string {
  const prefix = base.endsWith("/") ? base : `${base}/`;
  return prefix + path.split("/").map(encodeURIComponent).join("/");
}

function _orderedRecord(record: OutputRecord): OutputRecord {
  return {
    path: record.path,
    pipeline_id: record.pipeline_id,
    destination_id: record.destination_id,
    source: {
      id: record.source.id,
      digest: record.source.digest,
      created: record.source.created,
    },
    kind: record.kind,
    source_path: record.source_path,
    transform: record.transform,
    url: record.url,
    sha256: record.sha256,
    size: record.size,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
