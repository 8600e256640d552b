/**
 * The render cache seen from outside: `distributor run` as a process with its
 * own cache directory. A rerun plans from cached digests; a wrong cache can
 * cost a render but never a wrong output or state; a dry run and
 * DISTRIBUTOR_CACHE=off leave no cache; an unusable cache directory is ignored.
 */
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import {
  cleanupTempDirs,
  listFiles,
  readStateFile,
  runCli,
  runCliJson,
  sha256,
} from "./helpers/fixtures.js";
import {
  onlyResult,
  type RunJson,
  type Scenario,
  SITE_FILES,
  scenario,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

interface CacheFile {
  entries: Record<string, [string, number, number]>;
}

async function cacheScenario() {
  const s = await scenario();
  const cacheDir = path.join(s.base, "cache");
  const run = (args: string[] = [], env: NodeJS.ProcessEnv = {}) =>
    runCliJson<RunJson>(["run", "--config", s.config, ...args], {
      env: { DISTRIBUTOR_CACHE_DIR: cacheDir, ...env },
    });
  const cacheFile = path.join(cacheDir, "render-site.json");
  const readCache = async () => JSON.parse(await readFile(cacheFile, "utf8")) as CacheFile;
  return { s, cacheDir, cacheFile, run, readCache };
}

/** Every published file's digest must be what the state records for it. */
async function assertStateMatchesFiles(s: Scenario): Promise<void> {
  const state = await readStateFile(s.root);
  for (const record of state.outputs) {
    const bytes = await readFile(path.join(s.root, record.path));
    assert.equal(record.sha256, sha256(bytes), record.path);
    assert.equal(record.size, bytes.byteLength, record.path);
  }
}

describe("render cache", () => {
  test("a run records each rendered document; a rerun plans from them and writes nothing", async () => {
    const { s, run, readCache } = await cacheScenario();
    assert.equal((await run()).code, 0);
    const cache = await readCache();
    const state = await readStateFile(s.root);
    const generated = state.outputs.filter((o) => o.kind === "generated");
    assert.equal(generated.length, 2);
    assert.deepEqual(
      Object.values(cache.entries)
        .map(([digest, size]) => [digest, size])
        .sort(),
      generated.map((o) => [o.sha256, o.size]).sort(),
    );
    const { code, json } = await run();
    assert.equal(code, 0);
    assert.equal(onlyResult(json).action, "skip_same");
  });

  test("a changed document is rendered and published next to cached ones", async () => {
    const { s, run } = await cacheScenario();
    assert.equal((await run()).code, 0);
    const v2 = await s.bundle("v2", { ...SITE_FILES, "docs/guide.md": "# Guide\n\nNew steps.\n" });
    const { code, json } = await run(["--source", v2]);
    assert.equal(code, 0);
    assert.deepEqual(onlyResult(json).counts, { created: 0, updated: 1, unchanged: 3, deleted: 0 });
    assert.match(await readFile(path.join(s.root, "docs/guide.html"), "utf8"), /New steps/);
    await assertStateMatchesFiles(s);
  });

  test("wrong cached digests cost a render, never a wrong output or state", async () => {
    const { s, run, cacheFile, readCache } = await cacheScenario();
    assert.equal((await run()).code, 0);
    const truth = await readCache();
    const lying: CacheFile = { ...truth, entries: {} };
    for (const [key, [, size, day]] of Object.entries(truth.entries)) {
      lying.entries[key] = [`sha256:${"0".repeat(64)}`, size + 1, day];
    }
    await writeFile(cacheFile, JSON.stringify(lying));

    // Planned as updates from the cache, rendered, found equal: nothing to write.
    const rerun = await run();
    assert.equal(rerun.code, 0);
    assert.equal(onlyResult(rerun.json).action, "skip_same");
    assert.deepEqual((await readCache()).entries, truth.entries, "the cache is corrected");

    // A fresh root with the lying cache: outputs and state carry the true digests.
    await writeFile(cacheFile, JSON.stringify(lying));
    await rm(s.root, { recursive: true });
    const fresh = await run();
    assert.equal(fresh.code, 0);
    const result = onlyResult(fresh.json);
    assert.equal(result.action, "publish_new");
    await assertStateMatchesFiles(s);
    for (const output of result.outputs) {
      const bytes = await readFile(path.join(s.root, output.path));
      assert.equal(output.sha256, sha256(bytes), `reported digest of ${output.path}`);
    }
  });

  test("a dry run reads the cache but writes none; DISTRIBUTOR_CACHE=off uses none", async () => {
    const { s, cacheDir, run } = await cacheScenario();
    assert.equal((await run(["--dry-run"])).code, 0);
    assert.deepEqual(await listFiles(cacheDir), []);
    assert.equal((await run([], { DISTRIBUTOR_CACHE: "off" })).code, 0);
    assert.deepEqual(await listFiles(cacheDir), []);
    assert.equal(
      onlyResult((await run([], { DISTRIBUTOR_CACHE: "off" })).json).action,
      "skip_same",
    );
    assert.ok((await listFiles(s.root)).includes("index.html"));
  });

  test("run --help names the cache's variables", async () => {
    const help = await runCli(["run", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /DISTRIBUTOR_CACHE_DIR/);
    assert.match(help.stdout, /DISTRIBUTOR_CACHE=off/);
  });

  test("a cache directory that cannot be created does not fail the run", async () => {
    const { s, run } = await cacheScenario();
    const blocker = path.join(s.base, "not-a-dir");
    await writeFile(blocker, "x");
    const { code, json, stderr } = await run([], {
      DISTRIBUTOR_CACHE_DIR: path.join(blocker, "c"),
    });
    assert.equal(code, 0, stderr);
    assert.equal(onlyResult(json).action, "publish_new");
    assert.equal(await readFile(blocker, "utf8"), "x", "the blocking file is left as it was");
  });
});
