/**
 * Two `run`s started at the same moment on one root (different pipelines,
 * additive): either one gets `locked` naming the holder, or both succeed one
 * after the other. Either way no record is lost: after rerunning a loser the
 * state holds both owners' outputs.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, test } from "node:test";
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

const ROUNDS = 4;
const FILES_PER_PIPELINE = 300;

function bundleFiles(owner: string, round: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES_PER_PIPELINE; i++)
    files[`${owner}/f${i}.txt`] = `${owner} ${i} r${round}\n`;
  files[`${owner}/index.md`] = `# ${owner} round ${round}\n`;
  return files;
}

function expectedPaths(owner: string): string[] {
  return Object.keys(bundleFiles(owner, 0)).map((p) => p.replace(/\.md$/, ".html"));
}

interface Finished {
  code: number;
  json: RunJson;
  stderr: string;
}

function finish(child: ChildProcess): Promise<Finished> {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      try {
        resolve({ code: code ?? -1, json: JSON.parse(stdout) as RunJson, stderr });
      } catch {
        reject(new Error(`not one JSON document:\n${stdout}\nstderr:\n${stderr}`));
      }
    });
  });
}

/** A report cut short for assertion messages (a full one lists hundreds of outputs). */
function brief(json: RunJson): string {
  return JSON.stringify({ ...json, results: json.results?.map((r) => ({ ...r, outputs: [] })) });
}

function assertOutcome(result: Finished, pipeline: string): "won" | "locked" {
  if (result.code === 0) {
    assert.equal(result.json.ok, true);
    assert.equal(result.json.results?.[0]?.pipeline_id, pipeline);
    return "won";
  }
  assert.equal(result.code, 1, `${pipeline}: ${brief(result.json)}\n${result.stderr}`);
  const error = result.json.error ?? result.json.results?.[0]?.error;
  assert.equal(error?.code, "locked", `${pipeline}: ${brief(result.json)}`);
  assert.match(error?.message ?? "", /pid \d+/, "names the holder");
  return "locked";
}

test("concurrent runs on one root never lose a record; the loser gets locked", async () => {
  const base = await tempDir("distributor-concurrency-");
  const root = path.join(base, "public");
  const outcomes: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sources: Record<string, string> = {};
    for (const owner of ["alpha", "beta"]) {
      sources[owner] = path.join(base, `${owner}-r${round}`);
      await writeBundle(sources[owner], bundleFiles(owner, round), { id: `${owner}.r${round}` });
    }
    const config = await writeConfigSpec(base, {
      pipelines: {
        alpha: { source: sources.alpha, destinations: ["web"] },
        beta: { source: sources.beta, destinations: ["web"] },
      },
      destinations: { web: { root } },
    });
    const args = (p: string) => ["run", "--config", config, "--pipeline", p, "--json"];
    const [alpha, beta] = await Promise.all([
      finish(spawnCli(args("alpha"))),
      finish(spawnCli(args("beta"))),
    ]);
    const results = { alpha: assertOutcome(alpha, "alpha"), beta: assertOutcome(beta, "beta") };
    assert.ok(results.alpha === "won" || results.beta === "won", "at least one run succeeds");
    outcomes.push(`${results.alpha}/${results.beta}`);
    for (const owner of ["alpha", "beta"] as const) {
      if (results[owner] !== "locked") continue;
      const rerun = await runCliJson<RunJson>(args(owner).slice(0, -1));
      assert.equal(rerun.code, 0, rerun.stderr);
    }
    await assertBothOwners(root, round);
  }
  // Printed so a reader sees which interleavings the rounds exercised.
  console.log(`concurrency outcomes (alpha/beta): ${outcomes.join(", ")}`);
});

async function assertBothOwners(root: string, round: number): Promise<void> {
  const state = await readStateFile(root);
  const owners = Object.fromEntries(state.outputs.map((r) => [r.path, r.pipeline_id]));
  const expected = [...expectedPaths("alpha"), ...expectedPaths("beta")].sort();
  assert.deepEqual(Object.keys(owners).sort(), expected, `round ${round}: every record kept`);
  for (const owner of ["alpha", "beta"]) {
    for (const p of expectedPaths(owner)) assert.equal(owners[p], owner, p);
  }
  assert.deepEqual(await publishedFiles(root), expected);
  for (const record of state.outputs) {
    const bytes = await readFile(path.join(root, record.path));
    assert.equal(sha256(bytes), record.sha256, record.path);
    if (record.path.endsWith(".txt")) assert.match(bytes.toString(), new RegExp(` r${round}\\n$`));
  }
  assert.equal(await exists(path.join(root, ".distributor.lock")), false, "lock released");
}
