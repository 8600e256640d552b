/**
 * A delete that fails during apply keeps its record, so that a rerun retries
 * it, also when the plan creates nothing (then there is no claim state to take
 * the record back from). The filesystem driver is the real one; only its
 * deleteMany answers "failed" for one path, as EPERM on an immutable file would.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { openBundle } from "../src/bundle/verify.js";
import { loadConfig, selectPairs } from "../src/config/load.js";
import { applyPlan } from "../src/execution/apply-plan.js";
import { readRoot } from "../src/execution/root-io.js";
import { planRun } from "../src/planning/plan-run.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { planOutputs } from "../src/transform/planned-outputs.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { SITE_FILES, scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

describe("a failed delete", () => {
  test("keeps its record when the plan writes nothing else", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "public"), workflow: "replacement" } },
    }));
    assert.equal((await s.runJson()).code, 0);
    const { "data/a.txt": _omitted, ...rest } = SITE_FILES;
    const v2 = await s.bundle("v2", rest);

    const [pair] = selectPairs(await loadConfig({ file: s.config }), {});
    assert.ok(pair);
    const bundle = await openBundle(v2);
    const outputs = await planOutputs(bundle, pair.pipeline);
    const real = createFilesystemDriver({ root: s.root });
    const driver: StorageDriver = {
      ...real,
      deleteMany: async (paths) =>
        paths.map((p) =>
          p === "data/a.txt" ? { path: p, error: "EPERM: simulated" } : { path: p },
        ),
    };
    const snapshot = await readRoot(driver);
    const plan = planRun({
      owner: { pipelineId: "site", destinationId: "web" },
      source: bundle.identity,
      outputs,
      state: snapshot.state,
      listing: snapshot.listing,
      workflow: "replacement",
      force: false,
      now: "2026-06-05T00:00:00Z",
      distributorVersion: "test",
    });
    assert.equal(plan.action, "replace_catalog");
    assert.equal(plan.claimState, null, "nothing is created: no claim state");
    const result = await applyPlan(driver, plan, { stateToken: snapshot.stateToken });
    assert.deepEqual(
      result.failedDeletes.map((f) => f.path),
      ["data/a.txt"],
    );
    const state = await readStateFile(s.root);
    assert.ok(
      state.outputs.some((record) => record.path === "data/a.txt"),
      "the record stays, so a rerun retries the delete",
    );
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), SITE_FILES["data/a.txt"]);
  });
});
