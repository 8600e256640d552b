/**
 * Crash safety (SPEC §6): a run of a few thousand files is SIGKILLed at several
 * points. After every kill `.distributor.json` is a complete valid state, the
 * other owner's records and files are intact, and the same plain `run` (no
 * --force) converges to the planned outputs; a further run is skip_same.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { lstat, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { after, before, test } from "node:test";
import { TEMP_PREFIX } from "../src/paths.js";
import { classifyState, type StateInput } from "../src/state/read.js";
import {
  cleanupTempDirs,
  readStateFile,
  runCliJson,
  sha256,
  spawnCli,
  tempDir,
  writeBundle,
} from "./helpers/fixtures.js";
import { exists, publishedFiles, type RunJson, writeConfigSpec } from "./helpers/scenario.js";

after(cleanupTempDirs);

const FILE_COUNT = 3000;
const PAGE_COUNT = 20;

function smallFile(i: number): string {
  return `files/d${String(i % 30).padStart(2, "0")}/f${String(i).padStart(4, "0")}.txt`;
}

/**
 * Two editions of the site bundle. Going from one to the other updates every
 * 10th small file and one page, deletes the other edition's own directory and
 * creates this edition's (`extra/` for v1, `fresh/` for v2).
 */
function edition(version: 1 | 2): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILE_COUNT; i++) {
    files[smallFile(i)] = version === 2 && i % 10 === 0 ? `file ${i}, v2\n` : `file ${i}\n`;
  }
  for (let k = 0; k < PAGE_COUNT; k++) {
    files[`pages/p${k}.md`] = `# Page ${k}\n\n[next](p${k + 1}.md)\n`;
  }
  if (version === 2) files["pages/p0.md"] = "# Page 0, revised\n";
  const own = version === 1 ? "extra" : "fresh";
  for (let j = 0; j < 100; j++) files[`${own}/n${j}.txt`] = `${own} ${j}\n`;
  return files;
}

const OTHER_FILES: Record<string, string> = {
  "other/readme.txt": "owned by the other pipeline\n",
  "other/data.csv": "a,b\n1,2\n",
  "other/page.md": "# Other\n",
};

function plannedPaths(files: Record<string, string>): string[] {
  return Object.keys(files).map((p) => (p.endsWith(".md") ? `${p.slice(0, -3)}.html` : p));
}

let root: string;
let config: string;
const editions = new Map<1 | 2, string>();

before(async () => {
  const base = await tempDir("distributor-crash-");
  root = path.join(base, "public");
  for (const version of [1, 2] as const) {
    const dir = path.join(base, `v${version}`);
    await writeBundle(dir, edition(version), { id: `site.v${version}` });
    editions.set(version, dir);
  }
  await writeBundle(path.join(base, "other-bundle"), OTHER_FILES, { id: "other.v1" });
  config = await writeConfigSpec(base, {
    pipelines: {
      site: { source: editions.get(1), destinations: ["web"] },
      other: { source: path.join(base, "other-bundle"), destinations: ["web"] },
    },
    destinations: { web: { root, workflow: "replacement" } },
  });
  // The other owner first, then the site: the root holds two owners' outputs.
  for (const pipeline of ["other", "site"]) {
    const { code, stderr } = await runCliJson(["run", "--config", config, "--pipeline", pipeline]);
    assert.equal(code, 0, stderr);
  }
});

function runArgs(version: 1 | 2): string[] {
  return ["run", "--config", config, "--pipeline", "site", "--source", editions.get(version) ?? ""];
}

interface KillPoint {
  name: string;
  afterMs?: number;
  /** Poll until true (or the run ended), then kill after `delayMs`. */
  when?: (target: 1 | 2) => Promise<boolean>;
  delayMs?: number;
}

/** The new folder (`extra/` for v1, `fresh/` for v2) is in place. */
const newFolderIn = (target: 1 | 2) => exists(path.join(root, target === 1 ? "extra" : "fresh"));

/** A new folder is being written: its temporary folder holds files (_fs-staging.ts). */
async function newFolderStaged(): Promise<boolean> {
  const names = await readdir(root).catch(() => []);
  for (const name of names.filter((candidate) => candidate.startsWith(TEMP_PREFIX))) {
    const inside = await readdir(path.join(root, name)).catch(() => []);
    if (inside.length > 0) return true;
  }
  return false;
}

/** Every temporary file or folder anywhere under the root. */
async function tempLeftovers(): Promise<string[]> {
  const names = await readdir(root, { recursive: true });
  return names.filter((name) => name.split(path.sep).some((part) => part.startsWith(TEMP_PREFIX)));
}

// Each kill publishes the other edition than the previous converged run, so
// every killed run has creates, updates and deletes to do.
const KILL_POINTS: KillPoint[] = [
  { name: "after 30 ms", afterMs: 30 },
  { name: "after 150 ms", afterMs: 150 },
  { name: "after 300 ms", afterMs: 300 },
  { name: "when the claim state is written", when: stateChanged },
  { name: "while a new folder is written", when: newFolderStaged },
  { name: "20 ms into writing a new folder", when: newFolderStaged, delayMs: 20 },
  { name: "when the new folder is put in place", when: newFolderIn },
];

let stateMtimeBefore = 0;
async function stateChanged(): Promise<boolean> {
  try {
    return (await stat(path.join(root, ".distributor.json"))).mtimeMs !== stateMtimeBefore;
  } catch {
    return false;
  }
}

async function killAt(
  child: ChildProcess,
  point: KillPoint,
  target: 1 | 2,
): Promise<NodeJS.Signals | null> {
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("exit", (_code, signal) => resolve(signal)),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });
  if (point.afterMs !== undefined) await sleep(point.afterMs);
  if (point.when) {
    while (!done && !(await point.when(target))) await sleep(1);
    if (point.delayMs) await sleep(point.delayMs);
  }
  child.kill("SIGKILL");
  return exited;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function readStateInput(): Promise<StateInput> {
  const file = path.join(root, ".distributor.json");
  try {
    if (!(await lstat(file)).isFile()) return { notAFile: true };
    return { bytes: await readFile(file) };
  } catch {
    return null;
  }
}

async function assertOtherOwnerIntact(): Promise<void> {
  const state = await readStateFile(root);
  const others = state.outputs.filter((r) => r.pipeline_id === "other");
  assert.deepEqual(others.map((r) => r.path).sort(), plannedPaths(OTHER_FILES).sort());
  for (const record of others) {
    assert.equal(record.destination_id, "web");
    const bytes = await readFile(path.join(root, record.path));
    assert.equal(sha256(bytes), record.sha256, `other owner's ${record.path}`);
  }
  for (const [file, text] of Object.entries(OTHER_FILES)) {
    if (!file.endsWith(".md")) assert.equal(await readFile(path.join(root, file), "utf8"), text);
  }
}

async function assertConverged(target: 1 | 2): Promise<void> {
  const files = edition(target);
  const state = await readStateFile(root);
  const expected = [...plannedPaths(files), ...plannedPaths(OTHER_FILES)].sort();
  const recorded = state.outputs.map((r) => r.path).sort();
  assert.deepEqual(recorded, expected, "state holds exactly the planned outputs of both owners");
  assert.deepEqual(await publishedFiles(root), expected, "disk holds exactly the recorded outputs");
  for (const record of state.outputs) {
    const bytes = await readFile(path.join(root, record.path));
    assert.equal(sha256(bytes), record.sha256, record.path);
    const sourceText = files[record.path];
    if (record.pipeline_id === "site" && sourceText !== undefined) {
      assert.equal(bytes.toString("utf8"), sourceText, record.path);
    }
  }
}

test("SIGKILL at any point leaves a valid state from which a plain run converges", async (t) => {
  let killedMidApply = 0;
  let staleLocks = 0;
  let tempLeft = 0;
  let target: 1 | 2 = 1;
  for (const point of KILL_POINTS) {
    target = target === 1 ? 2 : 1;
    const version = target;
    await t.test(`${point.name} (publishing v${version})`, async () => {
      stateMtimeBefore = (await stat(path.join(root, ".distributor.json"))).mtimeMs;
      const signal = await killAt(spawnCli(runArgs(version)), point, version);
      if (point.when) assert.equal(signal, "SIGKILL", "the kill landed before the run ended");

      const classified = classifyState(await readStateInput());
      assert.equal(classified.class, "valid", JSON.stringify(classified));
      await assertOtherOwnerIntact();
      if (await stateChanged()) killedMidApply++;
      if ((await tempLeftovers()).length > 0) tempLeft++;
      const lockLeft = await exists(path.join(root, ".distributor.lock"));

      const rerun = await runCliJson<RunJson>(runArgs(version));
      assert.equal(rerun.code, 0, `${JSON.stringify(rerun.json).slice(0, 2000)}\n${rerun.stderr}`);
      if (lockLeft) {
        assert.match(rerun.stderr, /warning.*stale lock/i);
        staleLocks++;
      }
      await assertConverged(version);
      await assertOtherOwnerIntact();
      assert.deepEqual(
        await tempLeftovers(),
        [],
        "the rerun removed every temporary file and folder",
      );

      const again = await runCliJson<RunJson>(runArgs(version));
      assert.equal(again.code, 0);
      assert.equal(again.json.results?.[0]?.action, "skip_same");
      assert.equal(await exists(path.join(root, ".distributor.lock")), false);
    });
  }
  assert.ok(killedMidApply >= 2, `only ${killedMidApply} kills landed during apply`);
  assert.ok(staleLocks >= 2, `only ${staleLocks} kills left a stale lock to take over`);
  assert.ok(tempLeft >= 1, "no kill left a temporary file or folder for the rerun to remove");
});
