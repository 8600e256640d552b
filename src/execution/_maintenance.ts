/**
 * What reconcile-state, verify and prune share: one owner selected from the
 * config, its root opened, and a state that must be valid before anything is
 * decided (these commands never repair or overwrite a state they cannot read).
 */
import { loadConfig, selectPairs } from "../config/load.js";
import type { SelectedPair } from "../config/select.js";
import type { Config } from "../config/types.js";
import { DistributorError } from "../errors.js";
import { inRoot, STATE_FILE } from "../paths.js";
import { describeState } from "../state/read.js";
import type { CatalogState, ClassifiedState } from "../state/types.js";

/** Options every maintenance command takes (library form of `--config` and the selector). */
export interface MaintenanceOptions {
  /** An already loaded config; otherwise loaded from `configFile` / DISTRIBUTOR_CONFIG / ./distributor.yaml. */
  config?: Config;
  configFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** `--pipeline`; may be omitted only when the config has exactly one pair. */
  pipeline?: string;
  /** `--destination`; may be omitted only when the config has exactly one pair. */
  destination?: string;
}

export async function maintenanceConfig(options: MaintenanceOptions): Promise<Config> {
  return (
    options.config ??
    (await loadConfig({ file: options.configFile, cwd: options.cwd, env: options.env }))
  );
}

/**
 * The one pair the command works on. With both ids given, that pair (a `usage`
 * error if it is not configured); with either omitted, the config must hold
 * exactly one pair, otherwise a `usage` error lists the pairs to choose from.
 */
export function selectOwnerPair(
  config: Config,
  options: { pipeline?: string; destination?: string; command: string },
): SelectedPair {
  const { pipeline, destination } = options;
  const narrowed = selectPairs(config, {
    pipelines: pipeline === undefined ? [] : [pipeline],
    destinations: destination === undefined ? [] : [destination],
  });
  if (pipeline !== undefined && destination !== undefined) return narrowed[0] as SelectedPair;
  const all = selectPairs(config, {});
  if (all.length === 1) return all[0] as SelectedPair;
  const choices = all.map(
    (pair) => `--pipeline ${pair.pipeline.id} --destination ${pair.destination.id}`,
  );
  throw new DistributorError(
    "usage",
    `${options.command} works on one pipeline/destination pair and the config has ${all.length}: name it with ${choices.join(", or ")}.`,
  );
}

/**
 * The catalog of a root, or the error that stops a maintenance command:
 * `no_state` when there is no state file, `state_conflict` when it is invalid,
 * legacy or unsupported. Nothing is written in either case.
 */
export function requireValidState(
  state: ClassifiedState,
  context: { root: string; command: string },
): CatalogState {
  const where = inRoot(context.root, STATE_FILE);
  if (state.class === "valid") return state.state;
  if (state.class === "missing") {
    throw new DistributorError(
      "no_state",
      `${context.command}: ${where} does not exist, so nothing at ${context.root} is managed by distributor. Publish there first with 'distributor run', or check --destination and the destination's path.`,
      { paths: [STATE_FILE] },
    );
  }
  const next =
    state.class === "legacy"
      ? "A plain 'distributor run' of this pair rewrites it as schema_version 4; then retry."
      : "It was left untouched. Inspect it; 'distributor run --force --pipeline P --destination D' replaces the whole root after a --dry-run review (see docs/recovery.md).";
  throw new DistributorError(
    "state_conflict",
    `${context.command}: ${where} is ${describeState(state)}; this command only works on a valid schema_version 4 state. ${next}`,
    { paths: [STATE_FILE] },
  );
}
