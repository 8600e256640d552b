/**
 * `distributor run` end to end, as a process, with the same expectations on a
 * filesystem destination and on an S3 destination (the real server): every
 * planning outcome of the seed contract, and the lock.
 */
import assert from "node:assert/strict";
import os from "node:os";
import { after, describe, it } from "node:test";
import {
  ALPHA,
  ALPHA_FILES,
  ALPHA_OUTPUTS,
  BETA,
  type Destination,
  destinationKinds,
  workspace,
} from "./helpers/destinations.js";
import { cleanupTempDirs, sha256 } from "./helpers/fixtures.js";

interface OutputJson {
  path: string;
  change: string;
  sha256: string;
  size: number;
  url?: string;
}
interface PairJson {
  root: string;
  state: string;
  action: string;
  outputs: OutputJson[];
  deleted: string[];
  counts: { created: number; updated: number; unchanged: number; deleted: number };
  error: { code: string; message: string } | null;
}
interface RunJson {
  ok: boolean;
  results: PairJson[];
  error?: { code: string; message: string };
}

const STATE = ".distributor.json";
const kinds = destinationKinds();
after(async () => {
  await Promise.all(kinds.map((kind) => kind.cleanup()));
  await cleanupTempDirs();
});

/** What a listing holds apart from the tool's reserved files. */
const visible = (files: string[]) => files.filter((file) => !file.includes(".distributor."));

function only(json: RunJson): PairJson {
  assert.equal(json.results.length, 1, JSON.stringify(json));
  return json.results[0] as PairJson;
}

function changes(pair: PairJson): Record<string, string> {
  return Object.fromEntries(pair.outputs.map((output) => [output.path, output.change]));
}

/** Files and state bytes, to show that a failed plan wrote nothing. */
async function snapshot(destination: Destination) {
  const files = await destination.listFiles();
  const state = files.includes(STATE) ? await destination.readStateText() : null;
  return { files, state };
}

for (const kind of kinds) {
  describe(`run on ${kind.name}`, { concurrency: 4 }, () => {
    it("publish_new, then skip_same leaves the state's bytes alone", async () => {
      const ws = await workspace(await kind.create());
      const first = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(first.code, 0, first.stderr);
      // Which way the state and the lock are written here: RGW honours
      // conditional writes except in a versioned bucket (destinationKinds).
      assert.equal(
        /does not honour conditional writes/.test(first.stderr),
        kind.name === "s3 (versioned bucket)",
        first.stderr,
      );
      const pair = only(first.json);
      assert.equal(pair.action, "publish_new");
      assert.equal(pair.root, ws.destination.root);
      assert.deepEqual(pair.counts, { created: 3, updated: 0, unchanged: 0, deleted: 0 });
      assert.deepEqual(visible(await ws.destination.listFiles()), ALPHA_OUTPUTS);
      const data = await ws.destination.readFile("alpha/data.txt");
      assert.equal(data.toString(), ALPHA_FILES["alpha/data.txt"]);
      for (const output of pair.outputs) {
        assert.equal(sha256(await ws.destination.readFile(output.path)), output.sha256);
      }
      const stateBefore = await ws.destination.readStateText();
      const second = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(only(second.json).action, "skip_same");
      assert.equal(await ws.destination.readStateText(), stateBefore);
    });

    it("one changed Markdown file is exactly one update", async () => {
      const ws = await workspace(await kind.create());
      assert.equal((await ws.cli(["run", ...ALPHA])).code, 0);
      await ws.writeAlpha({ ...ALPHA_FILES, "alpha/two.md": "# Two\n\nEdited.\n" });
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 0, result.stderr);
      const pair = only(result.json);
      assert.equal(pair.action, "upsert_additive");
      assert.deepEqual(changes(pair), {
        "alpha/data.txt": "unchanged",
        "alpha/index.html": "unchanged",
        "alpha/two.html": "update",
      });
      assert.match((await ws.destination.readFile("alpha/two.html")).toString(), /Edited\./);
    });

    it("additive: two owners share one root, and an omitted output stays", async () => {
      const ws = await workspace(await kind.create());
      assert.equal((await ws.cli(["run"])).code, 0);
      const { "alpha/data.txt": _dropped, ...rest } = ALPHA_FILES;
      await ws.writeAlpha(rest);
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(only(result.json).deleted, []);
      const state = await ws.destination.readState();
      const owners = state.outputs.map((r) => `${r.pipeline_id}/${r.destination_id}:${r.path}`);
      assert.deepEqual(owners, [
        "alpha/site-a:alpha/data.txt",
        "alpha/site-a:alpha/index.html",
        "alpha/site-a:alpha/two.html",
        "beta/site-b:beta/b1.txt",
        "beta/site-b:beta/b2.txt",
      ]);
      assert.ok((await ws.destination.listFiles()).includes("alpha/data.txt"));
    });

    it("replacement deletes only the owner's omitted outputs", async () => {
      const ws = await workspace(await kind.create(), { workflowA: "replacement" });
      assert.equal((await ws.cli(["run"])).code, 0);
      await ws.destination.writeFile("alpha/notes.txt", "unmanaged\n");
      const { "alpha/data.txt": _dropped, ...rest } = ALPHA_FILES;
      await ws.writeAlpha(rest);
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 0, result.stderr);
      const pair = only(result.json);
      assert.equal(pair.action, "replace_catalog");
      assert.deepEqual(pair.deleted, ["alpha/data.txt"]);
      assert.deepEqual(visible(await ws.destination.listFiles()), [
        "alpha/index.html",
        "alpha/notes.txt",
        "alpha/two.html",
        "beta/b1.txt",
        "beta/b2.txt",
      ]);
      const paths = (await ws.destination.readState()).outputs.map((record) => record.path);
      assert.deepEqual(paths, ["alpha/index.html", "alpha/two.html", "beta/b1.txt", "beta/b2.txt"]);
    });

    it("fail_unmanaged: an unrecorded file at a planned path stops the run, nothing written", async () => {
      const ws = await workspace(await kind.create());
      assert.equal((await ws.cli(["run", ...ALPHA])).code, 0);
      await ws.destination.writeFile("alpha/new.txt", "someone else's\n");
      await ws.writeAlpha({ ...ALPHA_FILES, "alpha/new.txt": "ours\n" });
      const before = await snapshot(ws.destination);
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 1);
      assert.equal(only(result.json).action, "fail_unmanaged");
      assert.deepEqual(await snapshot(ws.destination), before);
      assert.equal((await ws.destination.readFile("alpha/new.txt")).toString(), "someone else's\n");
    });

    it("fail_conflict on an invalid state, nothing written", async () => {
      const destination = await kind.create();
      const ws = await workspace(destination);
      await destination.writeFile(STATE, "{ not json\n");
      const before = await snapshot(destination);
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 1);
      const pair = only(result.json);
      assert.equal(pair.state, "invalid");
      assert.equal(pair.action, "fail_conflict");
      assert.deepEqual(await snapshot(destination), before);
    });

    it("force_replace: the dry run lists the deletions, the run clears unmanaged content", async () => {
      const destination = await kind.create();
      const ws = await workspace(destination);
      await destination.writeFile("old/page.html", "old\n");
      await destination.writeFile(STATE, "{ not json\n");
      const force = ["run", ...ALPHA, "--force"];
      const dry = await ws.cli<RunJson>([...force, "--dry-run"]);
      assert.equal(dry.code, 0, dry.stderr);
      assert.equal(only(dry.json).action, "force_replace");
      assert.deepEqual(only(dry.json).deleted, ["old/page.html"]);
      assert.deepEqual(await destination.listFiles(), [STATE, "old/page.html"]);
      const real = await ws.cli<RunJson>(force);
      assert.equal(real.code, 0, real.stderr);
      assert.deepEqual(await destination.listFiles(), [STATE, ...ALPHA_OUTPUTS].sort());
      const state = await destination.readState();
      assert.deepEqual(
        state.outputs.map((record) => record.path),
        ALPHA_OUTPUTS,
      );
    });

    it("locked: a lock held by a live process fails the run with code locked", async () => {
      const destination = await kind.create();
      const ws = await workspace(destination);
      const holder = {
        hostname: os.hostname(),
        pid: process.pid,
        started_at: "2026-06-04T12:00:00Z",
      };
      const lock = `${JSON.stringify(holder, null, 2)}\n`;
      await destination.writeFile(".distributor.lock", lock);
      const result = await ws.cli<RunJson>(["run", ...ALPHA]);
      assert.equal(result.code, 1);
      assert.equal(result.json.error?.code, "locked");
      assert.match(result.json.error?.message ?? "", new RegExp(`pid ${process.pid}`));
      assert.deepEqual(await destination.listFiles(), [".distributor.lock"]);
      assert.equal((await destination.readFile(".distributor.lock")).toString(), lock);
      const beta = await ws.cli<RunJson>(["run", ...BETA, "--dry-run"]);
      assert.equal(beta.code, 0, "a dry run takes no lock");
    });
  });
}
