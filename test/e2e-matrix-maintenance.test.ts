/**
 * The maintenance commands (reconcile-state, verify, prune, status) end to end,
 * as processes, with the same expectations on a filesystem destination and on
 * an S3 destination; and the same bundle published to both at once yields the
 * same outputs, digests and state.
 */
import assert from "node:assert/strict";
import os from "node:os";
import { after, describe, it } from "node:test";
import {
  ALPHA,
  ALPHA_FILES,
  ALPHA_OUTPUTS,
  BETA,
  destinationKinds,
  filesystemKind,
  s3Kind,
  workspace,
} from "./helpers/destinations.js";
import { cleanupTempDirs, runCli, sha256 } from "./helpers/fixtures.js";

interface ReconcileJson {
  ok: boolean;
  missing: Array<{ path: string; pipeline_id: string; destination_id: string }>;
  unmanaged: string[];
  removed: string[];
}
interface VerifyJson {
  ok: boolean;
  checked: number;
  modified: string[];
  missing: string[];
}
interface PruneJson {
  ok: boolean;
  planned: Array<{ path: string }>;
  deleted: string[];
  failed: unknown[];
}
interface StatusJson {
  pairs: Array<{
    pipeline_id: string;
    destination_id: string;
    root: string;
    state: string;
    state_detail: string | null;
    outputs: number;
    lock: { pid: number } | null;
  }>;
}
interface RunJson {
  ok: boolean;
  results: Array<{ outputs: Array<{ path: string; change: string }> }>;
  error?: { code: string };
}

const FUTURE = ["--now", "2100-01-01T00:00:00Z"];
const kinds = destinationKinds();
const extraKinds = [filesystemKind(), s3Kind()];
after(async () => {
  await Promise.all([...kinds, ...extraKinds].map((kind) => kind.cleanup()));
  await cleanupTempDirs();
});

const visible = (files: string[]) => files.filter((file) => !file.includes(".distributor."));
const ownedBy = (state: { outputs: Array<{ path: string; pipeline_id: string }> }, id: string) =>
  state.outputs.filter((record) => record.pipeline_id === id).map((record) => record.path);

for (const kind of kinds) {
  describe(`maintenance on ${kind.name}`, { concurrency: 4 }, () => {
    it("reconcile-state removes the owner's missing records, reports unmanaged, spares others", async () => {
      const ws = await workspace(await kind.create());
      assert.equal((await ws.cli(["run"])).code, 0);
      await ws.destination.deleteFile("alpha/two.html");
      await ws.destination.deleteFile("beta/b1.txt");
      await ws.destination.writeFile("loose/notes.md", "mine\n");
      const result = await ws.cli<ReconcileJson>(["reconcile-state", ...ALPHA]);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(result.json.missing, [
        { path: "alpha/two.html", pipeline_id: "alpha", destination_id: "site-a" },
      ]);
      assert.deepEqual(result.json.removed, ["alpha/two.html"]);
      assert.deepEqual(result.json.unmanaged, ["loose/notes.md"]);
      const state = await ws.destination.readState();
      assert.deepEqual(ownedBy(state, "alpha"), ["alpha/data.txt", "alpha/index.html"]);
      assert.deepEqual(ownedBy(state, "beta"), ["beta/b1.txt", "beta/b2.txt"], "beta untouched");
      const stateText = await ws.destination.readStateText();
      const again = await ws.cli<ReconcileJson>(["reconcile-state", ...ALPHA]);
      assert.deepEqual(again.json.removed, []);
      assert.equal(
        await ws.destination.readStateText(),
        stateText,
        "nothing to remove: no rewrite",
      );
    });

    it("verify finds modified and missing outputs, run --verify repairs them", async () => {
      const ws = await workspace(await kind.create());
      assert.equal((await ws.cli(["run"])).code, 0);
      const original = await ws.destination.readFile("alpha/data.txt");
      // Same size, other bytes: only a digest can tell.
      await ws.destination.writeFile("alpha/data.txt", original.toString().toUpperCase());
      await ws.destination.deleteFile("alpha/two.html");
      const drifted = await ws.cli<VerifyJson>(["verify", ...ALPHA]);
      assert.equal(drifted.code, 1);
      assert.deepEqual(drifted.json, {
        ...drifted.json,
        ok: false,
        checked: 3,
        modified: ["alpha/data.txt"],
        missing: ["alpha/two.html"],
      });
      const repaired = await ws.cli<RunJson>(["run", ...ALPHA, "--verify"]);
      assert.equal(repaired.code, 0, repaired.stderr);
      const changed = repaired.json.results[0]?.outputs.filter((o) => o.change !== "unchanged");
      assert.deepEqual(changed?.map((o) => [o.path, o.change]).sort(), [
        ["alpha/data.txt", "update"],
        ["alpha/two.html", "update"],
      ]);
      assert.deepEqual(await ws.destination.readFile("alpha/data.txt"), original);
      const clean = await ws.cli<VerifyJson>(["verify", "--all-owners", ...ALPHA]);
      assert.equal(clean.code, 0, clean.stdout);
      assert.equal(clean.json.checked, 5);
    });

    it("prune plans in a dry run, deletes only the plan with --apply, then plans nothing", async () => {
      const ws = await workspace(await kind.create(), {
        pruneA: "{ max_age: 1d, keep_latest: 1 }",
      });
      assert.equal((await ws.cli(["run"])).code, 0);
      const files = await ws.destination.listFiles();
      const dry = await ws.cli<PruneJson>(["prune", ...ALPHA, ...FUTURE]);
      assert.equal(dry.code, 0, dry.stderr);
      // keep_latest 1 among equal timestamps keeps the smallest path.
      const planned = ["alpha/index.html", "alpha/two.html"];
      assert.deepEqual(
        dry.json.planned.map((entry) => entry.path),
        planned,
      );
      assert.deepEqual(await ws.destination.listFiles(), files);
      const applied = await ws.cli<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"]);
      assert.equal(applied.code, 0, applied.stderr);
      assert.deepEqual(applied.json.deleted, planned);
      assert.deepEqual(visible(await ws.destination.listFiles()), [
        "alpha/data.txt",
        "beta/b1.txt",
        "beta/b2.txt",
      ]);
      const state = await ws.destination.readState();
      assert.deepEqual(ownedBy(state, "alpha"), ["alpha/data.txt"]);
      const second = await ws.cli<PruneJson>(["prune", ...ALPHA, ...FUTURE, "--apply"]);
      assert.deepEqual([second.json.planned, second.json.deleted], [[], []]);
    });

    it("status reports each pair's root, state, outputs and lock holder", async () => {
      const ws = await workspace(await kind.create());
      const empty = await ws.cli<StatusJson>(["status"]);
      assert.equal(empty.code, 0, empty.stderr);
      assert.deepEqual(
        empty.json.pairs.map((pair) => [pair.state, pair.outputs]),
        [
          ["missing", 0],
          ["missing", 0],
        ],
      );
      assert.equal((await ws.cli(["run"])).code, 0);
      const holder = {
        hostname: os.hostname(),
        pid: process.pid,
        started_at: "2026-06-04T12:00:00Z",
      };
      await ws.destination.writeFile(".distributor.lock", JSON.stringify(holder));
      const status = await ws.cli<StatusJson>(["status"]);
      assert.equal(status.code, 0, status.stderr);
      assert.deepEqual(
        status.json.pairs.map((p) => [p.pipeline_id, p.destination_id, p.root, p.state, p.outputs]),
        [
          ["alpha", "site-a", ws.destination.root, "valid", 3],
          ["beta", "site-b", ws.destination.root, "valid", 2],
        ],
      );
      assert.equal(status.json.pairs[0]?.lock?.pid, process.pid);
      const beta = await ws.cli(["reconcile-state", ...BETA]);
      assert.equal(beta.code, 1, "reconcile-state takes the lock: held → locked");
      // A lock nobody can parse still refuses a run: status must not say unlocked.
      await ws.destination.writeFile(".distributor.lock", "garbage");
      const garbled = await ws.cli<StatusJson>(["status"]);
      assert.equal(garbled.json.pairs[0]?.lock?.pid, 0, garbled.stdout);
      const human = await runCli(["status"], { cwd: ws.dir });
      assert.match(human.stdout, /locked \(unreadable lock file: holder unknown\)/);
      assert.doesNotMatch(human.stdout, /unlocked/);
      assert.deepEqual(
        status.json.pairs.map((pair) => pair.state_detail),
        [null, null],
      );
      // A broken state: status says why, where recovery starts.
      await ws.destination.writeFile(".distributor.json", "{broken");
      const broken = await ws.cli<StatusJson>(["status"]);
      assert.equal(broken.json.pairs[0]?.state, "invalid");
      assert.match(broken.json.pairs[0]?.state_detail ?? "", /^invalid \(not JSON: /);
      const brokenHuman = await runCli(["status"], { cwd: ws.dir });
      assert.match(brokenHuman.stdout, /alpha → site-a: state invalid \(not JSON: /);
    });
  });
}

describe("S3 destinations with the same bucket and prefix on two servers", () => {
  it("are two roots: the second is not written through the first one's server", async () => {
    const s3 = extraKinds[1] as ReturnType<typeof s3Kind>;
    const destination = await s3.create();
    // The mirror names the same bucket and prefix at an endpoint where nothing
    // listens: its run must fail there, not publish to the first server.
    const mirror = destination.storageYaml.replace(
      /endpoint: "[^"]*"/,
      'endpoint: "http://127.0.0.1:9"',
    );
    assert.notEqual(mirror, destination.storageYaml);
    const ws = await workspace(destination, { mirrorStorageYaml: mirror });
    const result = await ws.cli<RunJson>(["run", "--pipeline", "alpha"]);
    assert.equal(result.code, 1, result.stdout);
    assert.equal(result.json.error?.code, "storage_error", result.stdout);
    assert.deepEqual(await destination.listFiles(), [], "nothing was written anywhere");
  });
});

describe("an S3 key longer than 1024 bytes under the prefix", () => {
  it("stops the run before anything is written, dry run included", async () => {
    const s3 = extraKinds[1] as ReturnType<typeof s3Kind>;
    const destination = await s3.create();
    const ws = await workspace(destination);
    // A clean path of 1015 bytes (in folders: a file name holds at most 255
    // bytes): fine in a bundle, too long once the prefix is added.
    const long = `alpha/${`${"x".repeat(200)}/`.repeat(4)}${"y".repeat(201)}.txt`;
    assert.equal(Buffer.byteLength(long), 1015);
    await ws.writeAlpha({ ...ALPHA_FILES, [long]: "long\n" });
    for (const args of [["--dry-run"], []]) {
      const result = await ws.cli<RunJson>(["run", "--pipeline", "alpha", ...args]);
      assert.equal(result.code, 1, result.stdout);
      assert.equal(result.json.error?.code, "storage_error", result.stdout);
      assert.match(result.stdout, /S3 keys hold at most 1024/);
    }
    assert.deepEqual(await destination.listFiles(), [], "nothing was written, not even a state");
  });
});

describe("filesystem and S3 destinations of one run", () => {
  it("get the same output paths, the same sha256s and equivalent state", async () => {
    const [fsKind, s3] = extraKinds as [
      ReturnType<typeof filesystemKind>,
      ReturnType<typeof s3Kind>,
    ];
    const fsDestination = await fsKind.create();
    const s3Destination = await s3.create();
    const ws = await workspace(fsDestination, { mirrorStorageYaml: s3Destination.storageYaml });
    const result = await ws.cli<RunJson>(["run", "--pipeline", "alpha"]);
    assert.equal(result.code, 0, result.stderr);
    const fsFiles = visible(await fsDestination.listFiles());
    assert.deepEqual(fsFiles, ALPHA_OUTPUTS);
    assert.deepEqual(visible(await s3Destination.listFiles()), fsFiles);
    for (const file of fsFiles) {
      assert.equal(
        sha256(await s3Destination.readFile(file)),
        sha256(await fsDestination.readFile(file)),
        file,
      );
    }
    const rootIndependent = (state: Awaited<ReturnType<typeof fsDestination.readState>>) => ({
      ...state,
      outputs: state.outputs.map(({ destination_id: _id, ...rest }) => rest),
    });
    const fsState = await fsDestination.readState();
    assert.deepEqual(rootIndependent(await s3Destination.readState()), rootIndependent(fsState));
    assert.deepEqual(
      fsState.outputs.map((record) => record.sha256),
      await Promise.all(fsFiles.map(async (file) => sha256(await fsDestination.readFile(file)))),
    );
  });
});
