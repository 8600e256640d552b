import assert from "node:assert/strict";
import fs from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { totalmem } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { newWorkClaims } from "../threads.js";
import { FileChecker } from "./_file-checks.js";
import { type SharedShard, shardProblems } from "./_parallel-checks.js";
import {
  KEEP_MAX_FILE_BYTES,
  KEEP_MAX_UPLOAD_FILE_BYTES,
  keepBudget,
  keepOnly,
  keptBytes,
  newVerifiedBytesStore,
  reserve,
  usedBytes,
  type VerifiedBytesStore,
} from "./_verified-bytes.js";
import { writeTestBundle } from "./testing.js";
import { openBundle, verifyFiles } from "./verify.js";

/** A limit that never binds in these tests. */
const ROOMY = 64 * 1024 * 1024;

function storeFor(files: readonly { size: number }[], limit = ROOMY): VerifiedBytesStore {
  const store = newVerifiedBytesStore(files, limit);
  assert.ok(store, "a store is made");
  return store;
}

const text = (bytes: Uint8Array | undefined) => bytes && Buffer.from(bytes).toString();

describe("the store of verified bytes", () => {
  test("is sized for the small files, one byte more each, within the limit", () => {
    const files = [{ size: 10 }, { size: KEEP_MAX_FILE_BYTES + 1 }, { size: 0 }];
    assert.equal(storeFor(files).bytes.byteLength, 10 + 1 + 0 + 1);
    assert.deepEqual([...storeFor(files).starts], [-1, -1, -1]);
    assert.equal(storeFor([{ size: 100 }, { size: 100 }], 150).bytes.byteLength, 150);
  });

  test("is not made when no file is small enough, or there is no budget left", () => {
    assert.equal(newVerifiedBytesStore([{ size: KEEP_MAX_FILE_BYTES + 1 }], ROOMY), null);
    assert.equal(newVerifiedBytesStore([], ROOMY), null);
    assert.equal(newVerifiedBytesStore([{ size: 1 }], 0), null);
  });

  test("a run's budget is at most 256 MiB and 1/16 of the memory, a container's limit included", () => {
    const MiB = 1024 * 1024;
    const GiB = 1024 * MiB;
    assert.equal(keepBudget(1 * GiB, undefined).remaining, 64 * MiB);
    assert.equal(keepBudget(64 * GiB, 0).remaining, 256 * MiB);
    assert.equal(keepBudget(64 * GiB, 2 ** 64).remaining, 256 * MiB);
    assert.equal(keepBudget(64 * GiB, 512 * MiB).remaining, 32 * MiB);
    assert.equal(keepBudget(512 * MiB, 64 * GiB).remaining, 32 * MiB);
    const { remaining } = keepBudget();
    assert.ok(remaining > 0 && remaining <= 256 * MiB && remaining <= totalmem() / 16);
  });

  test("hands out places that never overlap, and -1 once full", () => {
    const store = storeFor([{ size: 20 }, { size: 20 }], 25);
    assert.equal(reserve(store, 10), 0);
    assert.equal(reserve(store, 10), 10);
    assert.equal(reserve(store, 10), -1);
    // A smaller request that still fits is served.
    assert.equal(reserve(store, 5), 20);
    assert.equal(reserve(store, 1), -1);
    assert.equal(usedBytes(store), 25);
  });

  test("gives a file's bytes only once they are recorded", () => {
    const store = storeFor([{ size: 3 }]);
    assert.equal(keptBytes(store, 0, 3), undefined);
    new Uint8Array(store.bytes).set([1, 2, 3], 0);
    store.starts[0] = 0;
    assert.deepEqual([...(keptBytes(store, 0, 3) as Uint8Array)], [1, 2, 3]);
  });

  test("keepOnly leaves only the listed files wanted", () => {
    const store = storeFor([{ size: 1 }, { size: 1 }, { size: 1 }, { size: 1 }]);
    keepOnly(store, [1, 3]);
    assert.deepEqual([...store.wanted], [0, 1, 0, 1]);
  });
});

describe("FileChecker keeping bytes", () => {
  async function bundleOf(files: Record<string, string | Uint8Array>) {
    return openBundle(await writeTestBundle(files), { workers: 0 });
  }

  test("keeps a good small file's exact bytes, up to KEEP_MAX_FILE_BYTES", async () => {
    const limit = Buffer.alloc(KEEP_MAX_FILE_BYTES, 6);
    const large = Buffer.alloc(KEEP_MAX_FILE_BYTES + 1, 7);
    const files = { "a.txt": "alpha", "empty.txt": "", "limit.bin": limit, "large.bin": large };
    const bundle = await bundleOf(files);
    const store = storeFor(bundle.files);
    const problems = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.deepEqual(problems, [null, null, null, null]);
    const kept = bundle.files.map((file, index) => keptBytes(store, index, file.size));
    assert.deepEqual(
      kept.map((bytes) => bytes && Buffer.from(bytes)),
      [Buffer.from("alpha"), Buffer.alloc(0), limit, undefined],
    );
  });

  test("keeps a file of up to 16 MiB read in short pieces, when the store takes files that large", async (t) => {
    const large = Buffer.alloc(KEEP_MAX_FILE_BYTES * 3 + 5);
    for (let i = 0; i < large.length; i++) large[i] = (i * 31) % 251;
    const bundle = await bundleOf({ "large.bin": large });
    const file = bundle.files[0] as (typeof bundle.files)[number];
    // A filesystem that returns at most 100,000 bytes per read (FUSE, NFS).
    const original = fs.readSync;
    t.after(() => {
      fs.readSync = original;
      syncBuiltinESMExports();
    });
    fs.readSync = ((fd: number, buffer: Uint8Array, offset: number, length: number, at: number) =>
      original(fd, buffer, offset, Math.min(length, 100_000), at)) as typeof fs.readSync;
    syncBuiltinESMExports();
    assert.equal(newVerifiedBytesStore(bundle.files, ROOMY), null, "not kept by default");
    const uploads = newVerifiedBytesStore(bundle.files, ROOMY, KEEP_MAX_UPLOAD_FILE_BYTES);
    assert.ok(uploads);
    assert.equal(new FileChecker(bundle.dir, uploads).check(file, 0), null);
    assert.ok(large.equals(Buffer.from(keptBytes(uploads, 0, large.length) ?? [])));
  });

  test("keeps nothing of a bad file", async () => {
    const bundle = await bundleOf({ "changed.txt": "before", "grown.txt": "short" });
    await writeFile(path.join(bundle.dir, "changed.txt"), "Before");
    await writeFile(path.join(bundle.dir, "grown.txt"), "short and longer");
    const store = storeFor(bundle.files);
    const problems = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.match(problems[0] as string, /^sha256 mismatch/);
    assert.match(problems[1] as string, /^size 16 != 5$/);
    assert.deepEqual([...store.starts], [-1, -1]);
  });

  test("a file that grows or shrinks between its fstat and its read is refused, not kept", async (t) => {
    const bundle = await bundleOf({ "a.txt": "abcdef" });
    const file = bundle.files[0] as (typeof bundle.files)[number];
    // The read is the only thing that sees such a change: it is made to
    // return one byte more (the file grew), or one fewer (it shrank).
    const original = fs.readSync;
    t.after(() => {
      fs.readSync = original;
      syncBuiltinESMExports();
    });
    for (const [delta, problem] of [
      [1, /^changed while being read \(longer than 6 bytes\)$/],
      [-1, /^size 5 != 6$/],
    ] as const) {
      fs.readSync = ((...args: Parameters<typeof original>) =>
        (original as (...a: unknown[]) => number)(...args) + delta) as typeof fs.readSync;
      syncBuiltinESMExports();
      const store = storeFor(bundle.files);
      assert.match(new FileChecker(bundle.dir, store).check(file, 0) ?? "", problem);
      assert.equal(store.starts[0], -1);
      fs.readSync = original;
      syncBuiltinESMExports();
    }
    const store = storeFor(bundle.files);
    assert.equal(new FileChecker(bundle.dir, store).check(file, 0), null);
    assert.equal(text(keptBytes(store, 0, 6)), "abcdef");
  });

  test("files no longer wanted, or without room, are checked and not kept", async () => {
    const bundle = await bundleOf({
      "a.txt": "12345",
      "b.txt": "67890",
      "c.txt": "xyz",
      "d.txt": "d",
    });
    await writeFile(path.join(bundle.dir, "c.txt"), "XYZ");
    // Room for two files of 5 bytes (+1 each) only; b is not wanted.
    const store = storeFor(bundle.files, 12);
    keepOnly(store, [0, 2, 3]);
    const problems = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.deepEqual([problems[0], problems[1], problems[3]], [null, null, null]);
    assert.match(problems[2] as string, /^sha256 mismatch/);
    assert.equal(text(keptBytes(store, 0, 5)), "12345");
    assert.equal(keptBytes(store, 1, 5), undefined);
    assert.equal(keptBytes(store, 2, 3), undefined);
    assert.equal(text(keptBytes(store, 3, 1)), "d");
    assert.equal(usedBytes(store), 6 + 4 + 2, "c's place is taken even though c was bad");
  });
});

describe("verifyFiles keeping bytes", () => {
  function manyFiles(count: number): Record<string, string> {
    const files: Record<string, string> = {};
    for (let i = 0; i < count; i++)
      files[`d${i % 7}/f${i}.txt`] = `content of file ${i}\n`.repeat(i % 5);
    return files;
  }

  for (const workers of [0, 1, 2]) {
    test(`keeps every small file's bytes, on ${workers} helper thread(s) and this one`, async () => {
      const dir = await writeTestBundle(manyFiles(700));
      const bundle = await openBundle(dir, { workers });
      const store = storeFor(bundle.files);
      await verifyFiles(bundle, { workers, store });
      for (const [index, file] of bundle.files.entries()) {
        const kept = keptBytes(store, index, file.size);
        assert.ok(kept, `${file.path} kept`);
        assert.deepEqual(Buffer.from(kept), await readFile(path.join(dir, file.path)));
      }
    });
  }

  test("a helper's part checked here again (the helper failed) is kept too", async () => {
    const dir = await writeTestBundle({ "f-0.txt": "zero", "f-1.txt": "one", "f-2.txt": "two" });
    const files = (await openBundle(dir)).files.map((file, at) => ({ ...file, at }));
    const store = storeFor(files);
    const shard: SharedShard = {
      files,
      claims: newWorkClaims(files.length),
      answer: Promise.resolve(null),
      taken: new Map([[2, null]]),
    };
    assert.deepEqual(await shardProblems(dir, shard, store), [null, null, null]);
    assert.deepEqual(
      [0, 1].map((at) => text(keptBytes(store, at, files[at]?.size ?? 0))),
      ["zero", "one"],
    );
  });
});
