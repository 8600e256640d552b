/**
 * Builders and the case table shared by the run planner's tests
 * (plan-run.test.ts checks each case's expectation, plan-run.invariants.test.ts
 * checks the invariants over every case).
 */
import { createHash } from "node:crypto";
import type { ErrorCode } from "../errors.js";
import type { Action, Owner, PlannedOutput, SourceIdentity } from "../model.js";
import type { CatalogState, ClassifiedState, OutputRecord } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";
import type { RunPlanInput } from "./types.js";

export const NOW = "2026-06-05T08:00:00Z";
export const EARLIER = "2026-06-01T08:00:00Z";
export const ME: Owner = { pipelineId: "reports", destinationId: "site" };

export function digestOf(text: string): string {
  return `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

export const SOURCE: SourceIdentity = {
  id: "reports.2026-06-05",
  digest: digestOf("manifest 2"),
  created: "2026-06-05T07:59:00+02:00",
};
export const OLD_SOURCE: SourceIdentity = {
  id: "reports.2026-06-01",
  digest: digestOf("manifest 1"),
  created: "2026-06-01T07:59:00Z",
};

const contentOf = (path: string) => `content of ${path}`;
const sizeOf = (text: string) => Buffer.byteLength(text, "utf8");

/** A planned output; `from` makes it a markdown_to_html output of that manifest path. */
export function planned(
  path: string,
  opts: { content?: string; from?: string } = {},
): PlannedOutput {
  const content = opts.content ?? contentOf(path);
  const bytes = new TextEncoder().encode(content);
  const output: PlannedOutput = {
    path,
    kind: opts.from === undefined ? "source" : "generated",
    sourcePath: opts.from ?? path,
    sha256: digestOf(content),
    size: bytes.length,
    content: { type: "bytes", bytes },
  };
  if (opts.from !== undefined) output.transform = "markdown_to_html";
  return output;
}

export interface RecordOptions extends Partial<Omit<OutputRecord, "path">> {
  /** "pipeline/destination"; default reports/site. */
  owner?: string;
  /** Bytes the record describes; default matches `planned(path)`. */
  content?: string;
  from?: string;
}

/** A record that, by default, matches `planned(path)` from this run's source, written EARLIER. */
export function record(path: string, opts: RecordOptions = {}): OutputRecord {
  const { owner, content, from, ...fields } = opts;
  const [pipeline_id, destination_id] = (owner ?? "reports/site").split("/") as [string, string];
  const text = content ?? contentOf(path);
  const base: OutputRecord = {
    path,
    pipeline_id,
    destination_id,
    source: SOURCE,
    kind: from === undefined ? "source" : "generated",
    sha256: digestOf(text),
    size: sizeOf(text),
    created_at: EARLIER,
    updated_at: EARLIER,
  };
  if (from !== undefined) Object.assign(base, { source_path: from, transform: "markdown_to_html" });
  return { ...base, ...fields };
}

/** Listing entries: a string is a file holding `planned(path)`'s default bytes. */
export function listing(
  ...items: Array<string | ({ path: string } & Partial<StorageEntry>)>
): StorageEntry[] {
  return items.map((item) => {
    const path = typeof item === "string" ? item : item.path;
    const entry: StorageEntry = { path, size: sizeOf(contentOf(path)), type: "file" };
    return typeof item === "string" ? entry : { ...entry, ...item };
  });
}

export function catalog(records: OutputRecord[], createdAt = "2026-05-01T00:00:00Z"): CatalogState {
  return {
    schema_version: 4,
    distributor_version: "0.0.9",
    created_at: createdAt,
    updated_at: EARLIER,
    state: { mode: "catalog" },
    outputs: records,
  };
}

export function valid(...records: OutputRecord[]): ClassifiedState {
  return { class: "valid", state: catalog(records) };
}

export function input(overrides: Partial<RunPlanInput> = {}): RunPlanInput {
  return {
    owner: ME,
    source: SOURCE,
    outputs: [],
    state: { class: "missing" },
    listing: [],
    workflow: "additive",
    force: false,
    now: NOW,
    distributorVersion: "0.1.0",
    ...overrides,
  };
}

export interface Case {
  name: string;
  input: RunPlanInput;
  action: Action;
  error?: ErrorCode;
  /** Expected changes as "path change", in order. */
  changes?: string[];
  deletes?: string[];
  deletesFirst?: string[];
  errorPaths?: string[];
  /** Expected substring of the error message. */
  message?: string;
  /** Expected reason (substring) per path. */
  reasons?: Record<string, string>;
}
