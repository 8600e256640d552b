/**
 * `distributor run` as a process against directories where files belong: an
 * empty directory at a planned or recorded path, and a state path that is a
 * directory. A dry run must show the refusal the real run gives, the real run
 * must refuse before writing anything, and `--force` must clear all of it.
 */
import assert from "node:assert/strict";
import { lstat, mkdir, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import {
  cleanupTempDirs,
  listDirectories,
  listFiles,
  readStateFile,
  runCli,
} from "./helpers/fixtures.js";
import {
  exists,
  onlyResult,
  publishedFiles,
  replacementSpec,
  SITE_OUTPUTS,
  scenario,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

const FORCE = ["--force", "--pipeline", "site", "--destination", "web"];

describe("empty directories", () => {
  test("one at a planned path is refused by the dry run and the run alike, nothing written", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "index.html"), { recursive: true });
    for (const extra of [["--dry-run"], []]) {
      const { code, json } = await s.runJson(extra);
      assert.equal(code, 1, extra.join(" "));
      const result = onlyResult(json);
      assert.equal(result.action, "fail_unmanaged");
      assert.equal(result.error?.code, "unmanaged_path");
      assert.deepEqual(result.error?.paths, ["index.html"]);
      assert.match(result.error?.message ?? "", /index\.html \(a directory\)/);
    }
    assert.deepEqual(await listFiles(s.root), [], "no state, no output");
  });

  test("a folder holding only a nested root's lock at a planned path is refused too", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "index.html", "sub"), { recursive: true });
    await writeFile(path.join(s.root, "index.html", "sub", ".distributor.lock"), "{}\n");
    for (const extra of [["--dry-run"], []]) {
      const { code, json } = await s.runJson(extra);
      assert.equal(code, 1, extra.join(" "));
      assert.equal(onlyResult(json).action, "fail_unmanaged");
      assert.deepEqual(onlyResult(json).error?.paths, ["index.html"]);
    }
    assert.deepEqual(await listFiles(s.root), ["index.html/sub/.distributor.lock"]);
  });

  test("empty directories elsewhere are no content: the root still gets publish_new", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "uploads", "2026"), { recursive: true });
    const { code, json } = await s.runJson();
    assert.equal(code, 0, JSON.stringify(json));
    assert.equal(onlyResult(json).action, "publish_new");
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
  });

  test("one where a recorded output was is refused, not half-applied; --force clears it", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const stateBefore = await readStateFile(s.root);
    await rm(path.join(s.root, "index.html"));
    await mkdir(path.join(s.root, "index.html"));
    const { code, json } = await s.runJson();
    assert.equal(code, 1);
    const result = onlyResult(json);
    assert.equal(result.action, "fail_unmanaged");
    assert.deepEqual(result.error?.paths, ["index.html"]);
    assert.deepEqual(await readStateFile(s.root), stateBefore, "state untouched");

    const forced = await s.runJson(FORCE);
    assert.equal(forced.code, 0, JSON.stringify(forced.json));
    assert.ok((await lstat(path.join(s.root, "index.html"))).isFile());
    assert.equal(onlyResult((await s.runJson()).json).action, "skip_same");
  });
});

describe("a folder of ours that a killed run emptied", () => {
  /**
   * Publishes keep.txt, docs/a.txt and docs/sub/b.txt (replacement), then
   * leaves what a run killed after deleting the docs files, before removing
   * their folders, leaves: the records still there, the folders empty.
   */
  async function emptiedByAKill() {
    const s = await scenario(replacementSpec);
    const v1 = await s.bundle("v1", {
      "keep.txt": "k\n",
      "docs/a.txt": "a\n",
      "docs/sub/b.txt": "b\n",
    });
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    await rm(path.join(s.root, "docs/a.txt"));
    await rm(path.join(s.root, "docs/sub/b.txt"));
    return s;
  }

  test("is cleared for the file that replaces it: the plain rerun converges", async () => {
    const s = await emptiedByAKill();
    const v2 = await s.bundle("v2", { "keep.txt": "k\n", docs: "now a file\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 0, JSON.stringify(json));
    assert.equal(onlyResult(json).action, "replace_catalog");
    assert.ok((await lstat(path.join(s.root, "docs"))).isFile());
    assert.deepEqual(await listFiles(s.root), [".distributor.json", "docs", "keep.txt"]);
    assert.equal(onlyResult((await s.runJson(["--source", v2])).json).action, "skip_same");
  });

  test("a rerun after a kill between deleting omitted files and their folders removes the folders", async () => {
    const s = await emptiedByAKill();
    const v2 = await s.bundle("v2", { "keep.txt": "k\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 0, JSON.stringify(json));
    assert.deepEqual(onlyResult(json).deleted, ["docs/a.txt", "docs/sub/b.txt"]);
    assert.deepEqual(await listFiles(s.root), [".distributor.json", "keep.txt"]);
    assert.equal(await exists(path.join(s.root, "docs")), false, "the emptied folders are gone");
  });

  test("a folder holding a nested root's files is never cleared, nothing is deleted", async () => {
    const s = await scenario(replacementSpec);
    const v1 = await s.bundle("v1", { "keep.txt": "k\n", "docs/a.txt": "a\n" });
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    await writeFile(path.join(s.root, "docs", ".distributor.json"), "{}\n");
    const v2 = await s.bundle("v2", { "keep.txt": "k\n", docs: "a file\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 1);
    const result = onlyResult(json);
    assert.equal(result.action, "fail_unmanaged");
    assert.match(result.error?.message ?? "", /docs \(a directory holding another root's/);
    assert.deepEqual(await listFiles(path.join(s.root, "docs")), [".distributor.json", "a.txt"]);
  });

  test("an empty folder where no omitted record lies still blocks the file", async () => {
    const s = await scenario(replacementSpec);
    const v1 = await s.bundle("v1", { "keep.txt": "k\n" });
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    await mkdir(path.join(s.root, "docs", "sub"), { recursive: true });
    const v2 = await s.bundle("v2", { "keep.txt": "k\n", docs: "a file\n" });
    const { code, json } = await s.runJson(["--source", v2]);
    assert.equal(code, 1);
    assert.equal(onlyResult(json).action, "fail_unmanaged");
    assert.ok((await lstat(path.join(s.root, "docs", "sub"))).isDirectory());
  });
});

describe("a state path that is a directory", () => {
  for (const holds of ["nothing", "a file"]) {
    test(`holding ${holds}: invalid state, fail_conflict; --force replaces it`, async () => {
      const s = await scenario();
      const folder = path.join(s.root, ".distributor.json");
      await mkdir(folder, { recursive: true });
      if (holds === "a file") await writeFile(path.join(folder, "x"), "x\n");
      for (const extra of [["--dry-run"], []]) {
        const { code, json } = await s.runJson(extra);
        assert.equal(code, 1, extra.join(" "));
        const result = onlyResult(json);
        assert.equal(result.state, "invalid");
        assert.equal(result.action, "fail_conflict");
        assert.equal(result.error?.code, "state_conflict");
      }
      const forced = await s.runJson(FORCE);
      assert.equal(forced.code, 0, JSON.stringify(forced.json));
      assert.ok((await lstat(folder)).isFile(), "a fresh state file");
      assert.equal(onlyResult((await s.runJson()).json).action, "skip_same");
    });
  }
});

describe("force_replace", () => {
  test("empties the root, empty directories included, and reports what it deleted", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "empty", "deeper"), { recursive: true });
    await writeFile(path.join(s.root, "stray.txt"), "unmanaged\n");
    // A name with a .distributor. segment is the tool's (or a nested root's): kept.
    await mkdir(path.join(s.root, ".distributor.keep"), { recursive: true });
    await writeFile(path.join(s.root, ".distributor.keep", "f"), "tool-looking\n");
    const { code, json } = await s.runJson(FORCE);
    assert.equal(code, 0, JSON.stringify(json));
    assert.deepEqual(onlyResult(json).deleted, ["empty/deeper", "stray.txt"]);
    assert.deepEqual(
      await listFiles(s.root),
      [...SITE_OUTPUTS, ".distributor.json", ".distributor.keep/f"].sort(),
    );
    assert.deepEqual(await listDirectories(s.root), [
      ".distributor.keep",
      "assets",
      "data",
      "docs",
    ]);
  });

  test("refuses, before deleting anything, a planned file where a nested root is kept", async () => {
    const s = await scenario();
    await mkdir(path.join(s.root, "index.html"), { recursive: true });
    await writeFile(path.join(s.root, "index.html", ".distributor.json"), "{}\n");
    await writeFile(path.join(s.root, "stray.txt"), "unmanaged\n");
    const { code, json } = await s.runJson(FORCE);
    assert.equal(code, 1);
    const result = onlyResult(json);
    assert.equal(result.action, "fail_unmanaged");
    assert.deepEqual(result.error?.paths, ["index.html"]);
    assert.match(result.error?.message ?? "", /publish this pipeline to another path/);
    assert.match(
      result.error?.message ?? "",
      /no longer in use .* delete its \.distributor\.\* files by hand/,
    );
    assert.deepEqual(await listFiles(s.root), ["index.html/.distributor.json", "stray.txt"]);
  });

  test("leaves a nested root's lock and state: another run may hold that lock", async () => {
    const s = await scenario();
    const nested = path.join(s.root, "sub");
    await mkdir(nested, { recursive: true });
    const holder = { hostname: hostname(), pid: process.pid, started_at: "2026-06-04T12:00:00Z" };
    await writeFile(path.join(nested, ".distributor.lock"), JSON.stringify(holder));
    await writeFile(path.join(nested, ".distributor.json"), "{}\n");
    await writeFile(path.join(nested, "page.html"), "nested output\n");
    const { code, json } = await s.runJson(FORCE);
    assert.equal(code, 0, JSON.stringify(json));
    assert.deepEqual(await listFiles(nested), [".distributor.json", ".distributor.lock"]);
  });
});

describe("roots that do not exist yet", () => {
  test("a run that writes nothing leaves no directory behind", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web", "fresh"] } },
      destinations: {
        web: { root: path.join(base, "public") },
        fresh: { root: path.join(base, "new", "deep") },
      },
    }));
    await mkdir(s.root, { recursive: true });
    await writeFile(path.join(s.root, "index.html"), "hand-made\n");
    const { code, json } = await s.runJson();
    assert.equal(code, 1);
    const actions = (json.results ?? []).map((result) => result.action);
    assert.deepEqual(actions, ["fail_unmanaged", "publish_new"]);
    assert.equal(await exists(path.join(s.base, "new")), false, "the lock's folders are gone");

    const repair = await runCli(
      ["reconcile-state", "--config", s.config, "--pipeline", "site", "--destination", "fresh"],
      { cwd: s.base },
    );
    assert.equal(repair.code, 1, repair.stderr);
    assert.match(repair.stderr, /no_state/);
    assert.equal(await exists(path.join(s.base, "new")), false);
  });

  test("a run that publishes keeps the root it made", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "new", "deep") } },
    }));
    assert.equal((await s.runJson()).code, 0);
    assert.deepEqual(await publishedFiles(path.join(s.base, "new", "deep")), SITE_OUTPUTS);
  });
});
