/**
 * `distributor status` (SPEC §9): per pair, what its root holds. Read-only, no lock.
 *
 * Status is where recovery starts (docs/recovery.md), so one root that cannot
 * be read (a root that is a file, a server that is down) is reported in its
 * own row, with its error, and the other pairs are still shown.
 */
import { loadConfig, selectPairs } from "../config/load.js";
import type { Config } from "../config/types.js";
import { DistributorError, type ErrorReport, type LockHolder } from "../errors.js";
import { describeState } from "../state/read.js";
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
  /** The state's class, or null when the root could not be read (see `error`). */
  state: StateClass | null;
  /**
   * For a state that is not valid, why: `invalid (not JSON: …)`, `legacy
   * (schema_version 3)`; null otherwise. Status is where recovery starts.
   */
  state_detail: string | null;
  /** Records owned by this pair (0 unless the state is valid). */
  outputs: number;
  /** The state's `updated_at`, or null when there is no valid state. */
  updated_at: string | null;
  lock: LockHolder | null;
  /** Why the root could not be read (a storage_error), or null. */
  error: ErrorReport | null;
}

export interface StatusReport {
  /** False when some pair's root could not be read. */
  ok: boolean;
  pairs: PairStatus[];
}

export async function status(options: StatusOptions = {}): Promise<StatusReport> {
  const config =
    options.config ??
    (await loadConfig({ file: options.configFile, cwd: options.cwd, env: options.env }));
  const pairs: PairStatus[] = [];
  for (const { pipeline, destination } of selectPairs(config, {})) {
    const driver = await openDestination(destination);
    const ids = { pipeline_id: pipeline.id, destination_id: destination.id, root: driver.root };
    let read: [Awaited<ReturnType<typeof readState>>, LockHolder | null];
    try {
      read = await Promise.all([readState(driver), driver.readLock()]);
    } catch (error) {
      if (!(error instanceof DistributorError)) throw error;
      const failed = { state: null, state_detail: null, outputs: 0, updated_at: null, lock: null };
      pairs.push({ ...ids, ...failed, error: error.toReport() });
      continue;
    }
    const [{ state }, lock] = read;
    const valid = state.class === "valid" ? state.state : null;
    pairs.push({
      ...ids,
      state: state.class,
      state_detail:
        state.class === "valid" || state.class === "missing" ? null : describeState(state),
      outputs:
        valid?.outputs.filter(
          (record) =>
            record.pipeline_id === pipeline.id && record.destination_id === destination.id,
        ).length ?? 0,
      updated_at: valid?.updated_at ?? null,
      lock,
      error: null,
    });
  }
  return { ok: pairs.every((pair) => pair.error === null), pairs };
}
