/**
 * The destination state file `.distributor.json`, schema version 4, exactly as
 * the seed contract fixes it: no field may be added. Field names are the file's
 * (snake_case) so records round-trip without mapping.
 */
import type { OutputKind, SourceIdentity, TransformId } from "../model.js";

export const STATE_SCHEMA_VERSION = 4;

export interface OutputRecord {
  path: string;
  pipeline_id: string;
  destination_id: string;
  source: SourceIdentity;
  kind: OutputKind;
  /** generated outputs only */
  source_path?: string;
  /** generated outputs only */
  transform?: TransformId;
  url?: string;
  sha256: string;
  size: number;
  created_at: string;
  updated_at: string;
}

export interface CatalogState {
  schema_version: 4;
  distributor_version?: string;
  created_at: string;
  updated_at: string;
  state: { mode: "catalog" };
  outputs: OutputRecord[];
}

/**
 * The classification of whatever sits at `.distributor.json` (SPEC §5 Reading).
 * Planning decides on the class; only `valid` carries a usable state.
 */
export type ClassifiedState =
  | { class: "missing" }
  | { class: "valid"; state: CatalogState }
  | { class: "legacy"; schemaVersion: number }
  | { class: "unsupported"; schemaVersion: number }
  | { class: "invalid"; reason: string };

export type StateClass = ClassifiedState["class"];
