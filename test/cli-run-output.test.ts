/**
 * `distributor run` as a process: what it prints and what `--dry-run`,
 * `--quiet`, `url`, `--help` and `--version` promise.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cleanupTempDirs, listFiles, readStateFile, runCli } from "./helpers/fixtures.js";
import {
  exists,
  fingerprint,
  lockText,
  onlyResult,
  packageVersion,
  SITE_FILES,
  SITE_OUTPUTS,
  scenario,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

describe("--dry-run", () => {
  test("on a fresh root: reports the plan, says 'would', creates nothing at all", async () => {
    const s = await scenario();
    const { code, json } = await s.runJson(["--dry-run"]);
    assert.equal(code, 0);
    assert.equal(json.dry_run, true);
    assert.equal(json.ok, true);
    const result = onlyResult(json);
    assert.equal(result.action, "publish_new");
    assert.deepEqual(result.counts, { created: 4, updated: 0, unchanged: 0, deleted: 0 });
    const human = await s.run(["--dry-run"]);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /would create 4/);
    assert.deepEqual(await listFiles(s.root), [], "no lock, temp file, state or output");
  });

  test("on a published root: changes nothing, not even the state's mtime", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const before = await listFiles(s.root);
    const stateBefore = await fingerprint(path.join(s.root, ".distributor.json"));
    const v2 = await s.bundle("v2", { ...SITE_FILES, "data/a.txt": "beta\n", "new.txt": "n\n" });
    const { code, json } = await s.runJson(["--dry-run", "--source", v2]);
    assert.equal(code, 0);
    assert.deepEqual(onlyResult(json).counts, { created: 1, updated: 1, unchanged: 3, deleted: 0 });
    assert.deepEqual(await listFiles(s.root), before);
    assert.deepEqual(await fingerprint(path.join(s.root, ".distributor.json")), stateBefore);
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), "alpha\n");
  });

  test("takes no lock: it plans even while another process holds the root's lock", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const lock = lockText(process.pid);
    await writeFile(path.join(s.root, ".distributor.lock"), lock);
    const { code, json } = await s.runJson(["--dry-run"]);
    assert.equal(code, 0, JSON.stringify(json));
    assert.equal(onlyResult(json).action, "skip_same");
    assert.equal(await readFile(path.join(s.root, ".distributor.lock"), "utf8"), lock);
    const real = await s.runJson();
    assert.equal(real.code, 1, "without --dry-run the held lock stops the run");
  });

  test("a failing pair fails the dry run too (exit 1)", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    await writeFile(path.join(s.root, ".distributor.json"), "garbage");
    const { code, json } = await s.runJson(["--dry-run"]);
    assert.equal(code, 1);
    assert.equal(onlyResult(json).action, "fail_conflict");
  });
});

describe("--quiet and human output", () => {
  test("--quiet prints nothing on success", async () => {
    const s = await scenario();
    const { code, stdout, stderr } = await s.run(["--quiet"]);
    assert.equal(code, 0);
    assert.equal(stdout, "");
    assert.equal(stderr, "");
    assert.deepEqual(await listFiles(s.root), [...SITE_OUTPUTS, ".distributor.json"].sort());
  });

  test("human output has one line per pair with action and counts", async () => {
    const s = await scenario();
    const first = await s.run();
    assert.equal(first.code, 0);
    assert.match(
      first.stdout,
      /site → web: publish_new — create 4, update 0, delete 0, 0 unchanged/,
    );
    assert.doesNotMatch(first.stdout, /would/);
    const second = await s.run();
    assert.match(second.stdout, /site → web: skip_same/);
  });
});

describe("url", () => {
  test("records and report carry the base URL joined with the percent-encoded path", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: {
        web: { root: path.join(base, "public"), url: "https://reports.example.com/archive/" },
      },
    }));
    const bundle = await s.bundle("spaces", { "a b.md": "# Spaced\n", "x/ü.txt": "u\n" });
    const { code, json } = await s.runJson(["--source", bundle]);
    assert.equal(code, 0, JSON.stringify(json));
    const urls = Object.fromEntries(onlyResult(json).outputs.map((o) => [o.path, o.url]));
    assert.deepEqual(urls, {
      "a b.html": "https://reports.example.com/archive/a%20b.html",
      "x/ü.txt": "https://reports.example.com/archive/x/%C3%BC.txt",
    });
    const state = await readStateFile(s.root);
    assert.deepEqual(
      Object.fromEntries(state.outputs.map((r) => [r.path, r.url])),
      urls,
      "state records the same urls",
    );
    assert.equal(await exists(path.join(s.root, "a b.html")), true);
  });
});

describe("--help and --version", () => {
  test("--version prints the package version and exits 0", async () => {
    const { code, stdout } = await runCli(["--version"]);
    assert.equal(code, 0);
    assert.equal(stdout.trim(), await packageVersion());
  });

  test("--help of the program and of every command it lists exits 0 with usage text", async () => {
    const top = await runCli(["--help"]);
    assert.equal(top.code, 0, top.stderr);
    assert.match(top.stdout, /Usage: distributor/);
    const commandsSection = top.stdout.slice(top.stdout.indexOf("Commands:"));
    const commands = [...commandsSection.matchAll(/^ {2}([a-z][a-z-]*)/gm)]
      .map((match) => match[1] as string)
      .filter((name) => name !== "help");
    for (const expected of ["run", "validate", "status"]) assert.ok(commands.includes(expected));
    for (const command of commands) {
      const { code, stdout, stderr } = await runCli([command, "--help"]);
      assert.equal(code, 0, `${command}: ${stderr}`);
      assert.match(stdout, new RegExp(`Usage: distributor ${command}`), command);
    }
  });

  test("no command at all is a usage error (exit 2) that shows the commands", async () => {
    const { code, stdout, stderr } = await runCli([]);
    assert.equal(code, 2);
    assert.equal(stdout, "");
    for (const command of ["run", "validate", "status", "reconcile-state", "verify", "prune"]) {
      assert.match(stderr, new RegExp(`\\b${command}\\b`));
    }
  });

  test("run --help lists every run flag", async () => {
    const { code, stdout } = await runCli(["run", "--help"]);
    assert.equal(code, 0);
    for (const flag of ["--pipeline", "--destination", "--source", "--dry-run", "--force"]) {
      assert.ok(stdout.includes(flag), flag);
    }
    for (const flag of ["--verify", "--json", "--quiet", "--config"]) {
      assert.ok(stdout.includes(flag), flag);
    }
  });
});
