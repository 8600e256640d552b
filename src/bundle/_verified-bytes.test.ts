import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { FileChecker } from "./_file-checks.js";
import {
  KEEP_MAX_FILE_BYTES,
  keptBytes,
  newVerifiedBytesStore,
  reserve,
  type VerifiedBytesStore,
} from "./_verified-bytes.js";
import { writeTestBundle } from "./testing.js";
import { openBundle, verifyFiles } from "./verify.js";

describe("the store of verified bytes", () => {
  test("is sized for the small files, one byte more each, within the limit", () => {
    const files = [{ size: 10 }, { size: KEEP_MAX_FILE_BYTES + 1 }, { size: 0 }];
    const store = newVerifiedBytesStore(files) as VerifiedBytesStore;
    assert.equal(store.bytes.byteLength, 10 + 1 + 0 + 1);
    assert.deepEqual([...store.starts], [-1, -1, -1]);
    const bounded = newVerifiedBytesStore(
      [{ size: 100 }, { size: 100 }],
      150,
    ) as VerifiedBytesStore;
    assert.equal(bounded.bytes.byteLength, 150);
  });

  test("is not made when no file is small enough", () => {
    assert.equal(newVerifiedBytesStore([{ size: KEEP_MAX_FILE_BYTES + 1 }]), null);
    assert.equal(newVerifiedBytesStore([]), null);
  });

  test("hands out places that never overlap, and -1 once full", () => {
    const store = newVerifiedBytesStore([{ size: 20 }, { size: 20 }], 25) as VerifiedBytesStore;
    assert.equal(reserve(store, 10), 0);
    assert.equal(reserve(store, 10), 10);
    assert.equal(reserve(store, 10), -1);
    // A smaller request that still fits is served.
    assert.equal(reserve(store, 5), 20);
    assert.equal(reserve(store, 1), -1);
  });

  test("gives a file's bytes only once they are recorded", () => {
    const store = newVerifiedBytesStore([{ size: 3 }]) as VerifiedBytesStore;
    assert.equal(keptBytes(store, 0, 3), undefined);
    new Uint8Array(store.bytes).set([1, 2, 3], 0);
    store.starts[0] = 0;
    assert.deepEqual([...(keptBytes(store, 0, 3) as Uint8Array)], [1, 2, 3]);
  });
});

describe("FileChecker keeping bytes", () => {
  async function bundleOf(files: Record<string, string | Uint8Array>) {
    const bundle = await openBundle(await writeTestBundle(files), { workers: 0 });
    return bundle;
  }

  test("keeps a good small file's exact bytes, and not a large one's", async () => {
    const large = new Uint8Array(KEEP_MAX_FILE_BYTES + 1).fill(7);
    const bundle = await bundleOf({ "a.txt": "alpha", "empty.txt": "", "large.bin": large });
    const store = newVerifiedBytesStore(bundle.files) as VerifiedBytesStore;
    const problems = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.deepEqual(problems, [null, null, null]);
    bundle.files.forEach((file, index) => {
      const bytes = keptBytes(store, index, file.size);
      if (file.path === "large.bin") assert.equal(bytes, undefined);
      else
        assert.equal(
          Buffer.from(bytes as Uint8Array).toString(),
          file.path === "a.txt" ? "alpha" : "",
        );
    });
  });

  test("keeps nothing of a bad file, and reports it as without a store", async () => {
    const bundle = await bundleOf({
      "changed.txt": "before",
      "grown.txt": "short",
      "cut.txt": "long text",
    });
    await writeFile(path.join(bundle.dir, "changed.txt"), "Before");
    await writeFile(path.join(bundle.dir, "grown.txt"), "short and longer");
    await writeFile(path.join(bundle.dir, "cut.txt"), "long");
    const store = newVerifiedBytesStore(bundle.files) as VerifiedBytesStore;
    const kept = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.match(kept[0] as string, /^sha256 mismatch/);
    assert.match(kept[1] as string, /^size 16 != 5$/);
    assert.match(kept[2] as string, /^size 4 != 9$/);
    assert.deepEqual([...store.starts], [-1, -1, -1]);
  });

  test("a full store leaves the rest unkept and still checks them", async () => {
    const bundle = await bundleOf({ "a.txt": "12345", "b.txt": "67890", "c.txt": "xyz" });
    await writeFile(path.join(bundle.dir, "c.txt"), "XYZ");
    // Room for the first file (5 bytes + 1) only.
    const store = newVerifiedBytesStore(bundle.files, 8) as VerifiedBytesStore;
    const problems = new FileChecker(bundle.dir, store).checkAll(bundle.files);
    assert.deepEqual(problems.slice(0, 2), [null, null]);
    assert.match(problems[2] as string, /^sha256 mismatch/);
    assert.equal(Buffer.from(keptBytes(store, 0, 5) as Uint8Array).toString(), "12345");
    assert.equal(keptBytes(store, 1, 5), undefined);
  });
});

describe("verifyFiles with keepBytes", () => {
  async function manyFiles(count: number): Promise<Record<string, string>> {
    const files: Record<string, string> = {};
    for (let i = 0; i < count; i++)
      files[`d${i % 7}/f${i}.txt`] = `content of file ${i}\n`.repeat(i % 5);
    return files;
  }

  for (const workers of [0, 1, 2]) {
    test(`keeps every small file's bytes, on ${workers} helper thread(s) and this one`, async () => {
      const dir = await writeTestBundle(await manyFiles(700));
      const bundle = await openBundle(dir, { workers });
      const store = await verifyFiles(bundle, { workers, keepBytes: true });
      assert.ok(store);
      for (const [index, file] of bundle.files.entries()) {
        const kept = keptBytes(store, index, file.size);
        assert.ok(kept, `${file.path} kept`);
        assert.deepEqual(Buffer.from(kept), await readFile(path.join(dir, file.path)));
      }
    });
  }

  test("returns no store without keepBytes", async () => {
    const bundle = await openBundle(await writeTestBundle({ "a.txt": "a" }));
    assert.equal(await verifyFiles(bundle), null);
  });
});
