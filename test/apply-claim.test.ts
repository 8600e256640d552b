/**
 * The claim state an update writes before its outputs (src/planning/plan-run.ts,
 * _claim): the overwritten paths' digests unknown, so that a run that stops
 * part way leaves no record vouching for bytes it does not describe; and
 * which claims are fsync'd (apply-plan.ts). The filesystem driver is the real
 * one; the wrappers only record its state writes or fail one output write.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { applyPlan } from "../src/execution/apply-plan.js";
import { STATE_FILE } from "../src/paths.js";
import { UNKNOWN_DIGEST } from "../src/planning/plan-run.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import { SITE_FILES, scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

/** The real driver, with the `durable` option of every state write recorded in order. */
function recordingStateWrites(root: string): { driver: StorageDriver; durable: boolean[] } {
  const real = createFilesystemDriver({ root });
  const durable: boolean[] = [];
  const driver: StorageDriver = {
    ...real,
    write: (at, content, options) => {
      if (at === STATE_FILE) durable.push(options?.durable === true);
      return real.write(at, content, options);
    },
  };
  return { driver, durable };
}

describe("the claim of an update", () => {
  test("marks the overwritten path's digest unknown, and is written without fsync when it creates nothing", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    // Same size as "alpha\n": only the digest tells the versions apart.
    const v2 = await s.bundle("v2", { ...SITE_FILES, "data/a.txt": "omega\n" });
    const { driver, durable } = recordingStateWrites(s.root);
    const { plan, snapshot } = await planOnly(s.config, v2, driver);
    assert.equal(plan.action, "upsert_additive");
    const claimed = plan.claimState?.outputs.find((record) => record.path === "data/a.txt");
    assert.equal(claimed?.sha256, UNKNOWN_DIGEST);
    await applyPlan(driver, plan, { stateToken: snapshot.stateToken });
    assert.deepEqual(durable, [false, true], "the claim without fsync, the final state with it");
    const final = (await readStateFile(s.root)).outputs.find((r) => r.path === "data/a.txt");
    assert.notEqual(final?.sha256, UNKNOWN_DIGEST);
  });

  test("a claim that records a new path is fsync'd", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const v2 = await s.bundle("v2", { ...SITE_FILES, "data/new.txt": "new\n" });
    const { driver, durable } = recordingStateWrites(s.root);
    const { plan, snapshot } = await planOnly(s.config, v2, driver);
    await applyPlan(driver, plan, { stateToken: snapshot.stateToken });
    assert.deepEqual(durable, [true, true]);
  });

  test("a write that fails after the overwrite leaves the record unknown, never the old digest over the new bytes", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const v2 = await s.bundle("v2", {
      ...SITE_FILES,
      "data/a.txt": "omega\n",
      "index.md": "# Home, changed\n",
    });
    const real = createFilesystemDriver({ root: s.root });
    // One write at a time, through write(): data/a.txt lands, index.html fails.
    const { beginWrites: _batched, ...single } = real;
    const driver: StorageDriver = {
      ...single,
      writeConcurrency: 1,
      write: async (at, content, options) => {
        if (at === "index.html") throw new Error("EIO: simulated");
        return real.write(at, content, options);
      },
    };
    const { plan, snapshot } = await planOnly(s.config, v2, driver);
    await assert.rejects(applyPlan(driver, plan, { stateToken: snapshot.stateToken }), /simulated/);
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), "omega\n");
    const records = new Map((await readStateFile(s.root)).outputs.map((r) => [r.path, r]));
    assert.equal(records.get("data/a.txt")?.sha256, UNKNOWN_DIGEST);
    assert.equal(records.get("index.html")?.sha256, UNKNOWN_DIGEST);
    // The previous bundle again rewrites both: neither is taken as unchanged.
    const back = await s.runJson();
    assert.equal(back.code, 0, JSON.stringify(back.json));
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), SITE_FILES["data/a.txt"]);
    const verify = await s.run(["--verify", "--dry-run"]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /skip_same/);
  });
});
