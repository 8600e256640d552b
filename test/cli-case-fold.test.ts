/**
 * `distributor run` on a root that folds case. This machine's filesystems do
 * not (no casefold support in its kernel), so the root is made to answer the
 * driver's probe as one would: `.DISTRIBUTOR.JSON` is a hard link to the
 * state, i.e. the upper-case name finds the same file. The planner then
 * treats names that differ only by case as one, which is what the tests check
 * through the process: exit code, report, and an untouched root.
 */
import assert from "node:assert/strict";
import { link, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cleanupTempDirs, listFiles } from "./helpers/fixtures.js";
import { onlyResult, replacementSpec, scenario } from "./helpers/scenario.js";

after(cleanupTempDirs);

/** Every file under `root` with its content, to prove a refused run wrote nothing. */
async function contents(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const file of await listFiles(root))
    out[file] = await readFile(path.join(root, file), "utf8");
  return out;
}

async function foldingRoot(root: string): Promise<void> {
  await link(path.join(root, ".distributor.json"), path.join(root, ".DISTRIBUTOR.JSON"));
}

describe("run on a root that folds case", () => {
  test("a case-only rename under replacement is refused, and nothing is written or deleted", async () => {
    const s = await scenario(replacementSpec);
    const v1 = await s.bundle("v1", { "Guide.md": "# Guide\n" });
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    await foldingRoot(s.root);
    const before = await contents(s.root);
    const v2 = await s.bundle("v2", { "guide.md": "# Guide\n\nRenamed.\n" });
    const { code, json, stderr } = await s.runJson(["--source", v2]);
    assert.equal(code, 1, stderr);
    const result = onlyResult(json);
    assert.equal(result.action, "fail_unmanaged");
    assert.equal(result.error?.code, "unmanaged_path");
    assert.deepEqual(result.error?.paths, ["Guide.html", "guide.html"]);
    assert.match(
      result.error?.message ?? "",
      /Guide\.html \(to be deleted, in storage, recorded\) and guide\.html \(planned\)/,
    );
    assert.deepEqual(await contents(s.root), before);

    // The remedy the message gives: publish once without it, then with the new name.
    const without = await s.bundle("without", { "other.md": "# Other\n" });
    await rm(path.join(s.root, ".DISTRIBUTOR.JSON"));
    await foldingRoot(s.root);
    assert.equal((await s.runJson(["--source", without])).code, 0);
    await rm(path.join(s.root, ".DISTRIBUTOR.JSON"));
    await foldingRoot(s.root); // the state was replaced: link the new one
    const renamed = await s.runJson(["--source", v2]);
    assert.equal(renamed.code, 0, renamed.stderr);
    assert.deepEqual(
      (await listFiles(s.root)).filter((file) => !file.toLowerCase().startsWith(".distributor")),
      ["guide.html"],
    );
  });

  test("an unmanaged file that differs only by case is not overwritten", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    await writeFile(path.join(s.root, "NOTES.TXT"), "someone else's\n");
    await foldingRoot(s.root);
    const before = await contents(s.root);
    const v2 = await s.bundle("v2", { "notes.txt": "ours\n" });
    const { code, json, stderr } = await s.runJson(["--source", v2]);
    assert.equal(code, 1, stderr);
    assert.equal(onlyResult(json).error?.code, "unmanaged_path");
    assert.deepEqual(onlyResult(json).error?.paths, ["NOTES.TXT", "notes.txt"]);
    assert.match(onlyResult(json).error?.message ?? "", /only by case/);
    assert.deepEqual(await contents(s.root), before);
  });
});
