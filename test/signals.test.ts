/**
 * SIGINT and SIGTERM during a run (SPEC §6 Locking): the run releases its lock
 * and exits 130 / 143; the crash-safe write order leaves a valid state, and the
 * same plain run then converges without --force.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { access, readFile } from "node:fs/promises";
import path from "node:path";
import { after, test } from "node:test";
import { classifyState } from "../src/state/read.js";
import { cleanupTempDirs, runCliJson, spawnCli, tempDir, writeBundle } from "./helpers/fixtures.js";
import { publishedFiles, type RunJson, writeConfigSpec } from "./helpers/scenario.js";

after(cleanupTempDirs);

const FILES: Record<string, string> = {};
for (let i = 0; i < 3000; i++) FILES[`d${i % 40}/f${i}.txt`] = `file ${i}\n`;

const present = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** FILES as a bundle, published by pipeline site to ./public. */
async function signalScenario() {
  const base = await tempDir("distributor-signal-");
  await writeBundle(path.join(base, "bundle"), FILES, { id: "signals.v1" });
  const root = path.join(base, "public");
  const config = await writeConfigSpec(base, {
    pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
    destinations: { web: { root } },
  });
  return { base, root, config };
}

async function interruptedRun(signal: "SIGINT" | "SIGTERM") {
  const { base, root, config } = await signalScenario();
  const child = spawnCli(["run", "--config", config]);
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = once(child, "exit");
  // Signal as soon as the lock exists: the run is then between locking and its last write.
  const lock = path.join(root, ".distributor.lock");
  while (!(await present(lock))) {
    if (child.exitCode !== null) assert.fail(`run ended before it took the lock: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  child.kill(signal);
  const [code] = await exited;
  return { base, root, config, code, stderr, lockLeft: await present(lock) };
}

for (const [signal, exitCode] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  test(`${signal} releases the lock, exits ${exitCode}, and a plain rerun converges`, async () => {
    const run = await interruptedRun(signal);
    assert.equal(run.code, exitCode, run.stderr);
    assert.equal(run.lockLeft, false, "the lock was released");
    assert.match(run.stderr, new RegExp(`${signal} received`));
    const stateFile = path.join(run.root, ".distributor.json");
    if (await present(stateFile)) {
      const state = classifyState({ bytes: await readFile(stateFile) });
      assert.equal(state.class, "valid", JSON.stringify(state));
    }
    const rerun = await runCliJson<RunJson>(["run", "--config", run.config]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.doesNotMatch(rerun.stderr, /stale lock/, "nothing stale was left to take over");
    assert.deepEqual(await publishedFiles(run.root), Object.keys(FILES).sort());
    const again = await runCliJson<RunJson>(["run", "--config", run.config]);
    assert.equal(again.json.results?.[0]?.action, "skip_same");
  });
}

test("a signal after a large --json report was written to a full pipe does not cut it short", async () => {
  const { root, config } = await signalScenario();
  const child = spawnCli(["run", "--config", config, "--json"]);
  const exited = once(child, "exit");
  // Nothing reads stdout yet: the report (3,000 outputs, well over the pipe's
  // 64 KiB) waits in it once the run is done: its state written, its lock gone.
  child.stdout.pause();
  const state = path.join(root, ".distributor.json");
  const lock = path.join(root, ".distributor.lock");
  while (!(await present(state)) || (await present(lock))) {
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  child.kill("SIGINT");
  const chunks: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  child.stdout.resume();
  const [code] = await exited;
  if (!child.stdout.readableEnded) await once(child.stdout, "end");
  const text = Buffer.concat(chunks).toString("utf8");
  assert.ok(text.length > 128 * 1024, `a large report: ${text.length} bytes`);
  const report = JSON.parse(text) as RunJson;
  assert.equal(report.results?.[0]?.outputs?.length, Object.keys(FILES).length);
  assert.ok(code === 0 || code === 130, `exit ${code}`);
});
