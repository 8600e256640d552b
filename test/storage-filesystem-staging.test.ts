/**
 * New folders are written whole (_fs-staging.ts): the filesystem driver's
 * `beginWrites` writes the files of a folder that does not exist yet into a
 * temporary folder beside it, which `commit` renames into place.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { applyPlan } from "../src/execution/apply-plan.js";
import type { OutputContent } from "../src/model.js";
import { TEMP_PREFIX } from "../src/paths.js";
import { canPinFolders } from "../src/storage/_fs-pinned.js";
import { writeSmallSync } from "../src/storage/_fs-write.js";
import type { StorageDriver, WriteBatch } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";
import { cleanupTempDirs, readStateFile } from "./helpers/fixtures.js";
import { planOnly } from "./helpers/plan-apply.js";
import { exists, onlyResult, publishedFiles, SITE_OUTPUTS, scenario } from "./helpers/scenario.js";
import { rejectsWithCode } from "./storage-conformance.js";

after(cleanupTempDirs);

const bytes = (text: string) => ({ type: "bytes" as const, bytes: new TextEncoder().encode(text) });

/** Every path under `dir` with a temporary name in any segment. */
async function tempPathsUnder(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return names.filter((name) => name.split(path.sep).some((part) => part.startsWith(TEMP_PREFIX)));
}

async function withRoot(body: (root: string, driver: StorageDriver) => Promise<void>) {
  const base = await mkdtemp(path.join(os.tmpdir(), "distributor-staging-"));
  const root = path.join(base, "root");
  await mkdir(path.join(root, "old"), { recursive: true });
  await writeFile(path.join(root, "old", "keep.txt"), "kept\n");
  try {
    await body(root, createFilesystemDriver({ root }));
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

/** One write through the batch's writeAll. */
function writeOne(batch: WriteBatch, relPath: string, content: OutputContent): Promise<void> {
  return batch.writeAll([{ path: relPath, content }]);
}

async function begin(driver: StorageDriver, paths: readonly string[]): Promise<WriteBatch> {
  assert.ok(driver.beginWrites, "the filesystem driver writes in batches");
  return driver.beginWrites(paths);
}

describe("filesystem driver: new folders are written whole", () => {
  it("a new folder appears on commit, with every file", () =>
    withRoot(async (root, driver) => {
      // Enough files that the write threads take part (_fs-write-pool.ts).
      const fresh = Array.from({ length: 300 }, (_, i) => `new/d${i % 7}/f${i}.txt`);
      const inOld = ["old/c.txt", "old/sub/d.txt", "top.txt"];
      // Larger than a small write (_fs-write.ts): a temp file and rename inside the temp folder.
      const large = "new/d0/large.txt";
      const paths = [...fresh, ...inOld, large];
      const text = (p: string) => (p === large ? p.repeat(30_000) : p);
      const batch = await begin(driver, paths);
      const written: number[] = [];
      await batch.writeAll(
        paths.map((p) => ({ path: p, content: bytes(text(p)) })),
        (index) => written.push(index),
      );
      assert.deepEqual(
        written.sort((a, b) => a - b),
        paths.map((_, i) => i),
        "each write reported once",
      );

      // Before the commit: files in existing folders are in place, new folders are not.
      assert.equal(await exists(path.join(root, "new")), false);
      assert.equal(await exists(path.join(root, "old", "sub")), false);
      assert.equal(await readFile(path.join(root, "old", "c.txt"), "utf8"), "old/c.txt");
      assert.equal(await readFile(path.join(root, "top.txt"), "utf8"), "top.txt");
      const staged = (await readdir(root)).filter((name) => name.startsWith(TEMP_PREFIX));
      assert.equal(staged.length, 1, "one temporary folder at the top, for new/");
      const stagedFiles = await readdir(path.join(root, staged[0] as string), { recursive: true });
      assert.ok(
        stagedFiles.includes(path.join("new", "d0", "f0.txt")),
        "files under their own names",
      );
      assert.equal(stagedFiles.filter((name) => name.includes(TEMP_PREFIX)).length, 0);
      const oldStaged = (await readdir(path.join(root, "old"))).filter((n) =>
        n.startsWith(TEMP_PREFIX),
      );
      assert.equal(oldStaged.length, 1, "old/sub/ is staged beside it, in old/");

      await batch.commit();
      for (const p of paths) {
        const stored = await driver.read(p);
        assert.equal(new TextDecoder().decode(stored?.bytes), text(p));
      }
      assert.equal(await readFile(path.join(root, "old", "keep.txt"), "utf8"), "kept\n");
      assert.deepEqual(await tempPathsUnder(root), []);
    }));

  it("discard removes what was staged and keeps what was written in place", () =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["new/a.txt", "new/b/c.txt", "old/d.txt"]);
      await writeOne(batch, "new/a.txt", bytes("a"));
      await writeOne(batch, "old/d.txt", bytes("d"));
      await batch.discard();
      assert.deepEqual(await tempPathsUnder(root), []);
      assert.equal(await exists(path.join(root, "new")), false);
      assert.equal(await readFile(path.join(root, "old", "d.txt"), "utf8"), "d");
    }));

  it("a folder that appeared meanwhile is not replaced", () =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["new/a.txt"]);
      await writeOne(batch, "new/a.txt", bytes("a"));
      await mkdir(path.join(root, "new"));
      await writeFile(path.join(root, "new", "theirs.txt"), "theirs\n");
      const error = await rejectsWithCode(batch.commit(), "storage_error");
      assert.match(error.message, /appeared/);
      await batch.discard();
      assert.deepEqual(await readdir(path.join(root, "new")), ["theirs.txt"]);
      assert.equal(await readFile(path.join(root, "new", "theirs.txt"), "utf8"), "theirs\n");
      assert.deepEqual(await tempPathsUnder(root), []);
    }));

  it("nor is an empty one (a rename would replace it without a word)", () =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["other/b.txt"]);
      await writeOne(batch, "other/b.txt", bytes("b"));
      await mkdir(path.join(root, "other"));
      const error = await rejectsWithCode(batch.commit(), "storage_error");
      assert.match(error.message, /appeared/);
      await batch.discard();
      assert.deepEqual(await readdir(path.join(root, "other")), []);
      assert.deepEqual(await tempPathsUnder(root), []);
    }));

  it("nor is one filled between making it and the rename: it is said to have appeared", (t) =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["late/a.txt"]);
      await writeOne(batch, "late/a.txt", bytes("a"));
      // Something writes into the folder the commit has just made, before
      // the rename: the rename then fails (ENOTEMPTY).
      const realRename = fs.renameSync;
      t.after(() => {
        fs.renameSync = realRename;
        syncBuiltinESMExports();
      });
      fs.renameSync = (from: fs.PathLike, to: fs.PathLike) => {
        // On Linux the rename names the folder through its open parent (_fs-pinned.ts).
        if (path.basename(String(to)) === "late") {
          fs.writeFileSync(path.join(root, "late", "theirs.txt"), "theirs\n");
        }
        realRename(from, to);
      };
      syncBuiltinESMExports();
      const error = await rejectsWithCode(batch.commit(), "storage_error");
      assert.match(error.message, /something appeared there while this run wrote it/);
      fs.renameSync = realRename;
      syncBuiltinESMExports();
      await batch.discard();
      assert.deepEqual(await readdir(path.join(root, "late")), ["theirs.txt"]);
      assert.deepEqual(await tempPathsUnder(root), []);
    }));

  it("a rename that fails leaves no folder made for it, and the run stops", () =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["new/a.txt"]);
      await writeOne(batch, "new/a.txt", bytes("a"));
      const staged = (await readdir(root)).filter((name) => name.startsWith(TEMP_PREFIX));
      assert.equal(staged.length, 1);
      // The temporary folder is gone (say, removed by hand): the rename cannot happen.
      await rm(path.join(root, staged[0] as string), { recursive: true });
      await rejectsWithCode(batch.commit(), "storage_error");
      assert.equal(await exists(path.join(root, "new")), false, "the folder made first went again");
    }));

  it("a temporary folder swapped for a symlink takes no more writes", () =>
    withRoot(async (root, driver) => {
      const outside = path.join(path.dirname(root), "outside");
      await mkdir(outside);
      const batch = await begin(driver, ["new/a/x.txt", "new/b/y.txt"]);
      await writeOne(batch, "new/a/x.txt", bytes("x"));
      const staged = (await readdir(root)).find((name) => name.startsWith(TEMP_PREFIX)) as string;
      await rm(path.join(root, staged), { recursive: true });
      await symlink(outside, path.join(root, staged));
      // Where the write would land through the link, had it not been checked.
      await mkdir(path.join(outside, "b"));
      await assert.rejects(writeOne(batch, "new/b/y.txt", bytes("y")));
      assert.deepEqual(await readdir(outside), ["b"]);
      assert.deepEqual(await readdir(path.join(outside, "b")), []);
      await rejectsWithCode(batch.commit(), "storage_error");
      assert.equal(await exists(path.join(root, "new")), false);
      assert.deepEqual(await readdir(path.join(outside, "b")), []);
    }));

  it("a temporary folder renamed away and replaced by a link: its writes and its commit never follow the link", () =>
    withRoot(async (root, driver) => {
      // Someone who can write to the root moves the temporary folder away
      // and puts a link to a folder outside in its place. Where folders
      // are held open (Linux) the writes go on into the folder moved, and
      // the commit renames what they wrote into place from there; elsewhere
      // the writes and the commit are refused (the link is checked).
      const outside = path.join(path.dirname(root), "outside");
      await mkdir(path.join(outside, "new", "a"), { recursive: true });
      await writeFile(path.join(outside, "new", "a", "x.txt"), "not ours\n");
      const batch = await begin(driver, ["new/a/x.txt", "new/b.txt"]);
      const staged = (await readdir(root)).find((name) => name.startsWith(TEMP_PREFIX)) as string;
      await fs.promises.rename(path.join(root, staged), path.join(root, "moved"));
      await symlink(outside, path.join(root, staged));
      const writes = batch.writeAll([
        { path: "new/a/x.txt", content: bytes("x") },
        { path: "new/b.txt", content: bytes("b") },
      ]);
      if (canPinFolders) {
        await writes;
        await batch.commit();
        assert.equal(await readFile(path.join(root, "new", "a", "x.txt"), "utf8"), "x");
        assert.equal(await readFile(path.join(root, "new", "b.txt"), "utf8"), "b");
        assert.deepEqual(
          await readdir(path.join(root, "moved")),
          [],
          "only its empty shell is left",
        );
      } else {
        await assert.rejects(writes);
        await rejectsWithCode(batch.commit(), "storage_error");
        await batch.discard();
        assert.equal(await exists(path.join(root, "new")), false, "the link is not put in place");
      }
      assert.deepEqual(await readdir(outside), ["new"]);
      assert.deepEqual(await readdir(path.join(outside, "new")), ["a"]);
      assert.equal(await readFile(path.join(outside, "new", "a", "x.txt"), "utf8"), "not ours\n");
    }));

  it(
    "a folder of someone else's put at the temporary name is neither published nor emptied",
    {
      skip: !canPinFolders && "temporary folders are held open on Linux only",
    },
    () =>
      withRoot(async (root, driver) => {
        // Their folder holds a link to a folder outside: a removal by path
        // that went through their folder, with a folder in it swapped for a
        // link mid-way, emptied that outside folder (a review reproduced it).
        const outside = path.join(path.dirname(root), "outside");
        await mkdir(outside);
        await writeFile(path.join(outside, "keep.txt"), "not ours\n");
        for (const end of ["commit", "discard"] as const) {
          const batch = await begin(driver, [`${end}/a.txt`]);
          await writeOne(batch, `${end}/a.txt`, bytes("a"));
          const staged = (await readdir(root)).find((n) => n.startsWith(TEMP_PREFIX)) as string;
          await fs.promises.rename(path.join(root, staged), path.join(root, `moved-${end}`));
          await mkdir(path.join(root, staged, "new"), { recursive: true });
          await writeFile(path.join(root, staged, "new", "theirs.txt"), "theirs\n");
          await symlink(outside, path.join(root, staged, "new", "link"));
          if (end === "commit") await batch.commit();
          else await batch.discard();
          assert.deepEqual(
            (await readdir(path.join(root, staged, "new"))).sort(),
            ["link", "theirs.txt"],
            `${end}: their folder is left as it is`,
          );
          await rm(path.join(root, staged), { recursive: true });
        }
        assert.equal(await readFile(path.join(root, "commit", "a.txt"), "utf8"), "a");
        assert.equal(await exists(path.join(root, "discard")), false);
        assert.deepEqual(await readdir(path.join(root, "moved-discard")), [], "ours was emptied");
        assert.deepEqual(await readdir(outside), ["keep.txt"]);
      }),
  );

  it(
    "a temporary folder is private until the commit; the folder put in place has the mode of a new folder",
    {
      skip: !canPinFolders && "temporary folders are held open on Linux only",
    },
    () =>
      withRoot(async (root, driver) => {
        // A parent whose new folders inherit its group (setgid), as shared
        // web roots often are: the folder put in place must have that bit.
        await fs.promises.chmod(path.join(root, "old"), 0o2775);
        const batch = await begin(driver, ["old/new/a.txt", "top/b.txt"]);
        await batch.writeAll([
          { path: "old/new/a.txt", content: bytes("a") },
          { path: "top/b.txt", content: bytes("b") },
        ]);
        const stagedIn = async (dir: string) =>
          (await readdir(dir))
            .filter((name) => name.startsWith(TEMP_PREFIX))
            .map((name) => path.join(dir, name));
        const staged = [...(await stagedIn(root)), ...(await stagedIn(path.join(root, "old")))];
        assert.equal(staged.length, 2);
        for (const folder of staged) {
          const mode = fs.statSync(folder).mode;
          assert.equal(mode & 0o077, 0, `${folder} is open to others: ${mode.toString(8)}`);
        }
        await batch.commit();
        // What a folder made there normally gets (umask, setgid, default ACLs).
        for (const [made, parent] of [
          ["old/new", "old"],
          ["top", ""],
        ] as const) {
          const normal = path.join(root, parent, "made-normally");
          await mkdir(normal);
          assert.equal(
            (fs.statSync(path.join(root, made)).mode & 0o7777).toString(8),
            (fs.statSync(normal).mode & 0o7777).toString(8),
            made,
          );
        }
        assert.ok(fs.statSync(path.join(root, "old", "new")).mode & 0o2000, "setgid kept");
      }),
  );

  it("past the temporary folders one batch holds open, new folders are written whole all the same", () =>
    withRoot(async (root, driver) => {
      // 1,002 new folders at the top: more than _fs-staging.ts holds open
      // (1,000), so the last are written through folders opened batch by
      // batch, and their private folder is known again by its inode.
      const paths = Array.from({ length: 1002 }, (_, i) => `n${i}/sub/f.txt`);
      const batch = await begin(driver, paths);
      await batch.writeAll(paths.map((p) => ({ path: p, content: bytes(p) })));
      assert.equal(await exists(path.join(root, "n1001")), false, "out of sight until the commit");
      await batch.commit();
      for (const p of [paths[0], paths[999], paths[1000], paths[1001]] as string[]) {
        assert.equal(await readFile(path.join(root, p), "utf8"), p);
      }
      assert.equal((await readdir(root)).length, 1003, "old/ and the new folders");
      assert.deepEqual(await tempPathsUnder(root), []);

      // Again, with a folder of someone else's put at the name of the last
      // one's private folder: refused, not published.
      const again = paths.map((p) => `m${p.slice(1)}`);
      const second = await begin(driver, again);
      await second.writeAll(again.map((p) => ({ path: p, content: bytes(p) })));
      const outers = (await readdir(root)).filter((name) => name.startsWith(TEMP_PREFIX));
      const last = outers.find(
        (name) =>
          fs.readFileSync(path.join(root, name, "new", "sub", "f.txt"), "utf8") === again[1001],
      ) as string;
      await fs.promises.rename(path.join(root, last), path.join(root, "moved"));
      await mkdir(path.join(root, last, "new", "sub"), { recursive: true });
      await writeFile(path.join(root, last, "new", "sub", "f.txt"), "theirs\n");
      const error = await rejectsWithCode(second.commit(), "storage_error");
      assert.match(error.message, /is gone or was replaced/);
      await second.discard();
      assert.equal(await exists(path.join(root, "m1001")), false, "theirs is not published");
      assert.equal(
        await readFile(path.join(root, last, "new", "sub", "f.txt"), "utf8"),
        "theirs\n",
      );
    }));

  it("past the held limit, a private folder swapped with another at its name takes no writes", () =>
    withRoot(async (root, driver) => {
      // Renaming entries in a parent needs no permission on the entries: a
      // user who can write to the root can swap two of this run's private
      // folders, and the writes of folders not held open, which find theirs
      // by name, would land in each other's (a review did, and the commit,
      // once the names were swapped back, published them crossed).
      const paths = Array.from({ length: 1002 }, (_, i) => `q${i}/f.txt`);
      const batch = await begin(driver, paths);
      const outers = (await readdir(root)).filter((name) => name.startsWith(TEMP_PREFIX));
      assert.equal(outers.length, 1002);
      for (let i = 0; i + 1 < outers.length; i += 2) {
        const [a, b] = [
          path.join(root, outers[i] as string),
          path.join(root, outers[i + 1] as string),
        ];
        await fs.promises.rename(a, `${a}-x`);
        await fs.promises.rename(b, a);
        await fs.promises.rename(`${a}-x`, b);
      }
      const error = await rejectsWithCode(
        batch.writeAll(paths.map((p) => ({ path: p, content: bytes(p) }))),
        "unsafe_path",
      );
      assert.match(error.message, /not the temporary folder this run made/);
      await batch.discard();
      for (const outer of outers) {
        const stand = path.join(root, outer, "new");
        const inside = await readdir(stand).catch(() => [] as string[]);
        assert.deepEqual(inside, [], `${outer} took no write`);
      }
      assert.deepEqual(
        (await readdir(root)).filter((name) => name.startsWith("q")),
        [],
        "nothing published",
      );
    }));

  it(
    "a batch of many new folders in different places stays within a low open-file limit",
    {
      skip: !canPinFolders && "temporary folders are held open on Linux only",
    },
    () =>
      withRoot(async (root) => {
        // 300 new folders, each in a folder of its own, under `ulimit -n 256`:
        // a descriptor held for each, and for each parent, ran out (EMFILE).
        for (let i = 0; i < 300; i++) fs.mkdirSync(path.join(root, `p${i}`));
        const driverUrl = new URL("../src/storage/filesystem.js", import.meta.url).href;
        const script = `
        const { createFilesystemDriver } = await import(${JSON.stringify(driverUrl)});
        const driver = createFilesystemDriver({ root: ${JSON.stringify(root)} });
        const paths = Array.from({ length: 300 }, (_, i) => "p" + i + "/new/f.txt");
        const batch = await driver.beginWrites(paths);
        const bytes = (text) => ({ type: "bytes", bytes: new TextEncoder().encode(text) });
        await batch.writeAll(paths.map((p) => ({ path: p, content: bytes(p) })));
        await batch.commit();
        console.log("published");`;
        const child = spawnSync(
          "bash",
          [
            "-c",
            `ulimit -n 256 && exec "$0" --input-type=module -e "$1"`,
            process.execPath,
            script,
          ],
          { encoding: "utf8" },
        );
        assert.equal(child.status, 0, child.stderr);
        assert.match(child.stdout, /published/);
        assert.equal(
          await readFile(path.join(root, "p299", "new", "f.txt"), "utf8"),
          "p299/new/f.txt",
        );
      }),
  );

  it("a staged write that fails names the output, not its temporary stand-in", () =>
    withRoot(async (root, driver) => {
      const gone = path.join(path.dirname(root), "no-such-source.txt");
      for (const [relPath, size] of [
        ["new/small.txt", 10],
        ["new/deep/large.bin", 300 * 1024],
      ] as const) {
        const batch = await begin(driver, [relPath]);
        const content = { type: "file" as const, absPath: gone, size };
        const error = await rejectsWithCode(writeOne(batch, relPath, content), "storage_error");
        assert.match(error.message, new RegExp(`${root}/${relPath}`));
        assert.doesNotMatch(error.message, new RegExp(TEMP_PREFIX.replaceAll(".", "\\.")));
        assert.deepEqual(error.paths, [relPath]);
        await batch.discard();
      }
    }));

  it("a write that comes after the discard fails, and does not make the temporary folder again", () =>
    withRoot(async (root, driver) => {
      const batch = await begin(driver, ["new/deep/a.txt", "new/b.bin"]);
      await batch.discard();
      await rejectsWithCode(writeOne(batch, "new/deep/a.txt", bytes("a")), "storage_error");
      const large = { type: "bytes" as const, bytes: new Uint8Array(300 * 1024) };
      await rejectsWithCode(writeOne(batch, "new/b.bin", large), "storage_error");
      assert.deepEqual(await tempPathsUnder(root), []);
      assert.equal(await exists(path.join(root, "new")), false);
    }));

  it("nothing is staged behind a symlink or a file: those writes are refused as before", () =>
    withRoot(async (root, driver) => {
      const outside = path.join(path.dirname(root), "outside");
      await mkdir(outside);
      await symlink(outside, path.join(root, "link"));
      await writeFile(path.join(root, "afile"), "x");
      const batch = await begin(driver, ["link/new/a.txt", "afile/new/b.txt"]);
      // Nothing was staged, behind the link or anywhere (checked before discard removes anything).
      assert.deepEqual(await readdir(outside), []);
      assert.deepEqual(await tempPathsUnder(root), []);
      await rejectsWithCode(writeOne(batch, "link/new/a.txt", bytes("a")), "unsafe_path");
      await rejectsWithCode(writeOne(batch, "afile/new/b.txt", bytes("b")), "unsafe_path");
      assert.deepEqual(await readdir(outside), []);
      await batch.discard();
      assert.deepEqual(await tempPathsUnder(root), []);
    }));

  it("a path that is not clean is refused, staged or not, and nothing is written", () =>
    withRoot(async (root, driver) => {
      const bad = [
        "new/..",
        "new/.",
        "new/",
        "/new/a.txt",
        "new//a.txt",
        "old/a\\b",
        "old/..",
        "x\u0001",
      ];
      const batch = await begin(driver, ["new/a.txt", "old/b.txt"]);
      for (const relPath of bad) {
        await rejectsWithCode(writeOne(batch, relPath, bytes("x")), "unsafe_path");
      }
      await writeOne(batch, "new/a.txt", bytes("a"));
      await batch.commit();
      assert.deepEqual((await readdir(root)).sort(), ["new", "old"]);
      assert.deepEqual(await readdir(path.join(root, "new")), ["a.txt"]);
      assert.deepEqual(await readdir(path.join(root, "old")), ["keep.txt"]);
    }));

  it("after a write fails, writeAll starts no other and ends once the started ones have", () =>
    withRoot(async (root, driver) => {
      const paths = ["new/a.txt", "new/..", "new/b.txt", "old/c.txt"];
      const batch = await begin(driver, ["new/a.txt", "new/b.txt", "old/c.txt"]);
      const written: number[] = [];
      await rejectsWithCode(
        batch.writeAll(
          paths.map((p) => ({ path: p, content: bytes(p) })),
          (index) => written.push(index),
        ),
        "unsafe_path",
      );
      assert.deepEqual(written, [0], "the write before the refused one ended and was reported");
      assert.equal(await readFile(path.join(root, "old", "keep.txt"), "utf8"), "kept\n");
      assert.equal(
        await exists(path.join(root, "old", "c.txt")),
        false,
        "the writes after it never started",
      );
      await batch.commit();
      assert.deepEqual(await readdir(path.join(root, "new")), ["a.txt"]);
    }));

  it("a staged file written a second time (a write thread died after it) is replaced whole", () =>
    withRoot(async (root) => {
      const target = path.join(root, "old", "again.txt");
      await writeFile(target, "half of the first tr");
      const content = bytes("the whole second try");
      writeSmallSync(root, "old/again.txt", { target, content, staging: "old" });
      assert.equal(await readFile(target, "utf8"), "the whole second try");
      assert.deepEqual(await tempPathsUnder(root), []);
    }));
});

describe("a run finds a temporary folder left by a killed run", () => {
  it("not content: the root still counts as empty; the leftover goes before the publish", async () => {
    const s = await scenario();
    const leftover = path.join(s.root, ".distributor.tmp-00000000000000c1-0");
    await mkdir(path.join(leftover, "docs", "empty"), { recursive: true });
    await writeFile(path.join(leftover, "docs", "guide.html"), "half of an earlier run\n");
    await mkdir(path.join(s.root, "data", ".distributor.tmp-00000000000000c2-3"), {
      recursive: true,
    });
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 0, stderr);
    assert.equal(onlyResult(json).action, "publish_new");
    assert.deepEqual(await tempPathsUnder(s.root), []);
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
    assert.equal(
      await readFile(path.join(s.root, "docs", "guide.html"), "utf8").then((t) =>
        t.includes("half"),
      ),
      false,
    );
  });
});

describe("applying a plan: a failed write leaves no part of a new folder", () => {
  it("the new folder stays out of sight, the claim records it, and a rerun converges", async () => {
    const s = await scenario();
    const files: Record<string, string> = {};
    for (let i = 0; i < 50; i++) files[`guide/part${i % 3}/p${i}.txt`] = `page ${i}\n`;
    const dir = await s.bundle("guide", files);
    const driver = createFilesystemDriver({ root: s.root });
    const { plan, snapshot } = await planOnly(s.config, dir, driver);
    assert.equal(plan.action, "publish_new");
    // A source file that vanishes after planning fails its copy.
    await unlink(path.join(dir, "guide/part1/p7.txt"));
    await assert.rejects(applyPlan(driver, plan, { stateToken: snapshot.stateToken }));
    assert.equal(await exists(path.join(s.root, "guide")), false, "no half of guide/");
    assert.deepEqual(await tempPathsUnder(s.root), []);
    const claimed = await readStateFile(s.root);
    assert.equal(claimed.outputs.length, 50, "the claim records every planned path");

    await writeFile(path.join(dir, "guide/part1/p7.txt"), "page 7\n");
    const rerun = await planOnly(s.config, dir, driver);
    await applyPlan(driver, rerun.plan, { stateToken: rerun.snapshot.stateToken });
    for (const [file, text] of Object.entries(files)) {
      assert.equal(await readFile(path.join(s.root, file), "utf8"), text);
    }
  });
});
