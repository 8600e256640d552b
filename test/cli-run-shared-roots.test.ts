/**
 * Several destinations in one run whose roots overlap: one nested in the
 * other, or one root shared by two pairs under --force. Every root is planned
 * before any is applied, so what one pair writes must never be what another
 * root manages.
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, test } from "node:test";
import {
  cleanupTempDirs,
  listFiles,
  runCliJson,
  tempDir,
  writeBundle,
} from "./helpers/fixtures.js";
import { type DestinationSpec, writeConfigSpec } from "./helpers/scenario.js";

after(cleanupTempDirs);

interface RunJson {
  ok: boolean;
  results?: Array<{
    pipeline_id: string;
    destination_id: string;
    root: string;
    action: string;
    error: { code: string; paths?: string[] } | null;
  }>;
  error?: { code: string; message: string };
}

/**
 * Pipeline p1 publishes `files1` to destination d1, p2 `files2` to d2, each
 * from its own bundle; `destinations` places d1 and d2 under the test folder.
 */
async function twoPipelines(
  files1: Record<string, string>,
  files2: Record<string, string>,
  destinations: (base: string) => Record<"d1" | "d2", DestinationSpec>,
) {
  const base = await tempDir("distributor-roots-");
  await writeBundle(path.join(base, "b1"), files1, { id: "one.v1" });
  await writeBundle(path.join(base, "b2"), files2, { id: "two.v1" });
  const config = await writeConfigSpec(base, {
    pipelines: {
      p1: { source: path.join(base, "b1"), destinations: ["d1"] },
      p2: { source: path.join(base, "b2"), destinations: ["d2"] },
    },
    destinations: destinations(base),
  });
  return { base, root: path.join(base, "pub"), config };
}

/** `run --force` naming both pipelines and both destinations. */
const forceBothPairs = (config: string) =>
  runCliJson<RunJson>([
    "run",
    "--config",
    config,
    "--force",
    ...["--pipeline", "p1", "--pipeline", "p2", "--destination", "d1", "--destination", "d2"],
  ]);

/** p1 publishes `outerFiles` to ./pub, p2 x.txt to ./pub/sub: two roots, one nested. */
const nestedRoots = (outerFiles: Record<string, string>) =>
  twoPipelines(outerFiles, { "x.txt": "inner\n" }, (base) => ({
    d1: { root: path.join(base, "pub") },
    d2: { root: path.join(base, "pub"), path: "sub" },
  }));

test("an output of the outer root inside a nested root of the same run is refused; nothing is written", async () => {
  const { root, config } = await nestedRoots({ "sub/x.txt": "outer\n" });
  // The dry run (which takes no locks) plans what the run does.
  for (const extra of [["--dry-run"], []]) {
    const result = await runCliJson<RunJson>(["run", "--config", config, ...extra]);
    assert.equal(result.code, 1, result.stdout);
    const outer = result.json.results?.find((pair) => pair.pipeline_id === "p1");
    assert.equal(outer?.action, "fail_unmanaged", result.stdout);
    assert.deepEqual(outer?.error?.paths, ["sub"]);
  }
  assert.deepEqual(await listFiles(root).catch(() => []), [], "nothing was written");
});

test("--force on two pairs that share a root is a usage error; the root is left alone", async () => {
  const { root, config } = await twoPipelines({ "a.txt": "a\n" }, { "b.txt": "b\n" }, (base) => ({
    d1: { root: path.join(base, "pub") },
    d2: { root: path.join(base, "pub") },
  }));
  assert.equal((await runCliJson<RunJson>(["run", "--config", config])).code, 0);
  const state = await readFile(path.join(root, ".distributor.json"), "utf8");
  const forced = await forceBothPairs(config);
  assert.equal(forced.code, 2, forced.stdout);
  assert.equal(forced.json.error?.code, "usage");
  assert.match(forced.json.error?.message ?? "", /Force one pipeline and destination at a time/);
  assert.deepEqual(await listFiles(root), [".distributor.json", "a.txt", "b.txt"]);
  assert.equal(await readFile(path.join(root, ".distributor.json"), "utf8"), state);
});

test("two spellings of one folder (a symlink on the way) are one root, planned in turn", async () => {
  const { base, root, config } = await twoPipelines(
    { "a.txt": "a\n" },
    { "b.txt": "b\n" },
    (dir) => ({ d1: { root: path.join(dir, "pub") }, d2: { root: path.join(dir, "publink") } }),
  );
  await mkdir(root);
  await symlink(root, path.join(base, "publink"));
  const result = await runCliJson<RunJson>(["run", "--config", config]);
  assert.equal(result.code, 0, result.stdout);
  // Each pair reports the root as its destination names it.
  assert.deepEqual(
    result.json.results?.map((pair) => [pair.destination_id, pair.root]),
    [
      ["d1", root],
      ["d2", path.join(base, "publink")],
    ],
  );
  assert.deepEqual(await listFiles(root), [".distributor.json", "a.txt", "b.txt"]);
  const state = JSON.parse(await readFile(path.join(root, ".distributor.json"), "utf8")) as {
    outputs: Array<{ path: string; destination_id: string }>;
  };
  assert.deepEqual(
    state.outputs.map((record) => `${record.path} ${record.destination_id}`),
    ["a.txt d1", "b.txt d2"],
  );
});

test("--force on a root with another root of the same run nested in it is a usage error", async () => {
  const { root, config } = await nestedRoots({ "o.txt": "outer\n" });
  const forced = await forceBothPairs(config);
  assert.equal(forced.code, 2, forced.stdout);
  assert.equal(forced.json.error?.code, "usage");
  assert.match(forced.json.error?.message ?? "", /another root of this run/);
  assert.deepEqual(await listFiles(root).catch(() => []), []);
});

test("a legacy root shared by two pairs: only the first publishes over leftovers, as when run one after another", async () => {
  // docs/destination-state.md: the first pair upgrades the state to schema 4;
  // to the second, a leftover file where its output goes is unmanaged.
  const { root, config } = await twoPipelines(
    { "a.txt": "new a\n" },
    { "b.txt": "new b\n" },
    (base) => ({
      d1: { root: path.join(base, "pub") },
      d2: { root: path.join(base, "pub") },
    }),
  );
  await mkdir(root, { recursive: true });
  const legacy = `${JSON.stringify({ schema_version: 3, outputs: [] })}\n`;
  await writeFile(path.join(root, ".distributor.json"), legacy);
  await writeFile(path.join(root, "a.txt"), "old a\n");
  await writeFile(path.join(root, "b.txt"), "old b\n");
  for (const extra of [["--dry-run"], []]) {
    const result = await runCliJson<RunJson>(["run", "--config", config, ...extra]);
    assert.equal(result.code, 1, result.stdout);
    const actions = result.json.results?.map((pair) => [pair.pipeline_id, pair.action]);
    assert.deepEqual(actions, [
      ["p1", "upsert_additive"],
      ["p2", "fail_unmanaged"],
    ]);
    assert.deepEqual(result.json.results?.[1]?.error?.paths, ["b.txt"]);
  }
  // Nothing was written anywhere, the first pair's publication included.
  assert.equal(await readFile(path.join(root, ".distributor.json"), "utf8"), legacy);
  assert.equal(await readFile(path.join(root, "a.txt"), "utf8"), "old a\n");
  // Alone, the first pair publishes over its leftover; then the second is refused.
  const first = await runCliJson<RunJson>(["run", "--config", config, "--pipeline", "p1"]);
  assert.equal(first.code, 0, first.stdout);
  const second = await runCliJson<RunJson>(["run", "--config", config, "--pipeline", "p2"]);
  assert.equal(second.json.results?.[0]?.action, "fail_unmanaged", second.stdout);
  assert.equal(await readFile(path.join(root, "b.txt"), "utf8"), "old b\n");
});

test("a run that fails planning leaves no root folder behind, a nested root's included", async () => {
  // The lock folders of ./pub and ./pub/n are created for the locks and must
  // both go again: the nested one is released (and removed) first.
  const base = await tempDir("distributor-roots-");
  await writeBundle(path.join(base, "b"), { "a.txt": "a\n" }, { id: "b.v1" });
  await mkdir(path.join(base, "other"));
  await writeFile(path.join(base, "other", "junk.txt"), "not ours\n");
  const config = await writeConfigSpec(base, {
    pipelines: { p: { source: path.join(base, "b"), destinations: ["outer", "inner", "other"] } },
    destinations: {
      outer: { root: path.join(base, "pub") },
      inner: { root: path.join(base, "pub"), path: "n" },
      other: { root: path.join(base, "other") },
    },
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    const result = await runCliJson<RunJson>(["run", "--config", config]);
    assert.equal(result.code, 1, result.stdout);
    const actions = result.json.results?.map((pair) => pair.action);
    assert.ok(actions?.includes("fail_unmanaged"), result.stdout);
    assert.deepEqual(
      await readdir(base).then((names) => names.sort()),
      ["b", "distributor.yaml", "other"],
      "nothing was written anywhere",
    );
  }
});
