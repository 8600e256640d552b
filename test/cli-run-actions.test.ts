/**
 * `distributor run` as a process: every action label a filesystem destination
 * can reach, checked through the exit code, the `--json` report, the files on
 * disk and `.distributor.json`.
 */
import assert from "node:assert/strict";
import { lstat, mkdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cleanupTempDirs, listFiles, readStateFile, sha256 } from "./helpers/fixtures.js";
import {
  changesOf,
  exists,
  fingerprint,
  hasStackTrace,
  onlyResult,
  packageVersion,
  publishedFiles,
  replacementSpec,
  SITE_FILES,
  SITE_OUTPUTS,
  scenario,
  stateOwners,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

describe("publish_new", () => {
  test("an empty root gets every planned output, a sorted state and a complete report", async () => {
    const s = await scenario();
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 0, stderr);
    assert.equal(json.ok, true);
    assert.equal(json.dry_run, false);
    assert.equal(json.distributor_version, await packageVersion());
    const result = onlyResult(json);
    assert.equal(result.pipeline_id, "site");
    assert.equal(result.destination_id, "web");
    assert.equal(result.root, s.root);
    assert.equal(result.state, "missing");
    assert.equal(result.action, "publish_new");
    const digest = sha256(await readFile(path.join(s.base, "bundle", "manifest.json")));
    assert.deepEqual(result.source, { id: "site.v1", digest, created: "2026-06-04T11:55:00Z" });
    assert.deepEqual(
      result.outputs.map((o) => o.path),
      SITE_OUTPUTS,
    );
    assert.deepEqual(result.counts, { created: 4, updated: 0, unchanged: 0, deleted: 0 });
    assert.deepEqual(result.deleted, []);
    assert.equal(result.error, null);
    for (const output of result.outputs) {
      assert.equal(output.change, "create");
      assert.equal(output.kind, output.path.endsWith(".html") ? "generated" : "source");
      assert.equal("url" in output, false, "no url without a destination url");
      const bytes = await readFile(path.join(s.root, output.path));
      assert.equal(output.sha256, sha256(bytes), output.path);
      assert.equal(output.size, bytes.byteLength, output.path);
    }
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), SITE_FILES["data/a.txt"]);
    const html = await readFile(path.join(s.root, "index.html"), "utf8");
    assert.match(html, /href="docs\/guide\.html"/);
    assert.deepEqual(await listFiles(s.root), [...SITE_OUTPUTS, ".distributor.json"].sort());
  });

  test("the state file is schema 4, sorted, with source identity and transform fields", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const text = await readFile(path.join(s.root, ".distributor.json"), "utf8");
    assert.ok(text.endsWith("}\n"), "trailing newline");
    assert.ok(text.startsWith('{\n  "schema_version": 4'), "2-space indented JSON");
    const state = await readStateFile(s.root);
    assert.equal(state.schema_version, 4);
    assert.deepEqual((state as unknown as { state: unknown }).state, { mode: "catalog" });
    assert.match(state.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(
      state.outputs.map((r) => r.path),
      SITE_OUTPUTS,
    );
    const guide = state.outputs.find((r) => r.path === "docs/guide.html");
    assert.equal(guide?.kind, "generated");
    assert.equal(guide?.source_path, "docs/guide.md");
    assert.equal(guide?.transform, "markdown_to_html");
    const css = state.outputs.find((r) => r.path === "assets/style.css");
    assert.equal(css?.kind, "source");
    assert.equal("source_path" in (css ?? {}), false);
    assert.equal("transform" in (css ?? {}), false);
    assert.equal("url" in (css ?? {}), false);
    for (const record of state.outputs) {
      assert.equal(record.pipeline_id, "site");
      assert.equal(record.destination_id, "web");
      assert.deepEqual(
        (record as { source?: { id: string } }).source?.id,
        "site.v1",
        "source identity recorded",
      );
      assert.equal(record.sha256, sha256(await readFile(path.join(s.root, record.path))));
    }
    assert.equal(await exists(path.join(s.root, ".distributor.lock")), false, "lock released");
  });

  test("a root holding only reserved .distributor.* files counts as empty", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    await writeFile(path.join(s.root, ".distributor.notes"), "tool-owned\n");
    const { code, json } = await s.runJson();
    assert.equal(code, 0, JSON.stringify(json));
    assert.equal(onlyResult(json).action, "publish_new");
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
  });
});

describe("upsert_additive", () => {
  test("writes new and changed outputs, keeps omitted ones and their records", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const v2 = await s.bundle("v2", {
      "index.md": SITE_FILES["index.md"] as string,
      "docs/guide.md": SITE_FILES["docs/guide.md"] as string,
      "data/a.txt": "alpha, revised\n",
      "data/b.txt": "beta\n",
    });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.state, "valid");
    assert.equal(result.action, "upsert_additive");
    assert.deepEqual(changesOf(result), {
      "data/a.txt": "update",
      "data/b.txt": "create",
      "docs/guide.html": "unchanged",
      "index.html": "unchanged",
    });
    assert.deepEqual(result.counts, { created: 1, updated: 1, unchanged: 2, deleted: 0 });
    assert.deepEqual(result.deleted, []);
    assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), "alpha, revised\n");
    assert.deepEqual(await publishedFiles(s.root), [
      "assets/style.css",
      "data/a.txt",
      "data/b.txt",
      "docs/guide.html",
      "index.html",
    ]);
    const state = await readStateFile(s.root);
    assert.deepEqual(
      state.outputs.map((r) => r.path),
      ["assets/style.css", "data/a.txt", "data/b.txt", "docs/guide.html", "index.html"],
    );
    const a = state.outputs.find((r) => r.path === "data/a.txt");
    assert.equal(a?.sha256, sha256("alpha, revised\n"));
    assert.equal((a?.source as { id: string } | undefined)?.id, "v2.bundle");
    const css = state.outputs.find((r) => r.path === "assets/style.css");
    assert.equal(
      (css?.source as { id: string } | undefined)?.id,
      "site.v1",
      "kept record keeps its source",
    );
  });

  test("one changed Markdown file gives exactly one update", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const v2 = await s.bundle("v2", { ...SITE_FILES, "docs/guide.md": "# Guide\n\nNew steps.\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 0);
    const result = onlyResult(json);
    assert.equal(result.action, "upsert_additive");
    assert.deepEqual(result.counts, { created: 0, updated: 1, unchanged: 3, deleted: 0 });
    assert.deepEqual(
      result.outputs.filter((o) => o.change !== "unchanged").map((o) => o.path),
      ["docs/guide.html"],
    );
    assert.match(await readFile(path.join(s.root, "docs/guide.html"), "utf8"), /New steps/);
  });
});

describe("skip_same", () => {
  test("a rerun of the same bundle writes nothing, not even the state", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const stateFile = path.join(s.root, ".distributor.json");
    const before = await fingerprint(stateFile);
    const outputMtime = (await stat(path.join(s.root, "index.html"))).mtimeMs;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const { code, json } = await s.runJson();
    assert.equal(code, 0);
    const result = onlyResult(json);
    assert.equal(result.action, "skip_same");
    assert.deepEqual(result.counts, { created: 0, updated: 0, unchanged: 4, deleted: 0 });
    assert.deepEqual(await fingerprint(stateFile), before);
    assert.equal((await stat(path.join(s.root, "index.html"))).mtimeMs, outputMtime);
    assert.deepEqual(await listFiles(s.root), [...SITE_OUTPUTS, ".distributor.json"].sort());
  });

  test("a stale temp file stays through skip_same and goes with the next run that writes", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const stale = path.join(s.root, "data", ".distributor.tmp-left-by-a-crash");
    await writeFile(stale, "partial");
    assert.equal(onlyResult((await s.runJson()).json).action, "skip_same");
    assert.equal(await exists(stale), true, "skip_same deletes nothing");
    const v2 = await s.bundle("v2", { ...SITE_FILES, "data/new.txt": "new\n" });
    assert.equal(onlyResult((await s.runJson(["--source", v2])).json).action, "upsert_additive");
    assert.equal(await exists(stale), false, "removed by the run that writes");
  });
});

describe("replace_catalog", () => {
  test("deletes omitted outputs of the same owner only and removes emptied directories", async () => {
    const s = await scenario((base) => ({
      pipelines: {
        site: { source: path.join(base, "bundle"), destinations: ["web"] },
        other: { source: path.join(base, "other"), destinations: ["web"] },
      },
      destinations: { web: { root: path.join(base, "public"), workflow: "replacement" } },
    }));
    await s.bundle("other", { "other/x.txt": "x\n", "deep/old/y.txt": "y\n" });
    assert.equal((await s.runJson(["--pipeline", "other"])).code, 0);
    const v1 = await s.bundle("v1", { ...SITE_FILES, "deep/old/z.txt": "z\n" });
    assert.equal((await s.runJson(["--pipeline", "site", "--source", v1])).code, 0);
    await writeFile(path.join(s.root, "notes.txt"), "unmanaged\n");
    const v2 = await s.bundle("v2", {
      "index.md": SITE_FILES["index.md"] as string,
      "docs/guide.md": SITE_FILES["docs/guide.md"] as string,
    });
    const { code, json } = await s.runJson(["--pipeline", "site", "--source", v2]);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.action, "replace_catalog");
    assert.deepEqual(result.deleted, ["assets/style.css", "data/a.txt", "deep/old/z.txt"]);
    assert.deepEqual(
      result.deletions.map((d) => d.reason),
      Array(3).fill("omitted by this run (replacement)"),
    );
    assert.deepEqual(result.counts, { created: 0, updated: 0, unchanged: 2, deleted: 3 });
    assert.deepEqual(await publishedFiles(s.root), [
      "deep/old/y.txt",
      "docs/guide.html",
      "index.html",
      "notes.txt",
      "other/x.txt",
    ]);
    assert.equal(await exists(path.join(s.root, "assets")), false, "emptied directory removed");
    assert.equal(await exists(path.join(s.root, "data")), false, "emptied directory removed");
    assert.deepEqual(await stateOwners(s.root), {
      "deep/old/y.txt": "other/web",
      "docs/guide.html": "site/web",
      "index.html": "site/web",
      "other/x.txt": "other/web",
    });
  });

  test("an omitted output whose file is already gone is reported deleted, with why", async () => {
    const s = await scenario(replacementSpec);
    assert.equal((await s.runJson()).code, 0);
    await rm(path.join(s.root, "data/a.txt"));
    const { "data/a.txt": _gone, ...rest } = SITE_FILES;
    const v2 = await s.bundle("v2", rest);
    const human = await s.run(["--source", v2, "--dry-run"]);
    assert.match(
      human.stdout,
      /- data\/a\.txt \(omitted by this run \(replacement\); already gone/,
    );
    for (const dryRun of [true, false]) {
      const extra = dryRun ? ["--dry-run"] : [];
      const { code, json } = await s.runJson(["--source", v2, ...extra]);
      assert.equal(code, 0, JSON.stringify(json));
      const result = onlyResult(json);
      assert.equal(result.action, "replace_catalog");
      assert.deepEqual(result.deleted, ["data/a.txt"]);
      assert.equal(result.counts.deleted, 1);
      assert.match(result.deletions[0]?.reason ?? "", /already gone from storage, record dropped/);
    }
    assert.equal("data/a.txt" in (await stateOwners(s.root)), false);
    assert.equal(onlyResult((await s.runJson(["--source", v2])).json).action, "skip_same");
  });

  test("a file of ours that becomes a folder, and a folder that becomes a file", async () => {
    const s = await scenario(replacementSpec);
    const v1 = await s.bundle("v1", {
      guide: "the guide\n",
      "notes/a.txt": "a\n",
      "notes/b/c.txt": "c\n",
    });
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    const v2 = await s.bundle("v2", { "guide/index.md": "# Guide\n", notes: "now a file\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.action, "replace_catalog");
    assert.deepEqual(result.deleted, ["guide", "notes/a.txt", "notes/b/c.txt"]);
    assert.deepEqual(await publishedFiles(s.root), ["guide/index.html", "notes"]);
    assert.equal(await readFile(path.join(s.root, "notes"), "utf8"), "now a file\n");
    assert.deepEqual(Object.keys(await stateOwners(s.root)).sort(), ["guide/index.html", "notes"]);
    assert.equal(onlyResult((await s.runJson(["--source", v2])).json).action, "skip_same");
  });
});

describe("two owners in one root", () => {
  test("additive keeps the other owner's records and takes over a path it records", async () => {
    const s = await scenario((base) => ({
      pipelines: {
        site: { source: path.join(base, "bundle"), destinations: ["web"] },
        other: { source: path.join(base, "other"), destinations: ["web"] },
      },
      destinations: { web: { root: path.join(base, "public") } },
    }));
    await s.bundle("other", { "index.html": "<p>other</p>\n", "other.txt": "mine\n" });
    const first = await s.runJson(["--pipeline", "other"]);
    assert.equal(onlyResult(first.json).action, "publish_new");
    const { code, json } = await s.runJson(["--pipeline", "site"]);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.action, "upsert_additive");
    assert.deepEqual(changesOf(result), {
      "assets/style.css": "create",
      "data/a.txt": "create",
      "docs/guide.html": "create",
      "index.html": "update",
    });
    assert.deepEqual(await stateOwners(s.root), {
      "assets/style.css": "site/web",
      "data/a.txt": "site/web",
      "docs/guide.html": "site/web",
      "index.html": "site/web",
      "other.txt": "other/web",
    });
    assert.match(await readFile(path.join(s.root, "index.html"), "utf8"), /<!doctype html>/i);
    assert.equal(await readFile(path.join(s.root, "other.txt"), "utf8"), "mine\n");
  });
});

describe("legacy state", () => {
  test("schema_version 2 is published over; the new state holds only this run", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    await writeFile(
      path.join(s.root, ".distributor.json"),
      `${JSON.stringify({ schema_version: 2, files: ["old.txt", "index.html"] })}\n`,
    );
    await writeFile(path.join(s.root, "old.txt"), "from an old version\n");
    await writeFile(path.join(s.root, "index.html"), "old index\n");
    const { code, json } = await s.runJson();
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.state, "legacy");
    assert.equal(result.action, "upsert_additive");
    assert.equal(result.error, null);
    const state = await readStateFile(s.root);
    assert.equal(state.schema_version, 4);
    assert.deepEqual(
      state.outputs.map((r) => r.path),
      SITE_OUTPUTS,
    );
    assert.equal(await readFile(path.join(s.root, "old.txt"), "utf8"), "from an old version\n");
    assert.notEqual(await readFile(path.join(s.root, "index.html"), "utf8"), "old index\n");
  });
});

describe("force_replace", () => {
  async function messyRoot() {
    const s = await scenario((base) => ({
      pipelines: {
        site: { source: path.join(base, "bundle"), destinations: ["web"] },
        other: { source: path.join(base, "other"), destinations: ["web"] },
      },
      destinations: { web: { root: path.join(base, "public") } },
    }));
    await s.bundle("other", { "o/keep.txt": "other\n" });
    assert.equal((await s.runJson(["--pipeline", "other"])).code, 0);
    await writeFile(path.join(s.root, "stray.txt"), "unmanaged\n");
    await writeFile(path.join(s.root, "index.html"), "unmanaged at a planned path\n");
    return s;
  }

  test("without --pipeline and --destination it is a usage error (exit 2)", async () => {
    const s = await messyRoot();
    for (const extra of [[], ["--pipeline", "site"], ["--destination", "web"]]) {
      const { code, json, stderr } = await s.runJson(["--force", ...extra]);
      assert.equal(code, 2, `${extra.join(" ")}: ${stderr}`);
      assert.deepEqual(Object.keys(json), ["ok", "error"]);
      assert.equal(json.error?.code, "usage");
      assert.match(json.error?.message ?? "", /--pipeline/);
    }
    assert.deepEqual(await publishedFiles(s.root), ["index.html", "o/keep.txt", "stray.txt"]);
  });

  test("dry run lists what would be deleted and deletes nothing", async () => {
    const s = await messyRoot();
    const before = await listFiles(s.root);
    const args = ["--force", "--pipeline", "site", "--destination", "web", "--dry-run"];
    const { code, json } = await s.runJson(args);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.action, "force_replace");
    assert.deepEqual(result.deleted, ["index.html", "o/keep.txt", "stray.txt"]);
    assert.deepEqual(await listFiles(s.root), before);
    const human = await s.run(args);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /would/);
  });

  test("deletes unmanaged files and other owners, then writes a fresh state", async () => {
    const s = await messyRoot();
    const { code, json } = await s.runJson([
      "--force",
      "--pipeline",
      "site",
      "--destination",
      "web",
    ]);
    assert.equal(code, 0, JSON.stringify(json));
    const result = onlyResult(json);
    assert.equal(result.action, "force_replace");
    assert.deepEqual(result.counts, { created: 4, updated: 0, unchanged: 0, deleted: 3 });
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
    assert.equal(await exists(path.join(s.root, "o")), false);
    const owners = await stateOwners(s.root);
    assert.deepEqual(Object.keys(owners), SITE_OUTPUTS);
    assert.ok(Object.values(owners).every((owner) => owner === "site/web"));
  });
});

describe("fail_unmanaged", () => {
  test("missing state and a non-empty root: exit 1, unmanaged_path, nothing written", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    await writeFile(path.join(s.root, "stray.txt"), "hand-made\n");
    const { code, json } = await s.runJson();
    assert.equal(code, 1);
    assert.equal(json.ok, false);
    const result = onlyResult(json);
    assert.equal(result.state, "missing");
    assert.equal(result.action, "fail_unmanaged");
    assert.equal(result.error?.code, "unmanaged_path");
    assert.ok(result.error?.paths.includes("stray.txt"), JSON.stringify(result.error));
    assert.deepEqual(await listFiles(s.root), ["stray.txt"]);
  });

  test("a root holding only a name that is not UTF-8 is not empty: fail_unmanaged, nothing written", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    // 0xFE is never valid UTF-8; readdir hands such a name back as U+FFFD.
    const name = Buffer.concat([Buffer.from(`${s.root}/kept-`), Buffer.from([0xfe])]);
    await writeFile(name, "hand-made\n");
    const { code, json } = await s.runJson();
    assert.equal(code, 1);
    const result = onlyResult(json);
    assert.equal(result.action, "fail_unmanaged");
    assert.ok(result.error?.paths.includes("kept-\uFFFD"), JSON.stringify(result.error));
    assert.equal(await readFile(name, "utf8"), "hand-made\n");
    assert.deepEqual(await listFiles(s.root), ["kept-\uFFFD"], "nothing written beside it");
    // --force reaches it by its bytes, and a folder of such a name with all it holds.
    const folder = Buffer.concat([Buffer.from(`${s.root}/sub/d`), Buffer.from([0xfe])]);
    await mkdir(folder, { recursive: true });
    await writeFile(Buffer.concat([folder, Buffer.from("/inside.txt")]), "x");
    const forced = await s.runJson(["--force", "--pipeline", "site", "--destination", "web"]);
    assert.equal(forced.code, 0, JSON.stringify(forced.json));
    assert.deepEqual(onlyResult(forced.json).deleted, ["kept-\uFFFD", "sub/d\uFFFD"]);
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS, "emptied, then published");
  });

  test("--force empties a root of names no output can have: a backslash, a newline, a tab", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "tab\tdir"), { recursive: true });
    await writeFile(path.join(s.root, "back\\slash"), "x");
    await writeFile(path.join(s.root, "new\nline"), "y");
    await writeFile(path.join(s.root, "tab\tdir", "f"), "z");
    const plain = await s.runJson();
    assert.equal(onlyResult(plain.json).action, "fail_unmanaged");
    const forced = await s.runJson(["--force", "--pipeline", "site", "--destination", "web"]);
    assert.equal(forced.code, 0, JSON.stringify(forced.json));
    assert.deepEqual(onlyResult(forced.json).deleted, ["back\\slash", "new\nline", "tab\tdir/f"]);
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
  });

  test("an unrecorded file at a planned path stops every pair of the run", async () => {
    const s = await scenario((base) => ({
      pipelines: {
        site: { source: path.join(base, "bundle"), destinations: ["web", "mirror"] },
        other: { source: path.join(base, "other"), destinations: ["web"] },
      },
      destinations: {
        web: { root: path.join(base, "public") },
        mirror: { root: path.join(base, "mirror") },
      },
    }));
    await s.bundle("other", { "other.txt": "o\n" });
    assert.equal((await s.runJson(["--pipeline", "other"])).code, 0);
    await writeFile(path.join(s.root, "index.html"), "hand-made\n");
    const stateBefore = await fingerprint(path.join(s.root, ".distributor.json"));
    const { code, json } = await s.runJson(["--pipeline", "site"]);
    assert.equal(code, 1);
    assert.equal(json.ok, false);
    const [web, mirror] = json.results ?? [];
    assert.equal(web?.action, "fail_unmanaged");
    assert.equal(web?.error?.code, "unmanaged_path");
    assert.deepEqual(web?.error?.paths, ["index.html"]);
    assert.equal(mirror?.destination_id, "mirror");
    assert.equal(mirror?.action, "publish_new");
    assert.deepEqual(await listFiles(path.join(s.base, "mirror")), [], "other pair not written");
    assert.deepEqual(await publishedFiles(s.root), ["index.html", "other.txt"]);
    assert.equal(await readFile(path.join(s.root, "index.html"), "utf8"), "hand-made\n");
    assert.deepEqual(await fingerprint(path.join(s.root, ".distributor.json")), stateBefore);
    const human = await s.run(["--pipeline", "site"]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /Nothing was written/);
    assert.equal(hasStackTrace(human.stdout + human.stderr), false);
  });
});

describe("fail_conflict", () => {
  const cases: { name: string; state: string; setup?: "symlink"; class: string }[] = [
    { name: "invalid JSON", state: "{ not json", class: "invalid" },
    {
      name: "unsupported schema_version 5",
      state: '{"schema_version": 5, "outputs": []}\n',
      class: "unsupported",
    },
    { name: "a symlink", state: "", setup: "symlink", class: "invalid" },
  ];
  for (const c of cases) {
    test(`state that is ${c.name}: exit 1, state_conflict, nothing written`, async () => {
      const s = await scenario();
      assert.equal((await s.runJson()).code, 0);
      const stateFile = path.join(s.root, ".distributor.json");
      if (c.setup === "symlink") {
        const elsewhere = path.join(s.base, "real-state.json");
        await writeFile(elsewhere, await readFile(stateFile));
        await rm(stateFile);
        await symlink(elsewhere, stateFile);
      } else {
        await writeFile(stateFile, c.state);
      }
      const before = await listFiles(s.root);
      const v2 = await s.bundle("v2", { ...SITE_FILES, "data/a.txt": "changed\n" });
      const { code, json } = await s.runJson(["--source", v2]);
      assert.equal(code, 1);
      const result = onlyResult(json);
      assert.equal(result.state, c.class);
      assert.equal(result.action, "fail_conflict");
      assert.equal(result.error?.code, "state_conflict");
      assert.match(result.error?.message ?? "", /--force|force/);
      assert.deepEqual(await listFiles(s.root), before);
      assert.equal(await readFile(path.join(s.root, "data/a.txt"), "utf8"), "alpha\n");
      if (c.setup !== "symlink") assert.equal(await readFile(stateFile, "utf8"), c.state);
      else assert.ok((await lstat(stateFile)).isSymbolicLink());
    });
  }
});
