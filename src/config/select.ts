/**
 * Pair selection (SPEC §6 step 1): every pipeline × each of its destinations,
 * narrowed by `--pipeline` / `--destination`.
 */
import { DistributorError } from "../errors.js";
import type { Config, DestinationConfig, PipelineConfig } from "./types.js";

export interface PairSelector {
  /** Pipeline ids (`--pipeline`); absent or empty = all. */
  pipelines?: readonly string[];
  /** Destination ids (`--destination`); absent or empty = all. */
  destinations?: readonly string[];
}

/** An owner as configured: one pipeline publishing to one of its destinations. */
export interface SelectedPair {
  pipeline: PipelineConfig;
  destination: DestinationConfig;
}

/**
 * The error for a pipeline with no source to read: `source` is optional in
 * the config (`--source` may give it), so its absence is the caller's
 * `usage`, the same from `run` and `validate`.
 */
export function noSourceError(pipelineId: string): DistributorError {
  return new DistributorError(
    "usage",
    `pipeline ${pipelineId} has no source: set pipelines.${pipelineId}.source in the config or pass --source DIR`,
    { paths: [`pipelines.${pipelineId}.source`] },
  );
}

/**
 * The selected pairs, in config order (pipelines as written, then each pipeline's
 * destinations as listed). Every selector value must name a configured id and
 * take part in at least one selected pair; otherwise a DistributorError `usage`
 * says which value selects nothing and what exists.
 */
export function selectPairs(config: Config, selector: PairSelector = {}): SelectedPair[] {
  const pipelineIds = [...new Set(selector.pipelines ?? [])];
  const destinationIds = [...new Set(selector.destinations ?? [])];
  _checkKnown(pipelineIds, { known: [...config.pipelines.keys()], flag: "--pipeline" });
  _checkKnown(destinationIds, { known: [...config.destinations.keys()], flag: "--destination" });

  const pairs: SelectedPair[] = [];
  for (const pipeline of config.pipelines.values()) {
    if (pipelineIds.length > 0 && !pipelineIds.includes(pipeline.id)) continue;
    for (const destinationId of pipeline.destinations) {
      if (destinationIds.length > 0 && !destinationIds.includes(destinationId)) continue;
      const destination = config.destinations.get(destinationId);
      // loadConfig guarantees the reference; a hand-built Config might not.
      if (destination === undefined) {
        throw new DistributorError(
          "config_invalid",
          `pipeline ${pipeline.id} names unknown destination ${destinationId}`,
        );
      }
      pairs.push({ pipeline, destination });
    }
  }
  _checkEachSelects(pairs, { pipelineIds, destinationIds });
  return pairs;
}

interface KnownContext {
  known: string[];
  flag: string;
}

function _checkKnown(ids: string[], context: KnownContext): void {
  const unknown = ids.filter((id) => !context.known.includes(id));
  if (unknown.length === 0) return;
  const what = context.flag === "--pipeline" ? "pipeline" : "destination";
  const list = unknown.map((id) => JSON.stringify(id)).join(", ");
  throw new DistributorError(
    "usage",
    `${context.flag}: no ${what} ${list} in the configuration. Configured ${what}s: ${context.known.join(", ")}.`,
  );
}

interface SelectedIds {
  pipelineIds: string[];
  destinationIds: string[];
}

function _checkEachSelects(pairs: SelectedPair[], ids: SelectedIds): void {
  const idle = [
    ...ids.pipelineIds
      .filter((id) => !pairs.some((pair) => pair.pipeline.id === id))
      .map((id) => `--pipeline ${id}`),
    ...ids.destinationIds
      .filter((id) => !pairs.some((pair) => pair.destination.id === id))
      .map((id) => `--destination ${id}`),
  ];
  if (idle.length === 0) return;
  throw new DistributorError(
    "usage",
    `${idle.join(" and ")} selects no pipeline/destination pair: the selected pipelines do not publish to the selected destinations. Check each pipeline's "destinations" list.`,
  );
}
