/**
 * The normalized configuration the rest of the program receives: paths absolute,
 * durations in seconds, globs compiled into predicates. Nothing downstream ever
 * sees raw YAML.
 */
import type { Workflow } from "../model.js";

export type StorageConfig =
  | { type: "filesystem" /** absolute */; root: string }
  | {
      type: "s3";
      bucket: string;
      /** clean path or "" */
      prefix: string;
      region?: string;
      endpoint?: string;
      forcePathStyle: boolean;
      /** bounded parallel requests; default 16 */
      maxConcurrency: number;
    };

export interface PrunePolicy {
  maxAgeSeconds: number;
  keepLatest: number;
}

export interface DestinationConfig {
  id: string;
  storage: StorageConfig;
  /** destination bundle path under the storage root; clean path or "" */
  path: string;
  /** base URL for output urls, as written */
  url?: string;
  workflow: Workflow;
  retention?: { prune?: PrunePolicy };
}

export interface TransformConfig {
  transform: "markdown_to_html";
  include: string[];
  keepSource: boolean;
  allowHtml: boolean;
  /** compiled `include` */
  matches: (manifestPath: string) => boolean;
}

export interface PipelineConfig {
  id: string;
  /** absolute source bundle directory; absent when only `run --source` gives it */
  source?: string;
  destinations: string[];
  include: string[];
  exclude: string[];
  /** compiled include/exclude: true when a manifest path is published */
  selects: (manifestPath: string) => boolean;
  transforms: TransformConfig[];
}

export interface Config {
  /** absolute path of the config file */
  file: string;
  pipelines: Map<string, PipelineConfig>;
  destinations: Map<string, DestinationConfig>;
}
