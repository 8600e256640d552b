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
import { applyPlan } from "../src/execution/apply-plan.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import { replacementSpec, SITE_FILES, scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

describe("a failed delete", () => {
  test("keeps its record when the plan writes nothing else", async () => {
    const s = await scenario(replacementSpec);
    assert.equal((await s.runJson()).code, 0);
    const { "data/a.txt": _omitted, ...rest } = SITE_FILES;
    const v2 = await s.bundle("v2", rest);

    const real = createFilesystemDriver({ root: s.root });
    const driver: StorageDriver = {
      ...real,
      deleteMany: async (paths) =>
        paths.map((p) =>
          p === "data/a.txt" ? { path: p, error: "EPERM: simulated" } : { path: p },
        ),
    };
    const { plan, snapshot } = await planOnly(s.config, v2, driver);
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
