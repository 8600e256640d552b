/**
 * A delete that fails during apply keeps its record, so that a rerun retries
 * it, also when the plan creates nothing (then there is no claim state to take
 * the record back from). The filesystem driver is the real one; only its
 * deleteMany answers "failed" for one path, as EPERM on an immutable file would.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { applyPlan, ForceClearError } from "../src/execution/apply-plan.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile, sha256 } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import {
  publishedFiles,
  replacementSpec,
  SITE_FILES,
  SITE_OUTPUTS,
  scenario,
} from "./helpers/scenario.js";

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

describe("a force_replace that stops while it empties the root", () => {
  test("has already written a fresh claim: a plain run then converges (SPEC §6)", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    // A broken state and someone else's files: only --force replaces them.
    await writeFile(path.join(s.root, ".distributor.json"), "{broken");
    await writeFile(path.join(s.root, "junk.txt"), "not ours\n");
    await writeFile(path.join(s.root, "index.html"), "stale bytes at a planned path\n");
    const real = createFilesystemDriver({ root: s.root });
    const driver: StorageDriver = {
      ...real,
      // The delete of junk.txt fails, as EPERM on an immutable file would;
      // a kill at that moment leaves the same root.
      deleteMany: async (paths) =>
        paths.map((p) => (p === "junk.txt" ? { path: p, error: "EPERM: simulated" } : { path: p })),
    };
    const { plan, snapshot } = await planOnly(s.config, path.join(s.base, "bundle"), driver, {
      force: true,
    });
    assert.equal(plan.action, "force_replace");
    await assert.rejects(
      applyPlan(driver, plan, { stateToken: snapshot.stateToken }),
      (error: unknown) => error instanceof ForceClearError,
    );
    const claim = await readStateFile(s.root);
    assert.deepEqual(
      claim.outputs.map((record) => record.path),
      SITE_OUTPUTS,
      "a valid state already claims every planned output",
    );
    // The plain run (no --force) completes: it rewrites the stale planned
    // file and writes the rest; the file it could not delete stays, unmanaged.
    const rerun = await s.runJson();
    assert.equal(rerun.code, 0, JSON.stringify(rerun.json));
    assert.deepEqual(await publishedFiles(s.root), [...SITE_OUTPUTS, "junk.txt"].sort());
    const state = await readStateFile(s.root);
    for (const record of state.outputs) {
      const bytes = await readFile(path.join(s.root, record.path));
      assert.equal(sha256(bytes), record.sha256, record.path);
    }
    assert.equal((await s.runJson()).json.results?.[0]?.action, "skip_same");
  });
});

describe("a force_replace over a legacy state whose deletes fail", () => {
  test("keeps the old state, so the root stays managed and a plain run still publishes", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    // Over a legacy state the claim comes only after the root is emptied.
    const legacy = `${JSON.stringify({ schema_version: 3, outputs: [] })}\n`;
    await writeFile(path.join(s.root, ".distributor.json"), legacy);
    await writeFile(path.join(s.root, "junk.txt"), "not ours\n");
    const real = createFilesystemDriver({ root: s.root });
    const driver: StorageDriver = {
      ...real,
      // Everything else really goes, the state included when asked.
      deleteMany: async (paths) => [
        ...(await real.deleteMany(paths.filter((p) => p !== "junk.txt"))),
        ...paths
          .filter((p) => p === "junk.txt")
          .map((p) => ({ path: p, error: "EPERM: simulated" })),
      ],
    };
    const { plan, snapshot } = await planOnly(s.config, path.join(s.base, "bundle"), driver, {
      force: true,
    });
    assert.equal(plan.action, "force_replace");
    assert.notEqual(plan.claimFirst, true, "the late path: no claim before the root is emptied");
    await assert.rejects(
      applyPlan(driver, plan, { stateToken: snapshot.stateToken }),
      (error: unknown) => error instanceof ForceClearError,
    );
    assert.equal(
      await readFile(path.join(s.root, ".distributor.json"), "utf8"),
      legacy,
      "the state is not deleted from a root that could not be emptied",
    );
    // Without a state, the file left behind would make the root unmanaged
    // (fail_unmanaged) until another --force; with it, a plain run publishes.
    const rerun = await s.runJson();
    assert.equal(rerun.code, 0, JSON.stringify(rerun.json));
    assert.deepEqual(await publishedFiles(s.root), [...SITE_OUTPUTS, "junk.txt"].sort());
  });
});

describe("a force_replace whose deletes fail by the thousand", () => {
  test("names the first few and the total, and lists at most 100 paths", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const real = createFilesystemDriver({ root: s.root });
    const many = Array.from({ length: 5000 }, (_, i) => `junk/${String(i).padStart(4, "0")}.txt`);
    // As a signal leaves it: every delete not made yet fails the same way.
    const driver: StorageDriver = {
      ...real,
      deleteMany: async (paths) => [
        ...paths.map((p) => ({ path: p })),
        ...many.map((p) => ({ path: p, error: "stopped by a signal" })),
      ],
    };
    const { plan, snapshot } = await planOnly(s.config, path.join(s.base, "bundle"), driver, {
      force: true,
    });
    await assert.rejects(applyPlan(driver, plan, { stateToken: snapshot.stateToken }), (error) => {
      assert.ok(error instanceof ForceClearError);
      assert.equal(error.failedDeletes.length, 5000, "the report still gets every one");
      assert.equal(error.paths.length, 100);
      assert.match(error.message, /5000 paths \(stopped by a signal\): junk\/0000\.txt, /);
      assert.match(error.message, /, and 4990 more$/);
      assert.ok(error.message.length < 1000, `${error.message.length} characters`);
      return true;
    });
  });
});
