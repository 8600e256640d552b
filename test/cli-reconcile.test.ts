/**
 * `distributor reconcile-state` as a process on real published roots (SPEC §7,
 * seed: Repair Semantics).
 */
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import {
  cleanupTempDirs,
  listFiles,
  runCli,
  runCliJson,
  tempDir,
  writeConfig,
} from "./helpers/fixtures.js";
import {
  ALPHA,
  BETA,
  ownedPaths,
  publishTwoOwners,
  readValidState,
  stateFingerprint,
  UNMANAGED,
  writeStateBytes,
} from "./helpers/maintenance.js";

interface ReconcileJson {
  ok: boolean;
  dry_run: boolean;
  pipeline_id: string;
  destination_id: string;
  root: string;
  missing: Array<{ path: string; pipeline_id: string; destination_id: string }>;
  unmanaged: string[];
  removed: string[];
}

after(cleanupTempDirs);

describe("reconcile-state", () => {
  it("reports unmanaged entries and, with nothing missing, does not rewrite the state", async () => {
    const { dir, root } = await publishTwoOwners();
    const before = await stateFingerprint(root);
    const filesBefore = await listFiles(root);
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.json.ok, true);
    assert.equal(result.json.root, root);
    assert.deepEqual(result.json.missing, []);
    assert.deepEqual(result.json.removed, []);
    assert.deepEqual(result.json.unmanaged, [...UNMANAGED].sort());
    assert.deepEqual(await stateFingerprint(root), before);
    assert.deepEqual(await listFiles(root), filesBefore);
  });

  it("removes only the selected owner's missing records, deletes no file, adopts nothing", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/two.txt"));
    await rm(path.join(root, "beta/b1.txt"));
    const filesBefore = await listFiles(root);
    const started = Date.now();
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.json.missing, [
      { path: "alpha/two.txt", pipeline_id: "alpha", destination_id: "site-a" },
    ]);
    assert.deepEqual(result.json.removed, ["alpha/two.txt"]);
    const state = await readValidState(root);
    assert.deepEqual(ownedPaths(state, "alpha", "site-a"), [
      "alpha/deep/three.txt",
      "alpha/one.txt",
    ]);
    assert.deepEqual(
      ownedPaths(state, "beta", "site-b"),
      ["beta/b1.txt", "beta/b2.txt"],
      "other owner untouched",
    );
    assert.ok(
      Date.parse(state.updated_at) >= Math.floor(started / 1000) * 1000,
      "updated_at is now",
    );
    assert.deepEqual(await listFiles(root), filesBefore, "no file deleted or created");
    assert.equal(
      state.outputs.some((record) => UNMANAGED.includes(record.path)),
      false,
    );
  });

  it("is idempotent: a second run removes nothing and leaves the state bytes and mtime alone", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    const first = await runCli(["reconcile-state", ...ALPHA], { cwd: dir });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /missing alpha\/one\.txt/);
    const before = await stateFingerprint(root);
    const second = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA], { cwd: dir });
    assert.deepEqual(second.json.missing, []);
    assert.deepEqual(second.json.removed, []);
    assert.deepEqual(await stateFingerprint(root), before);
  });

  it("--dry-run reports what would be removed and writes nothing", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    const before = await stateFingerprint(root);
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA, "--dry-run"], {
      cwd: dir,
    });
    assert.equal(result.code, 0);
    assert.equal(result.json.dry_run, true);
    assert.deepEqual(
      result.json.missing.map((m) => m.path),
      ["alpha/one.txt"],
    );
    assert.deepEqual(result.json.removed, []);
    assert.deepEqual(await stateFingerprint(root), before);
    const human = await runCli(["reconcile-state", ...ALPHA, "--dry-run"], { cwd: dir });
    assert.match(human.stdout, /would remove 1 records/);
  });

  it("--all-owners checks and removes every owner's missing records", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    await rm(path.join(root, "beta/b2.txt"));
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA, "--all-owners"], {
      cwd: dir,
    });
    assert.deepEqual(result.json.missing, [
      { path: "alpha/one.txt", pipeline_id: "alpha", destination_id: "site-a" },
      { path: "beta/b2.txt", pipeline_id: "beta", destination_id: "site-b" },
    ]);
    const state = await readValidState(root);
    assert.deepEqual(ownedPaths(state, "beta", "site-b"), ["beta/b1.txt"]);
  });

  it("never validates digests: a modified file is neither missing nor removed", async () => {
    const { dir, root } = await publishTwoOwners();
    await writeFile(path.join(root, "alpha/one.txt"), "tampered\n");
    const before = await stateFingerprint(root);
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA], { cwd: dir });
    assert.deepEqual(result.json.missing, []);
    assert.deepEqual(await stateFingerprint(root), before);
  });

  it("the selected owner scopes the report: beta sees only its own missing record", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    const result = await runCliJson<ReconcileJson>(["reconcile-state", ...BETA, "--dry-run"], {
      cwd: dir,
    });
    assert.deepEqual(result.json.missing, []);
    assert.equal(result.json.pipeline_id, "beta");
  });
});

describe("reconcile-state errors", () => {
  const states: Array<[string, string, string]> = [
    ["invalid (not JSON)", "{ not json", "invalid"],
    ["legacy", '{"schema_version": 2, "outputs": []}\n', "legacy"],
    ["unsupported", '{"schema_version": 7}\n', "unsupported"],
  ];
  for (const [name, text, word] of states) {
    it(`${name} state: state_conflict, exit 1, bytes untouched`, async () => {
      const { dir, root } = await publishTwoOwners();
      await rm(path.join(root, "alpha/one.txt"));
      await writeStateBytes(root, text);
      const result = await runCliJson<{ ok: boolean; error: { code: string; message: string } }>(
        ["reconcile-state", ...ALPHA],
        { cwd: dir },
      );
      assert.equal(result.code, 1);
      assert.equal(result.json.ok, false);
      assert.equal(result.json.error.code, "state_conflict");
      assert.match(result.json.error.message, new RegExp(word));
      assert.equal(await readFile(path.join(root, ".distributor.json"), "utf8"), text);
    });
  }

  it("no state: no_state, exit 1, nothing created", async () => {
    const dir = await tempDir();
    await writeConfig(
      dir,
      "pipelines:\n  p: { source: ./b, destinations: [d] }\ndestinations:\n  d: { storage: { root: ./public } }\n",
    );
    const result = await runCliJson<{ error: { code: string } }>(["reconcile-state"], { cwd: dir });
    assert.equal(result.code, 1);
    assert.equal(result.json.error.code, "no_state");
    assert.deepEqual(await listFiles(path.join(dir, "public")), []);
  });

  it("the selector may be omitted only with exactly one pair: usage, exit 2", async () => {
    const { dir } = await publishTwoOwners();
    for (const args of [[], ["--pipeline", "alpha"], ["--destination", "site-b"]]) {
      const result = await runCliJson<{ error: { code: string; message: string } }>(
        ["reconcile-state", ...args],
        { cwd: dir },
      );
      assert.equal(result.code, 2, args.join(" "));
      assert.equal(result.json.error.code, "usage");
      assert.match(result.json.error.message, /--pipeline alpha --destination site-a/);
    }
  });

  it("a pair that is not configured is a usage error (exit 2)", async () => {
    const { dir } = await publishTwoOwners();
    const unknown = await runCliJson<{ error: { code: string } }>(
      ["reconcile-state", "--pipeline", "nope", "--destination", "site-a"],
      { cwd: dir },
    );
    assert.equal(unknown.code, 2);
    assert.equal(unknown.json.error.code, "usage");
    const crossed = await runCliJson<{ error: { code: string } }>(
      ["reconcile-state", "--pipeline", "alpha", "--destination", "site-b"],
      { cwd: dir },
    );
    assert.equal(crossed.code, 2);
  });

  it("a missing config file is config_invalid (exit 2)", async () => {
    const dir = await tempDir();
    const result = await runCliJson<{ error: { code: string } }>(["reconcile-state"], { cwd: dir });
    assert.equal(result.code, 2);
    assert.equal(result.json.error.code, "config_invalid");
  });

  it("a held lock stops the writing run (locked, exit 1) but not a dry run", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    const holder = {
      hostname: os.hostname(),
      pid: process.pid,
      started_at: "2026-06-04T12:00:00Z",
    };
    await writeFile(path.join(root, ".distributor.lock"), `${JSON.stringify(holder)}\n`);
    const before = await stateFingerprint(root);
    const locked = await runCliJson<{ error: { code: string; message: string } }>(
      ["reconcile-state", ...ALPHA],
      { cwd: dir },
    );
    assert.equal(locked.code, 1);
    assert.equal(locked.json.error.code, "locked");
    assert.match(locked.json.error.message, new RegExp(`pid ${process.pid}`));
    assert.deepEqual(await stateFingerprint(root), before);
    const dry = await runCliJson<ReconcileJson>(["reconcile-state", ...ALPHA, "--dry-run"], {
      cwd: dir,
    });
    assert.equal(dry.code, 0);
    assert.equal(dry.json.missing.length, 1);
  });
});
