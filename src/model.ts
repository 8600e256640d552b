/**
 * Domain types shared by every step of the pipeline: what a source bundle
 * yields, what a pipeline plans to publish, and who owns an output. Pure data,
 * no behaviour, so every module can depend on it.
 */

/** Compact identity of a source bundle, recorded with every output (seed: Source Identity). */
export interface SourceIdentity {
  id: string;
  /** `sha256:` + hex SHA-256 of the exact manifest.json bytes. */
  digest: string;
  /** The manifest's `created`, copied as written. */
  created: string;
}

/** One entry of manifest.json's `files`. */
export interface ManifestFile {
  path: string;
  size: number;
  /** `sha256:<64 lowercase hex>` */
  sha256: string;
  media_type?: string;
}

/** A verified source bundle: every listed file exists inside it with the listed size and digest. */
export interface SourceBundle {
  /** Absolute directory of the bundle. */
  dir: string;
  identity: SourceIdentity;
  files: ManifestFile[];
}

export type OutputKind = "source" | "generated";
export const TRANSFORM_IDS = ["markdown_to_html"] as const;
export type TransformId = (typeof TRANSFORM_IDS)[number];

/**
 * Where the bytes of a planned output come from. Source outputs are copied from
 * the verified bundle file (a kernel copy on filesystems); generated outputs are
 * rendered in memory (Markdown documents are small).
 */
export type OutputContent =
  | {
      type: "file";
      absPath: string;
      /** The file's manifest path: what an error about it names (SPEC §2). */
      sourcePath?: string;
      /**
       * The size verification found (the manifest's), so that a driver can pick
       * its write path without a stat of its own. The copy itself reads the
       * file, unless `verifiedBytes` are given.
       */
      size?: number;
      /**
       * The `sha256:<hex>` verification found. A driver publishes only bytes
       * with this digest (and `size`): the file may have changed, or been
       * swapped for a symlink, since it was verified (storage/_source-read.ts).
       */
      sha256?: string;
      /**
       * The bytes verification read and hashed, kept for small files
       * (bundle/_verified-bytes.ts): a driver writes these and does not read
       * the file again. In shared memory, so they cross to write threads
       * without a copy.
       */
      verifiedBytes?: Uint8Array;
    }
  | { type: "bytes"; bytes: Uint8Array };

/**
 * A generated output whose digest came from the render cache: its bytes are
 * produced (re-read, re-verified, rendered) only if it has to be written, by
 * `renderDeferred` in transform/planned-outputs.ts, before anything is written.
 * Storage drivers never see this kind.
 */
export interface DeferredContent {
  type: "deferred";
  /** The rendered bytes and their `sha256:` digest. */
  produce: () => { bytes: Uint8Array; sha256: string };
}

/** An output the pipeline wants at the destination, with the digest of its bytes. */
export interface PlannedOutput {
  /** Clean destination-bundle-relative path. */
  path: string;
  kind: OutputKind;
  /** Manifest path it was derived from (equal to `path` for source outputs). */
  sourcePath: string;
  /** Set for generated outputs only. */
  transform?: TransformId;
  /** `sha256:<64 hex>` of the output bytes. */
  sha256: string;
  size: number;
  /** Content-Type to store (S3); from the manifest's media_type or the extension. */
  mediaType?: string;
  content: OutputContent | DeferredContent;
}

/** The (pipeline_id, destination_id) pair that owns catalog records. */
export interface Owner {
  pipelineId: string;
  destinationId: string;
}

export const ACTIONS = [
  "publish_new",
  "upsert_additive",
  "replace_catalog",
  "skip_same",
  "force_replace",
  "fail_unmanaged",
  "fail_conflict",
] as const;
/** The destination action labels of the seed contract, and no others. */
export type Action = (typeof ACTIONS)[number];

export type Workflow = "additive" | "replacement";

/** Per-output change in a run plan (SPEC §6). */
export type OutputChangeKind = "create" | "update" | "unchanged" | "delete";
