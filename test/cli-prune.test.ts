/**
 * `distributor prune` as a process on real published roots (SPEC §8, seed:
 * Prune Semantics), including a SIGKILL during `prune --apply`.
 */
import assert from "node:assert/strict";
import { link, lstat, mkdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { cleanupTempDirs, listFiles, runCli, runCliJson, spawnCli } from "./helpers/fixtures.js";
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
import { exists } from "./helpers/scenario.js";

interface PruneJson {
  ok: boolean;
  dry_run: boolean;
  now: string;
  planned: Array<{ path: string; updated_at: string; reason: string }>;
  deleted: string[];
  left: Array<{ path: string; why: string }>;
  failed: Array<{ path: string; message: string }>;
}

const FUTURE = ["--now", "2100-01-01T00:00:00Z"];
const KEEP_ONE = "prune: { max_age: 1d, keep_latest: 1 }";
const KEEP_NONE = "prune: { max_age: 1d }";

after(cleanupTempDirs);

describe("prune planning (dry run)", () => {
  it("is a dry run by default and with --dry-run: plans, deletes nothing, writes nothing", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_ONE });
    const files = await listFiles(root);
    const state = await stateFingerprint(root);
    for (const extra of [[], ["--dry-run"]]) {
      const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, ...extra], {
        cwd: dir,
      });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.json.dry_run, true);
      assert.equal(result.json.now, "2100-01-01T00:00:00Z");
      // keep_latest 1 with equal timestamps keeps the smallest path.
      assert.deepEqual(
        result.json.planned.map((entry) => entry.path),
        ["alpha/one.txt", "alpha/two.txt"],
      );
      assert.deepEqual(result.json.deleted, []);
    }
    assert.deepEqual(await listFiles(root), files);
    assert.deepEqual(await stateFingerprint(root), state);
  });

  it("the human report says why each path was chosen", async () => {
    const { dir } = await publishTwoOwners({ retentionA: KEEP_ONE });
    const result = await runCli(["prune", ...ALPHA, ...FUTURE], { cwd: dir });
    assert.equal(result.code, 0);
    assert.match(
      result.stdout,
      /alpha\/one\.txt \(updated \d+w\d*d? ago, older than max_age 1d; not among the 1 latest kept/,
    );
    assert.match(result.stdout, /would delete 2/);
    assert.match(result.stdout, /--apply/);
  });

  it("at the real time nothing just published is old enough", async () => {
    const { dir } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA], { cwd: dir });
    assert.deepEqual(result.json.planned, []);
  });
});

describe("prune --apply", () => {
  it("deletes only the owner's planned outputs, keeps others and unmanaged files, updates the state", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_ONE });
    const started = Date.now();
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.json.ok, true);
    assert.deepEqual(result.json.deleted, ["alpha/one.txt", "alpha/two.txt"]);
    const files = await listFiles(root);
    for (const gone of result.json.deleted) assert.equal(files.includes(gone), false, gone);
    for (const kept of ["alpha/deep/three.txt", "beta/b1.txt", "beta/b2.txt", ...UNMANAGED]) {
      assert.ok(files.includes(kept), `${kept} kept`);
    }
    assert.ok(files.includes(".distributor.json"));
    const state = await readValidState(root);
    assert.deepEqual(ownedPaths(state, "alpha", "site-a"), ["alpha/deep/three.txt"]);
    assert.deepEqual(ownedPaths(state, "beta", "site-b"), ["beta/b1.txt", "beta/b2.txt"]);
    const updated = Date.parse(state.updated_at);
    assert.ok(
      updated >= Math.floor(started / 1000) * 1000 && updated <= Date.now(),
      "real time, not --now",
    );
  });

  it("is idempotent: a second --apply plans nothing and does not rewrite the state", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_ONE });
    const first = await runCli(["prune", ...ALPHA, ...FUTURE, "--apply"], { cwd: dir });
    assert.equal(first.code, 0, first.stderr);
    const state = await stateFingerprint(root);
    const second = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(second.code, 0);
    assert.deepEqual(second.json.planned, []);
    assert.deepEqual(second.json.deleted, []);
    assert.deepEqual(await stateFingerprint(root), state);
  });

  it("removes directories left empty, never one that still holds a file", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.json.deleted.length, 3);
    await assert.rejects(stat(path.join(root, "alpha/deep")), { code: "ENOENT" });
    assert.equal(
      await readFile(path.join(root, "alpha/stray.txt"), "utf8"),
      "unmanaged alpha/stray.txt\n",
    );
  });

  it("an already missing file counts as deleted and its record goes", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    await rm(path.join(root, "alpha/two.txt"));
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.code, 0);
    assert.ok(result.json.deleted.includes("alpha/two.txt"));
    assert.deepEqual(ownedPaths(await readValidState(root), "alpha", "site-a"), []);
  });

  it("leaves what is not its own to delete, drops those records, as a replacement run does", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    // A symlink where alpha/one.txt was; a file where alpha/deep's folder was.
    const outside = path.join(dir, "outside.txt");
    await writeFile(outside, "not ours\n");
    await rm(path.join(root, "alpha/one.txt"));
    await symlink(outside, path.join(root, "alpha/one.txt"));
    await rm(path.join(root, "alpha/deep"), { recursive: true });
    await writeFile(path.join(root, "alpha/deep"), "a file now\n");
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.code, 0, result.stdout);
    assert.deepEqual(result.json.failed, []);
    assert.deepEqual(result.json.deleted, [
      "alpha/deep/three.txt",
      "alpha/one.txt",
      "alpha/two.txt",
    ]);
    assert.deepEqual(result.json.left, [
      { path: "alpha/one.txt", why: "a symbolic link is there now" },
    ]);
    assert.ok((await lstat(path.join(root, "alpha/one.txt"))).isSymbolicLink(), "the link stays");
    assert.equal(await readFile(path.join(root, "alpha/deep"), "utf8"), "a file now\n");
    assert.equal(await readFile(outside, "utf8"), "not ours\n");
    assert.deepEqual(ownedPaths(await readValidState(root), "alpha", "site-a"), []);
  });

  it("says in its human report which records went without a delete, and why", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const outside = path.join(dir, "outside.txt");
    await writeFile(outside, "not ours\n");
    await rm(path.join(root, "alpha/one.txt"));
    await symlink(outside, path.join(root, "alpha/one.txt"));
    const human = await runCli(["prune", ...ALPHA, ...FUTURE, "--apply"], { cwd: dir });
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /- alpha\/one\.txt \([^)]*\) — record dropped, not deleted: a symbolic link is there now\n/,
    );
    assert.doesNotMatch(human.stdout, /alpha\/two\.txt .*not deleted/);
    assert.ok((await lstat(path.join(root, "alpha/one.txt"))).isSymbolicLink(), "the link stays");
  });

  it("never deletes a file inside a root nested in this one", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    // alpha/deep is now another root, which may have published three.txt since.
    await writeFile(path.join(root, "alpha/deep/.distributor.lock"), "held\n");
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.code, 0, result.stdout);
    assert.ok(result.json.deleted.includes("alpha/deep/three.txt"), "its record is dropped");
    assert.deepEqual(result.json.left, [
      { path: "alpha/deep/three.txt", why: "inside another root (alpha/deep)" },
    ]);
    assert.ok(await readFile(path.join(root, "alpha/deep/three.txt"), "utf8"), "the file stays");
    assert.equal(
      await exists(path.join(root, "alpha/two.txt")),
      false,
      "outside it, prune deletes",
    );
  });

  it("a failed delete keeps its record, is reported, and exits 1", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    // A directory where the output was: unlink refuses it.
    await rm(path.join(root, "alpha/one.txt"));
    await mkdir(path.join(root, "alpha/one.txt"));
    await writeFile(path.join(root, "alpha/one.txt/inside"), "x");
    const result = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: dir,
    });
    assert.equal(result.code, 1);
    assert.equal(result.json.ok, false);
    assert.deepEqual(
      result.json.failed.map((entry) => entry.path),
      ["alpha/one.txt"],
    );
    assert.match(result.json.failed[0]?.message ?? "", /one\.txt is a folder that holds inside,/);
    assert.deepEqual(result.json.deleted, ["alpha/deep/three.txt", "alpha/two.txt"]);
    assert.deepEqual(ownedPaths(await readValidState(root), "alpha", "site-a"), ["alpha/one.txt"]);
    const human = await runCli(["prune", ...ALPHA, ...FUTURE, "--apply"], { cwd: dir });
    assert.equal(human.code, 1);
    assert.match(human.stdout, /failed:/);
  });
});

describe("prune errors", () => {
  it("no retention.prune on the destination: config_invalid (exit 2)", async () => {
    const { dir } = await publishTwoOwners();
    const result = await runCliJson<{ error: { code: string; message: string } }>(
      ["prune", ...ALPHA, "--apply"],
      { cwd: dir },
    );
    assert.equal(result.code, 2);
    assert.equal(result.json.error.code, "config_invalid");
    assert.match(result.json.error.message, /destinations\.site-a\.retention\.prune/);
  });

  it("a bad --now and --dry-run with --apply are usage errors (exit 2)", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const files = await listFiles(root);
    for (const args of [
      ["--now", "yesterday"],
      ["--now", "2026-02-30T00:00:00Z"],
      // Valid RFC 3339, but past the years 0000-9999 once in UTC: refused
      // before anything is deleted, not after (the report could not say when).
      ["--now", "9999-12-31T23:59:59-01:00", "--apply"],
      ["--now", "0000-01-01T00:00:00+01:00", "--apply"],
      ["--dry-run", "--apply"],
      // One owner per command: a second selector must not replace the first.
      ["--pipeline", "beta", "--apply"],
    ]) {
      const result = await runCliJson<{ error: { code: string } }>(["prune", ...ALPHA, ...args], {
        cwd: dir,
      });
      assert.equal(result.code, 2, args.join(" "));
      assert.equal(result.json.error.code, "usage");
    }
    assert.deepEqual(await listFiles(root), files, "nothing was deleted");
  });

  it("missing state is no_state, legacy state is state_conflict (exit 1, untouched)", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const legacy = '{"schema_version": 3, "outputs": []}\n';
    await writeStateBytes(root, legacy);
    const conflict = await runCliJson<{ error: { code: string } }>(
      ["prune", ...ALPHA, ...FUTURE, "--apply"],
      { cwd: dir },
    );
    assert.equal(conflict.code, 1);
    assert.equal(conflict.json.error.code, "state_conflict");
    assert.equal(await readFile(path.join(root, ".distributor.json"), "utf8"), legacy);
    await rm(path.join(root, ".distributor.json"));
    const none = await runCliJson<{ error: { code: string } }>(["prune", ...BETA, ...FUTURE], {
      cwd: dir,
    });
    assert.equal(none.code, 1);
    assert.equal(none.json.error.code, "no_state");
  });

  it("--apply under a held lock is locked (exit 1) and deletes nothing", async () => {
    const { dir, root } = await publishTwoOwners({ retentionA: KEEP_NONE });
    const holder = {
      hostname: os.hostname(),
      pid: process.pid,
      started_at: "2026-06-04T12:00:00Z",
    };
    await writeFile(path.join(root, ".distributor.lock"), `${JSON.stringify(holder)}\n`);
    const files = await listFiles(root);
    const result = await runCliJson<{ error: { code: string } }>(
      ["prune", ...ALPHA, ...FUTURE, "--apply"],
      { cwd: dir },
    );
    assert.equal(result.code, 1);
    assert.equal(result.json.error.code, "locked");
    assert.deepEqual(await listFiles(root), files);
  });
});

describe("prune --apply crash safety", () => {
  const COUNT = 3000;

  /** Kill a prune --apply once at most `remaining` of alpha's files are left (or after `delayMs`). */
  async function killDuringPrune(
    context: { dir: string; root: string },
    when: { remaining?: number; delayMs?: number },
  ): Promise<void> {
    const child = spawnCli(["prune", ...ALPHA, ...FUTURE, "--apply"], { cwd: context.dir });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const deadline = Date.now() + 60_000;
    if (when.delayMs !== undefined) await new Promise((r) => setTimeout(r, when.delayMs));
    while (when.remaining !== undefined && Date.now() < deadline && child.exitCode === null) {
      const left = (await listFiles(path.join(context.root, "alpha"))).filter((f) =>
        f.startsWith("d"),
      );
      if (left.length <= when.remaining) break;
    }
    child.kill("SIGKILL");
    await exited;
  }

  /** The invariants after a kill: valid state, other owners and unmanaged intact, no file without its record. */
  async function checkAfterKill(root: string, betaFiles: string[]): Promise<void> {
    const state = await readValidState(root);
    assert.deepEqual(ownedPaths(state, "beta", "site-b"), betaFiles);
    const files = await listFiles(root);
    for (const kept of [...betaFiles, ...UNMANAGED]) assert.ok(files.includes(kept), kept);
    const recorded = new Set(ownedPaths(state, "alpha", "site-a"));
    const orphans = files.filter((f) => f.startsWith("alpha/d") && !recorded.has(f));
    assert.deepEqual(orphans, [], "a record is only dropped after its file is gone");
  }

  it("a SIGKILL at several points leaves a valid state from which a rerun completes", {
    timeout: 300_000,
  }, async () => {
    const alpha: Record<string, string> = {};
    for (let i = 0; i < COUNT; i++) alpha[`alpha/d${i % 40}/f${i}.txt`] = `file ${i}\n`;
    const context = await publishTwoOwners({ alpha, retentionA: KEEP_NONE });
    for (const when of [
      { delayMs: 150 },
      { remaining: COUNT - 1 },
      { remaining: COUNT / 2 },
      { remaining: 0 },
    ]) {
      await killDuringPrune(context, when);
      await checkAfterKill(context.root, context.betaFiles);
      // Put the outputs back (a plain run converges after the kill too) for the next kill point.
      const restored = await runCli(["run", ...ALPHA], { cwd: context.dir });
      assert.equal(restored.code, 0, `${JSON.stringify(when)}: ${restored.stderr}`);
      assert.equal(ownedPaths(await readValidState(context.root), "alpha", "site-a").length, COUNT);
    }
    await killDuringPrune(context, { remaining: COUNT / 3 });
    await checkAfterKill(context.root, context.betaFiles);
    // What a run killed while writing new folders leaves (_fs-staging.ts): prune removes it too.
    for (const staged of [
      ".distributor.tmp-00000000000000d1-0",
      "alpha/.distributor.tmp-00000000000000d2-1",
    ]) {
      await mkdir(path.join(context.root, staged, "deep"), { recursive: true });
      await writeFile(path.join(context.root, staged, "deep", "page.html"), "staged\n");
    }
    const rerun = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: context.dir,
    });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.equal(rerun.json.failed.length, 0);
    const state = await readValidState(context.root);
    assert.deepEqual(ownedPaths(state, "alpha", "site-a"), []);
    const files = await listFiles(context.root);
    assert.deepEqual(
      files.filter((f) => f.startsWith("alpha/d")),
      [],
    );
    assert.equal(
      files.some((f) => f.includes(".distributor.tmp-")),
      false,
      "no temp file left",
    );
    const again = await runCliJson<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"], {
      cwd: context.dir,
    });
    assert.deepEqual(again.json.planned, []);
  });
});

describe("prune on a root that folds case", () => {
  it("refuses to delete a name another record folds onto: exit 1, nothing deleted", async () => {
    // Published where names that differ by case are two files (as before the check existed)...
    const { dir, root } = await publishTwoOwners({
      retentionA: KEEP_NONE,
      alpha: { "alpha/Page.txt": "upper\n", "alpha/page.txt": "lower\n" },
    });
    // ...then the root answers the probe as a case-insensitive one would (see cli-case-fold.test.ts).
    await link(path.join(root, ".distributor.json"), path.join(root, ".DISTRIBUTOR.JSON"));
    const files = await listFiles(root);
    const state = await stateFingerprint(root);
    const result = await runCliJson<{ ok: boolean; error: { code: string; paths: string[] } }>(
      ["prune", ...ALPHA, ...FUTURE, "--apply"],
      { cwd: dir },
    );
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.json.error.code, "state_conflict");
    assert.deepEqual(result.json.error.paths, ["alpha/Page.txt", "alpha/page.txt"]);
    assert.deepEqual(await listFiles(root), files);
    assert.deepEqual(await stateFingerprint(root), state);
  });
});
