/** `distributor status` (SPEC §9): per pair, what its root holds. Read-only, no lock. */
import { loadConfig, selectPairs } from "../config/load.js";
import type { Config } from "../config/types.js";
import type { LockHolder } from "../errors.js";
import type { StateClass } from "../state/types.js";
import { openDestination } from "../storage/create-driver.js";
import { readState } from "./root-io.js";

export interface StatusOptions {
  config?: Config;
  configFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export interface PairStatus {
  pipeline_id: string;
  destination_id: string;
  root: string;
  state: StateClass;
  /** Records owned by this pair (0 unless the state is valid). */
  outputs: number;
  /** The state's `updated_at`, or null when there is no valid state. */
  updated_at: string | null;
  lock: LockHolder | null;
}

export interface StatusReport {
  pairs: PairStatus[];
}

export async function status(options: StatusOptions = {}): Promise<StatusReport> {
  const config =
    options.config ??
    (await loadConfig({ file: options.configFile, cwd: options.cwd, env: options.env }));
  const pairs: PairStatus[] = [];
  for (const { pipeline, destination } of selectPairs(config, {})) {
    const driver = await openDestination(destination);
    const [{ state }, lock] = await Promise.all([readState(driver), driver.readLock()]);
    const valid = state.class === "valid" ? state.state : null;
    pairs.push({
      pipeline_id: pipeline.id,
      destination_id: destination.id,
      root: driver.root,
      state: state.class,
      outputs:
        valid?.outputs.filter(
          (record) =>
            record.pipeline_id === pipeline.id && record.destination_id === destination.id,
        ).length ?? 0,
      updated_at: valid?.updated_at ?? null,
      lock,
    });
  }
  return { pairs };
}
