/**
 * The steps `run` takes for one pair, done one by one so that a test can put
 * a wrapped driver under the executor: load the scenario's config, verify a
 * bundle and plan its outputs against what the driver's root holds.
 */
import assert from "node:assert/strict";
import { openBundle } from "../../src/bundle/verify.js";
import { loadConfig, selectPairs } from "../../src/config/load.js";
import { type RootSnapshot, readRoot } from "../../src/execution/root-io.js";
import { planRun } from "../../src/planning/plan-run.js";
import type { RunPlan } from "../../src/planning/types.js";
import type { StorageDriver } from "../../src/storage/driver.js";
import { planOutputs } from "../../src/transform/planned-outputs.js";

/** Plan the config's only pair for `bundleDir` on `driver`, as run's planGroup does. */
export async function planOnly(
  config: string,
  bundleDir: string,
  driver: StorageDriver,
  options: { force?: boolean } = {},
): Promise<{ plan: RunPlan; snapshot: RootSnapshot }> {
  const [pair] = selectPairs(await loadConfig({ file: config }), {});
  assert.ok(pair);
  const bundle = await openBundle(bundleDir);
  const outputs = await planOutputs(bundle, pair.pipeline);
  const snapshot = await readRoot(driver);
  const plan = planRun({
    owner: { pipelineId: pair.pipeline.id, destinationId: pair.destination.id },
    source: bundle.identity,
    outputs,
    state: snapshot.state,
    listing: snapshot.listing,
    foldsCase: snapshot.foldsCase,
    workflow: pair.destination.workflow,
    force: options.force ?? false,
    now: "2026-06-05T00:00:00Z",
    distributorVersion: "test",
  });
  return { plan, snapshot };
}
