/**
 * `distributor verify` as a process (SPEC §9): a read-only drift check, and the
 * verify → `run --verify` → verify loop that repairs drift.
 */
import assert from "node:assert/strict";
import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, it } from "node:test";
import { cleanupTempDirs, listFiles, runCli, runCliJson } from "./helpers/fixtures.js";
import {
  ALPHA,
  BETA,
  publishTwoOwners,
  stateFingerprint,
  writeStateBytes,
} from "./helpers/maintenance.js";

interface VerifyJson {
  ok: boolean;
  checked: number;
  modified: string[];
  missing: string[];
}

after(cleanupTempDirs);

describe("verify", () => {
  it("a freshly published owner verifies clean (exit 0)", async () => {
    const { dir } = await publishTwoOwners();
    const result = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.json, {
      ...result.json,
      ok: true,
      checked: 3,
      modified: [],
      missing: [],
    });
  });

  it("reports modified and missing outputs of the owner only, exits 1, changes nothing", async () => {
    const { dir, root } = await publishTwoOwners();
    await writeFile(path.join(root, "alpha/one.txt"), "tampered\n");
    // Same size, other bytes: only the digest can tell.
    await writeFile(path.join(root, "alpha/deep/three.txt"), "THREE\n");
    await rm(path.join(root, "alpha/two.txt"));
    await writeFile(path.join(root, "beta/b1.txt"), "beta drift\n");
    const files = await listFiles(root);
    const state = await stateFingerprint(root);
    const result = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 1);
    assert.equal(result.json.ok, false);
    assert.deepEqual(result.json.modified, ["alpha/deep/three.txt", "alpha/one.txt"]);
    assert.deepEqual(result.json.missing, ["alpha/two.txt"]);
    assert.deepEqual(await listFiles(root), files);
    assert.deepEqual(await stateFingerprint(root), state);
    const beta = await runCliJson<VerifyJson>(["verify", ...BETA], { cwd: dir });
    assert.deepEqual(beta.json.modified, ["beta/b1.txt"]);
    const all = await runCliJson<VerifyJson>(["verify", ...ALPHA, "--all-owners"], { cwd: dir });
    assert.equal(all.json.checked, 5);
    assert.deepEqual(all.json.modified, ["alpha/deep/three.txt", "alpha/one.txt", "beta/b1.txt"]);
  });

  it("a symlink standing where an output was counts as modified, and is not followed", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    await symlink(path.join(root, "alpha/two.txt"), path.join(root, "alpha/one.txt"));
    const result = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 1);
    assert.deepEqual(result.json.modified, ["alpha/one.txt"]);
  });

  it("a folder standing where an output was counts as missing, as reconcile-state sees it", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/one.txt"));
    await mkdir(path.join(root, "alpha/one.txt"));
    await writeFile(path.join(root, "alpha/one.txt/inside.txt"), "someone else's\n");
    const result = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 1);
    assert.deepEqual(result.json.modified, []);
    assert.deepEqual(result.json.missing, ["alpha/one.txt"]);
  });

  it("does not take the lock: it runs while another process holds it", async () => {
    const { dir, root } = await publishTwoOwners();
    const lock = path.join(root, ".distributor.lock");
    const holder = `${JSON.stringify({ hostname: "elsewhere", pid: 1, started_at: "2026-06-04T12:00:00Z" })}\n`;
    await writeFile(lock, holder);
    const result = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await readFile(lock, "utf8"), holder);
  });

  it("drift → run --verify rewrites it → verify is clean again", async () => {
    const { dir, root } = await publishTwoOwners();
    // Same sizes: only a re-hash can see the drift, so a plain run does not.
    await writeFile(path.join(root, "alpha/one.txt"), "ONE\n");
    await writeFile(path.join(root, "alpha/two.txt"), "TWO\n");
    const drifted = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.deepEqual(drifted.json.modified, ["alpha/one.txt", "alpha/two.txt"]);
    const plain = await runCliJson<{ results: Array<{ action: string }> }>(["run", ...ALPHA], {
      cwd: dir,
    });
    assert.equal(plain.json.results[0]?.action, "skip_same", "a plain run trusts the records");
    const repaired = await runCli(["run", ...ALPHA, "--verify"], { cwd: dir });
    assert.equal(repaired.code, 0, repaired.stderr);
    assert.equal(await readFile(path.join(root, "alpha/one.txt"), "utf8"), "one\n");
    assert.equal(await readFile(path.join(root, "alpha/two.txt"), "utf8"), "two\n");
    const clean = await runCliJson<VerifyJson>(["verify", ...ALPHA], { cwd: dir });
    assert.equal(clean.code, 0);
    assert.equal(clean.json.ok, true);
  });

  it("human output names each drifted path and how to repair it", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, "alpha/two.txt"));
    const result = await runCli(["verify", ...ALPHA], { cwd: dir });
    assert.equal(result.code, 1);
    assert.match(result.stdout, /missing alpha\/two\.txt/);
    assert.match(result.stdout, /run --verify --pipeline alpha --destination site-a/);
  });
});

describe("verify errors", () => {
  it("no state: no_state (exit 1)", async () => {
    const { dir, root } = await publishTwoOwners();
    await rm(path.join(root, ".distributor.json"));
    const result = await runCliJson<{ error: { code: string } }>(["verify", ...ALPHA], {
      cwd: dir,
    });
    assert.equal(result.code, 1);
    assert.equal(result.json.error.code, "no_state");
  });

  it("invalid state: state_conflict (exit 1), untouched", async () => {
    const { dir, root } = await publishTwoOwners();
    await writeStateBytes(root, '{"schema_version": 4}\n');
    const result = await runCliJson<{ error: { code: string } }>(["verify", ...ALPHA], {
      cwd: dir,
    });
    assert.equal(result.code, 1);
    assert.equal(result.json.error.code, "state_conflict");
    assert.equal(
      await readFile(path.join(root, ".distributor.json"), "utf8"),
      '{"schema_version": 4}\n',
    );
  });

  it("no selector with two pairs: usage (exit 2)", async () => {
    const { dir } = await publishTwoOwners();
    const result = await runCliJson<{ error: { code: string } }>(["verify"], { cwd: dir });
    assert.equal(result.code, 2);
    assert.equal(result.json.error.code, "usage");
  });
});
