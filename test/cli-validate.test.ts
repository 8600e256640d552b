/**
 * `distributor validate` as a process (SPEC §9, §10): exit 0 when config,
 * sources and planned outputs are all well; 1 for a bad source, an output
 * collision or a Markdown file that cannot be rendered; 2 for a config or
 * usage error. It never touches a destination, and no error prints a stack
 * trace.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { type CliResult, cleanupTempDirs, runCli, runCliJson } from "./helpers/fixtures.js";
import {
  defaultSpec,
  exists,
  hasStackTrace,
  type RunJson,
  type Scenario,
  SITE_FILES,
  scenario,
  writeConfigSpec,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

interface ValidateJson extends RunJson {
  config?: string;
  pipelines?: {
    pipeline_id: string;
    destinations: string[];
    source: { id: string; digest: string; created: string };
    files: number;
    outputs: number;
  }[];
}

function validate(s: Scenario, args: readonly string[] = []): Promise<CliResult> {
  return runCli(["validate", "--config", s.config, ...args]);
}

function validateJson(s: Scenario, args: readonly string[] = []) {
  return runCliJson<ValidateJson>(["validate", "--config", s.config, ...args]);
}

/** Both renderings fail with `code` and `exit`; the destination stays untouched. */
async function assertFails(s: Scenario, code: string, exit: number, args: readonly string[] = []) {
  const { json, stderr, code: jsonExit } = await validateJson(s, args);
  assert.equal(jsonExit, exit, stderr);
  assert.deepEqual(Object.keys(json), ["ok", "error"], JSON.stringify(json));
  assert.equal(json.ok, false);
  assert.equal(json.error?.code, code, JSON.stringify(json));
  assert.equal(hasStackTrace(stderr), false, stderr);
  const human = await validate(s, args);
  assert.equal(human.code, exit, human.stderr);
  assert.match(human.stderr, new RegExp(code));
  assert.equal(hasStackTrace(human.stderr), false, human.stderr);
  assert.equal(human.stdout, "", "nothing on stdout but a report");
  assert.equal(await exists(s.root), false, "validate never touches a destination");
  return json;
}

describe("distributor validate", () => {
  test("all well: exit 0, what it verified and planned, and no destination touched", async () => {
    const s = await scenario();
    const human = await validate(s);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /: ok\n/);
    assert.match(
      human.stdout,
      /pipeline site: source site\.v1 \(4 files verified\) → 4 planned outputs for web/,
    );
    const { code, json } = await validateJson(s);
    assert.equal(code, 0);
    assert.equal(json.ok, true);
    assert.equal(json.config, s.config);
    assert.deepEqual(
      json.pipelines?.map(({ pipeline_id, destinations, files, outputs, source }) => ({
        pipeline_id,
        destinations,
        files,
        outputs,
        id: source.id,
      })),
      [{ pipeline_id: "site", destinations: ["web"], files: 4, outputs: 4, id: "site.v1" }],
    );
    assert.match(json.pipelines?.[0]?.source.digest ?? "", /^sha256:[0-9a-f]{64}$/);
    assert.equal(await exists(s.root), false, "validate never touches a destination");
  });

  test("a listed file whose bytes changed: source_invalid naming it, exit 1", async () => {
    const s = await scenario();
    await writeFile(path.join(s.base, "bundle", "data/a.txt"), "tampered\n");
    const json = await assertFails(s, "source_invalid", 1);
    assert.deepEqual(json.error?.paths, ["data/a.txt"]);
  });

  test("several bad files: one line each on stderr, a line break in a name escaped; --json keeps the text", async () => {
    const s = await scenario();
    // A bundle folder whose name would print a line of its own.
    const dir = await s.bundle("b\n  - index.md: fine", SITE_FILES, "evil.bundle");
    await writeFile(path.join(dir, "data/a.txt"), "tampered\n");
    await writeFile(path.join(dir, "assets/style.css"), "tampered too\n");
    const json = await assertFails(s, "source_invalid", 1, ["--source", dir]);
    assert.equal(
      json.error?.message,
      `Source bundle ${dir} failed verification (2 of 4 listed files):\n  - assets/style.css: size 13 != 20\n  - data/a.txt: size 9 != 6\nRepair the files or regenerate manifest.json, then run again.`,
    );
    const human = await validate(s, ["--source", dir]);
    assert.deepEqual(human.stderr.split("\n"), [
      `error [source_invalid] Source bundle ${dir.replace("\n", "\\x0a")} failed verification (2 of 4 listed files):`,
      "  - assets/style.css: size 13 != 20",
      "  - data/a.txt: size 9 != 6",
      "Repair the files or regenerate manifest.json, then run again.",
      "",
    ]);
  });

  test("two sources planned onto one output: output_collision naming the path, exit 1", async () => {
    const s = await scenario();
    const dir = await s.bundle("colliding", { ...SITE_FILES, "index.html": "<p>hand-made</p>\n" });
    const json = await assertFails(s, "output_collision", 1, ["--source", dir]);
    assert.deepEqual(json.error?.paths, ["index.html"]);
  });

  test("Markdown that is not UTF-8: transform_failed, exit 1", async () => {
    const s = await scenario();
    const dir = await s.bundle("latin1", {
      ...SITE_FILES,
      "index.md": Buffer.from([0x23, 0x20, 0xe9, 0x74, 0xe9, 0x0a]),
    });
    const json = await assertFails(s, "transform_failed", 1, ["--source", dir]);
    assert.deepEqual(json.error?.paths, ["index.md"]);
  });

  test("several documents that cannot be rendered: all named at once, by path", async () => {
    const s = await scenario();
    const latin1 = Buffer.from([0x23, 0x20, 0xe9, 0x0a]);
    const dir = await s.bundle("latin1-many", {
      ...SITE_FILES,
      "z/last.md": latin1,
      "index.md": latin1,
      "a/first.md": latin1,
    });
    const json = await assertFails(s, "transform_failed", 1, ["--source", dir]);
    assert.deepEqual(json.error?.paths, ["a/first.md", "index.md", "z/last.md"]);
    // Named with its pipeline and bundle: several pipelines may hold the same file names.
    assert.ok(
      json.error?.message.startsWith(`Pipeline "site" (bundle ${dir}): `),
      json.error?.message,
    );
    assert.match(
      json.error?.message ?? "",
      /: markdown_to_html: 3 documents cannot be rendered: a\/first\.md is not valid UTF-8 text\. .*; index\.md is not valid/,
    );
  });

  test("an unknown config key: config_invalid naming its key path, exit 2", async () => {
    const s = await scenario((base) => {
      const spec = defaultSpec(base);
      return {
        ...spec,
        destinations: { web: { ...spec.destinations.web, workflw: "additive" } as never },
      };
    });
    const json = await assertFails(s, "config_invalid", 2);
    assert.match(json.error?.message ?? "", /destinations\.web\.workflw: unknown key/);
  });

  test("a pipeline without a source: usage, exit 2, as from run; --source supplies it", async () => {
    const s = await scenario();
    const { source: _none, ...pipeline } = defaultSpec(s.base).pipelines.site ?? {
      destinations: [],
    };
    await writeConfigSpec(s.base, { ...defaultSpec(s.base), pipelines: { site: pipeline } });
    const json = await assertFails(s, "usage", 2);
    assert.match(json.error?.message ?? "", /pipeline site has no source/);
    const fromRun = await s.runJson();
    assert.equal(fromRun.code, 2);
    assert.equal(fromRun.json.error?.code, "usage");
    assert.equal(fromRun.json.error?.message, json.error?.message);
    const given = await validate(s, ["--source", path.join(s.base, "bundle")]);
    assert.equal(given.code, 0, given.stderr);
  });
});

describe("empty option values", () => {
  test("--config '' and --source '' are usage errors, not the defaults", async () => {
    const s = await scenario();
    for (const args of [
      ["validate", "--config", ""],
      ["validate", "--config", s.config, "--source", ""],
      ["run", "--config", s.config, "--source", "", "--dry-run"],
      ["verify", "--config", ""],
    ]) {
      const { code, json } = await runCliJson<RunJson>(args);
      assert.equal(code, 2, args.join(" "));
      assert.equal(json.error?.code, "usage", JSON.stringify(json));
      assert.match(
        json.error?.message ?? "",
        /argument '' is invalid\. it must not be empty\. See/,
      );
    }
    assert.equal(await exists(s.root), false);
  });

  test("commander's own messages get one period, not two", async () => {
    const { code, json } = await runCliJson<RunJson>(["validate", "extra"]);
    assert.equal(code, 2);
    assert.match(json.error?.message ?? "", /got 1\. See 'distributor --help'\.$/);
  });
});

describe("--json as commander reads it", () => {
  test("a value or an argument after -- that reads --json does not switch the output to JSON", async () => {
    const s = await scenario();
    for (const args of [
      ["validate", "--config", "--json"],
      ["run", "--config", s.config, "--", "--json"],
    ]) {
      const { code, stdout, stderr } = await runCli(args);
      assert.equal(code, 2, args.join(" "));
      assert.equal(stdout, "", "no JSON document");
      assert.match(stderr, /^error \[(usage|config_invalid)\] /);
    }
  });
});
