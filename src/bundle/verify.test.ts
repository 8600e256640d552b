import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { sha256Digest } from "../hashing.js";
import { hasIdleHelper, helperCounts, stopIdleHelpers } from "../threads.js";
import { FileChecker } from "./_file-checks.js";
import { writeTestBundle } from "./testing.js";
import { loadBundle, openBundle, verifyFiles } from "./verify.js";

async function expectSourceInvalid(dir: string, workers?: number): Promise<DistributorError> {
  let caught: unknown;
  try {
    await loadBundle(dir, { workers });
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DistributorError, `expected DistributorError, got ${caught}`);
  assert.equal(caught.code, "source_invalid");
  return caught;
}

/** Every file under `dir` with its size and mtime, to prove verification writes nothing. */
async function snapshot(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const out: string[] = [];
  for (const entry of entries) {
    const full = path.join(entry.parentPath, entry.name);
    const info = await stat(full).catch(() => null);
    out.push(`${path.relative(dir, full)} ${info?.size} ${info?.mtimeMs}`);
  }
  return out.sort();
}

describe("helper threads started early for a large manifest", () => {
  async function largeBundle(): Promise<string> {
    const files: Record<string, string> = {};
    for (let i = 0; i < 800; i++) files[`folder-${i % 10}/file-number-${i}.txt`] = `${i}`;
    const dir = await writeTestBundle(files);
    // Above openBundle's threshold (64 KiB), so that helpers are started early.
    assert.ok((await stat(path.join(dir, "manifest.json"))).size > 64 * 1024);
    return dir;
  }

  // Default: one per core but one (the calling thread checks a shard too), at
  // most four (_parallel-checks.ts).
  for (const workers of [0, 1, undefined]) {
    const expected = workers ?? Math.min(availableParallelism() - 1, 4);
    test(`workers: ${workers ?? "default"} starts its ${expected} threads when the manifest is read, and no more`, async () => {
      const dir = await largeBundle();
      stopIdleHelpers();
      const before = { ...helperCounts };
      const bundle = await openBundle(dir, { workers });
      assert.equal(helperCounts.started - before.started, expected, "started by openBundle");
      await verifyFiles(bundle, { workers });
      assert.equal(helperCounts.started - before.started, expected, "none started later");
      assert.equal(helperCounts.onThreads - before.onThreads, expected);
    });
  }
});

describe("a helper's shard shared with this thread", () => {
  // This thread checks its own, smaller shard, then takes the helper's last
  // files: however the files end up split, the report must be the same.
  test("every bad file is reported once, in manifest order, with one or two helpers", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1200; i++) files[`d${i % 7}/file-${i}.txt`] = `content ${i}\n`;
    const dir = await writeTestBundle(files);
    const bad = ["d0/file-0.txt", "d3/file-600.txt", "d5/file-1199.txt", "d1/file-1.txt"];
    for (const name of bad) await writeFile(path.join(dir, name), "changed\n");
    const expected = Object.keys(files).filter((name) => bad.includes(name));
    for (const workers of [1, 2]) {
      const error = await expectSourceInvalid(dir, workers);
      assert.deepEqual(error.paths, expected, `workers: ${workers}`);
    }
  });
});

// Every case runs with the checks on this thread and spread over worker threads
// (the default picks by bundle size; both paths must say exactly the same).
for (const workers of [0, 2])
  describe(`loadBundle with ${workers} worker threads`, () => {
    test("a good bundle loads with its identity and files", async () => {
      const dir = await writeTestBundle(
        { "report.md": "# Hi\n", "assets/a.png": Uint8Array.from([1, 2, 3]), "empty.txt": "" },
        { id: "my.bundle", mediaTypes: { "assets/a.png": "image/png" } },
      );
      const bundle = await loadBundle(dir, { workers });
      const manifestBytes = await readFile(path.join(dir, "manifest.json"));
      assert.equal(bundle.identity.id, "my.bundle");
      assert.equal(bundle.identity.digest, sha256Digest(manifestBytes));
      assert.equal(bundle.dir, path.resolve(dir));
      assert.deepEqual(
        bundle.files.map((f) => [f.path, f.size, f.media_type]),
        [
          ["report.md", 5, undefined],
          ["assets/a.png", 3, "image/png"],
          ["empty.txt", 0, undefined],
        ],
      );
    });

    test(`the checks ran ${workers === 0 ? "on this thread" : "on helper threads"}`, async () => {
      const dir = await writeTestBundle({ "a.txt": "a", "b.txt": "b", "c.txt": "c" });
      const before = helperCounts.onThreads;
      await loadBundle(dir, { workers });
      assert.equal(helperCounts.onThreads - before, workers);
    });

    test("files present but not listed do not matter", async () => {
      const dir = await writeTestBundle({ "a.txt": "a" });
      await writeFile(path.join(dir, "unlisted.txt"), "x");
      assert.equal((await loadBundle(dir, { workers })).files.length, 1);
    });

    test("a symlinked bundle directory is resolved to its real path", async () => {
      const dir = await writeTestBundle({ "a.txt": "a" });
      const parent = await mkdtemp(path.join(tmpdir(), "distributor-latest-"));
      await symlink(dir, path.join(parent, "latest"));
      const bundle = await loadBundle(path.join(parent, "latest"), { workers });
      assert.equal(bundle.dir, path.resolve(dir));
    });

    test("a missing file is reported as missing", async () => {
      const dir = await writeTestBundle({ "a.txt": "a", "b/c.txt": "c" });
      await rm(path.join(dir, "b"), { recursive: true });
      const error = await expectSourceInvalid(dir, workers);
      assert.deepEqual(error.paths, ["b/c.txt"]);
      assert.match(error.message, /b\/c\.txt: missing/);
    });

    test("a size mismatch names both sizes", async () => {
      const dir = await writeTestBundle({ "a.txt": "0123456789ab" });
      await writeFile(path.join(dir, "a.txt"), "0123456789");
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /a\.txt: size 10 != 12/);
    });

    test("same size but other bytes is a sha256 mismatch", async () => {
      const dir = await writeTestBundle({ "a.txt": "hello" });
      await writeFile(path.join(dir, "a.txt"), "HELLO");
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /a\.txt: sha256 mismatch/);
      assert.deepEqual(error.paths, ["a.txt"]);
    });

    test("a listed path that is a symlink is refused, even to a good copy", async () => {
      const dir = await writeTestBundle({ "a.txt": "same" });
      await writeFile(path.join(dir, "real.txt"), "same");
      await rm(path.join(dir, "a.txt"));
      await symlink("real.txt", path.join(dir, "a.txt"));
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /a\.txt: symlink/);
    });

    test("a symlinked directory component is refused", async () => {
      const dir = await writeTestBundle({ "docs/a.txt": "a" });
      await rename(path.join(dir, "docs"), path.join(dir, "real-docs"));
      await symlink("real-docs", path.join(dir, "docs"));
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /docs\/a\.txt: symlink in path \('docs' is a symlink\)/);
    });

    test("a symlink escaping the bundle is refused", async () => {
      const outside = await mkdtemp(path.join(tmpdir(), "distributor-outside-"));
      await writeFile(path.join(outside, "secret.txt"), "s");
      const dir = await writeTestBundle({ "secret.txt": "s", "sub/x.txt": "x" });
      await rm(path.join(dir, "secret.txt"));
      await symlink(path.join(outside, "secret.txt"), path.join(dir, "secret.txt"));
      await rm(path.join(dir, "sub"), { recursive: true });
      await mkdir(path.join(outside, "sub"));
      await writeFile(path.join(outside, "sub", "x.txt"), "x");
      await symlink(path.join(outside, "sub"), path.join(dir, "sub"));
      const error = await expectSourceInvalid(dir, workers);
      assert.deepEqual(error.paths, ["secret.txt", "sub/x.txt"]);
    });

    test("a directory where a file is listed is not a regular file", async () => {
      const dir = await writeTestBundle({ "a.txt": "a" });
      await rm(path.join(dir, "a.txt"));
      await mkdir(path.join(dir, "a.txt"));
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /a\.txt: not a regular file/);
    });

    test("a file where a parent directory should be is reported", async () => {
      const dir = await writeTestBundle({ "d/a.txt": "a" });
      await rm(path.join(dir, "d"), { recursive: true });
      await writeFile(path.join(dir, "d"), "not a dir");
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /d\/a\.txt: missing \('d' is not a directory\)/);
    });

    test("every bad path is listed at once, good ones are not", async () => {
      const dir = await writeTestBundle({
        "ok.txt": "ok",
        "gone.txt": "g",
        "short.txt": "long",
        "changed.txt": "abc",
      });
      await rm(path.join(dir, "gone.txt"));
      await writeFile(path.join(dir, "short.txt"), "lo");
      await writeFile(path.join(dir, "changed.txt"), "xyz");
      const error = await expectSourceInvalid(dir, workers);
      assert.deepEqual(error.paths, ["gone.txt", "short.txt", "changed.txt"]);
      assert.match(error.message, /3 of 4 listed files/);
      assert.doesNotMatch(error.message, /ok\.txt/);
    });

    test("the bundle is unchanged after verification, good or bad", async () => {
      const dir = await writeTestBundle({ "a.txt": "a", "b/c.txt": "c" });
      await writeFile(path.join(dir, "b/c.txt"), "changed");
      const before = await snapshot(dir);
      await expectSourceInvalid(dir, workers);
      assert.deepEqual(await snapshot(dir), before);
    });

    test("a missing bundle directory says so", async () => {
      const missing = path.join(tmpdir(), `distributor-none-${process.pid}-${Date.now()}`);
      const error = await expectSourceInvalid(missing, workers);
      assert.match(error.message, /does not exist or is not a directory/);
    });

    test("a bundle path that is a file is not a directory", async () => {
      const dir = await writeTestBundle({});
      const error = await expectSourceInvalid(path.join(dir, "manifest.json"), workers);
      assert.match(error.message, /not a directory/);
    });

    test("a directory without manifest.json says so", async () => {
      const dir = await mkdtemp(path.join(tmpdir(), "distributor-empty-"));
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /has no manifest\.json/);
      assert.deepEqual(error.paths, ["manifest.json"]);
    });

    test("an invalid manifest fails before any file is looked at", async () => {
      const dir = await mkdtemp(path.join(tmpdir(), "distributor-badmanifest-"));
      await writeFile(path.join(dir, "manifest.json"), '{"schema_version": 1, "files": [}');
      const error = await expectSourceInvalid(dir, workers);
      assert.match(error.message, /not valid JSON/);
    });
  });

describe("FileChecker", () => {
  test("hashes a file larger than one read chunk, and names the digest it found", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "distributor-hash-"));
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await writeFile(path.join(dir, "big.bin"), bytes);
    const sha256 = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    const checker = new FileChecker(dir);
    assert.equal(checker.check({ path: "big.bin", size: bytes.byteLength, sha256 }), null);
    const wrong = `sha256:${"0".repeat(64)}`;
    assert.equal(
      checker.check({ path: "big.bin", size: bytes.byteLength, sha256: wrong }),
      `sha256 mismatch (file has ${sha256})`,
    );
  });
});

test("a bundle too big for the calling thread reports every bad file in manifest order", async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 700; i++) files[`d${i % 7}/f${String(i).padStart(3, "0")}.txt`] = `file ${i}`;
  const dir = await writeTestBundle(files);
  // Bad files spread so that they land in different shards.
  const bad = ["d0/f000.txt", "d3/f346.txt", "d6/f699.txt"];
  for (const file of bad) await writeFile(path.join(dir, file), "tampered");
  await rm(path.join(dir, "d5"), { recursive: true });
  const error = await expectSourceInvalid(dir);
  const missing = Object.keys(files).filter((file) => file.startsWith("d5/"));
  const manifestOrder = Object.keys(files).filter(
    (file) => bad.includes(file) || missing.includes(file),
  );
  assert.deepEqual(error.paths, manifestOrder);
  assert.match(error.message, /d0\/f000\.txt: size 8 != 6\n/);
  assert.match(error.message, /d3\/f346\.txt: sha256 mismatch/);
  assert.match(error.message, /d5\/f005\.txt: missing\n/);
  assert.match(error.message, new RegExp(`${bad.length + missing.length} of 700 listed files`));
});

describe("CheckOptions.meanwhile", () => {
  // run.ts reads the destination states there: it must come once, while the
  // helpers hold their files, before this thread checks its own.
  for (const workers of [0, 1]) {
    test(`with ${workers} helper(s): called once, before this thread's checks`, async () => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 1200; i++) files[`d${i % 7}/file-${i}.txt`] = `content ${i}\n`;
      const dir = await writeTestBundle(files);
      stopIdleHelpers(); // Only the helper started for this bundle.
      const bundle = await openBundle(dir, { workers });
      const helperIdle: boolean[] = [];
      const verifying = verifyFiles(bundle, {
        workers,
        meanwhile: () => {
          helperIdle.push(hasIdleHelper());
          // Whatever is checked from now on finds no file at all.
          renameSync(dir, `${dir}-moved`);
        },
      });
      const error = await verifying.then(
        () => assert.fail("the files checked after meanwhile were gone"),
        (caught: DistributorError) => caught,
      );
      assert.equal(helperIdle.length, 1, "called once");
      if (workers) assert.equal(helperIdle[0], false, "the helper was checking its files");
      // Every file checked after it: at least the third this thread would take.
      assert.ok(
        (error.paths?.length ?? 0) >= (workers ? 1200 / 3 : 1200),
        `${error.paths?.length}`,
      );
    });
  }
});

describe("VerifyOptions.readHere", () => {
  // A file read here is checked by the shards too; if it changed between the
  // two checks, it is bad whichever saw the change: its content was not
  // handed to onContent, so nothing may be planned from the bundle.
  for (const workers of [0, 1]) {
    test(`with ${workers} helper(s): a file bad only when read here is reported`, async () => {
      const files: Record<string, string> = { "a.md": "# A\n", "b.md": "# B\n", "c.md": "# C\n" };
      for (let i = 0; i < 600; i++) files[`d/f-${i}.txt`] = `file ${i}\n`;
      const dir = await writeTestBundle(files);
      const bundle = await openBundle(dir, { workers });
      const b = path.join(dir, "b.md");
      const seen: string[] = [];
      const error = await verifyFiles(bundle, {
        workers,
        readHere: () => {
          writeFileSync(b, "# changed\n"); // bad while this thread reads it
          return new Set(["a.md", "b.md", "c.md"]);
        },
        onContent: (file) => {
          seen.push(file.path);
          if (file.path === "c.md") writeFileSync(b, "# B\n"); // good again for the shards
        },
      }).then(
        () => assert.fail("b.md was not handed over, so the bundle must not verify"),
        (caught: DistributorError) => caught,
      );
      assert.equal(error.code, "source_invalid");
      assert.deepEqual(error.paths, ["b.md"]);
      assert.deepEqual(seen, ["a.md", "c.md"]);
    });
  }

  test("an error from readHere is rethrown after a good bundle verifies", async () => {
    const bundle = await openBundle(await writeTestBundle({ "a.md": "# A\n" }), { workers: 0 });
    await assert.rejects(
      verifyFiles(bundle, {
        readHere: () => {
          throw new Error("planning failed");
        },
      }),
      /planning failed/,
    );
  });
});
