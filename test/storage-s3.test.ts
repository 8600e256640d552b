/**
 * The S3 driver against a real S3 server (Ceph RGW started by test/s3-server.ts):
 * layout of keys, single and multipart writes, metadata, conditional writes and
 * their races, batched deletes, the lock, and error mapping.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, open, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { DistributorError, LockedError } from "../src/errors.js";
import { readRoot, readState } from "../src/execution/root-io.js";
import { listKeys } from "../src/storage/_s3-keys.js";
import { createS3Driver, type S3DriverOptions } from "../src/storage/s3.js";
import {
  createTestBucket,
  ensureS3Server,
  removeTestBucket,
  type S3Server,
  testS3Client,
} from "./s3-server.js";
import { describeStorageConformance } from "./storage-conformance.js";

const MiB = 1024 * 1024;
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array) => new TextDecoder().decode(value);

let server: S3Server;
let bucket: string;
let raw: S3Client;
let tmp: string;

function driver(prefix: string, extra: Partial<S3DriverOptions> = {}) {
  return createS3Driver({
    bucket,
    prefix,
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    ...extra,
  });
}

function isCode(code: string) {
  return (error: unknown) => {
    assert.ok(
      error instanceof DistributorError,
      `expected a DistributorError, got ${String(error)}`,
    );
    assert.equal(error.code, code, error.message);
    return true;
  };
}

async function head(key: string) {
  return raw.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
}

before(async () => {
  server = await ensureS3Server();
  bucket = await createTestBucket();
  raw = testS3Client(server);
  tmp = await mkdtemp(path.join(os.tmpdir(), "s3-driver-test-"));
});

after(async () => {
  raw?.destroy();
  if (bucket) await removeTestBucket(bucket);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describeStorageConformance(
  "s3",
  async () => {
    const d = driver(`conformance/${randomBytes(6).toString("hex")}`);
    // The lock is kept by deleteAll, so it is removed on its own.
    const cleanup = async () => {
      await d.deleteAll();
      await d.deleteMany([".distributor.lock"]);
    };
    return { driver: d, cleanup };
  },
  { timeout: 60_000 },
);

describe("layout", () => {
  test("root names bucket and prefix; an empty prefix is the bucket itself", () => {
    assert.equal(driver("sites/a").root, `s3://${bucket}/sites/a/`);
    assert.equal(driver("").root, `s3://${bucket}/`);
  });

  test("a prefix that is not a clean path is a config error", () => {
    for (const prefix of ["/abs", "a/../b", "a/", "a//b"]) {
      assert.throws(() => driver(prefix), isCode("config_invalid"));
    }
  });

  test("objects are stored at <prefix>/<path>", async () => {
    await driver("lay/out").write("a/b.txt", { type: "bytes", bytes: bytes("x") });
    assert.equal((await head("lay/out/a/b.txt")).ContentLength, 1);
    await driver("").write("top-level.txt", { type: "bytes", bytes: bytes("yz") });
    assert.equal((await head("top-level.txt")).ContentLength, 2);
  });

  test("paths that could leave the prefix are refused with unsafe_path", async () => {
    const d = driver("safe");
    for (const bad of ["../x", "/x", "a//b", "a/./b", ""]) {
      await assert.rejects(
        d.write(bad, { type: "bytes", bytes: bytes("x") }),
        isCode("unsafe_path"),
      );
    }
  });
});

describe("list, stat, read", () => {
  test("list pages through every object under the prefix only", async () => {
    const d = driver("pages", { listPageSize: 2 });
    const names = ["a.txt", "b/c.txt", "b/d/e.txt", "f g.txt", "é.txt", ".distributor.json"];
    for (const name of names) await d.write(name, { type: "bytes", bytes: bytes(name) });
    await driver("pages2").write("other.txt", { type: "bytes", bytes: bytes("no") });
    // A console-made folder marker is not a file.
    await raw.send(
      new PutObjectCommand({ Bucket: bucket, Key: "pages/folder/", Body: "", ContentLength: 0 }),
    );
    const listed = (await d.list()).sort((x, y) => x.path.localeCompare(y.path));
    const expected = names
      .map((name) => ({ path: name, size: Buffer.byteLength(name), type: "file" as const }))
      .sort((x, y) => x.path.localeCompare(y.path));
    assert.deepEqual(listed, expected);
  });

  test("a listing of many pages, split by folder or not, has every key once, in S3's order", async () => {
    // Keys around the folder boundaries: "-" sorts before "/", "0" after it;
    // U+FF5E sorts before an emoji in UTF-8 but after it in UTF-16.
    const names = [
      ".distributor.json",
      "a.txt",
      "b-x.txt",
      ...["1", "2", "3", "4", "5", "6"].map((n) => `b/${n}.txt`),
      "b/c/7.txt",
      "b0.txt",
      "c/1.txt",
      "d/1.txt",
      "e/1.txt",
      "f/1.txt",
      "g/1.txt",
      "z.txt",
      "é/1.txt",
      "\uFF5E/1.txt",
      "😀/1.txt",
    ];
    const d = driver("split");
    for (const name of names) await d.write(name, { type: "bytes", bytes: bytes(name) });
    const flat = (await listKeys(raw, bucket, { prefix: "split/" })).map((o) => o.key);
    assert.equal(flat.length, names.length);
    assert.deepEqual(
      flat,
      [...flat].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      "S3 lists by UTF-8 bytes",
    );
    // Small pages: a first page in one folder, one that ends inside b/, and
    // ones that span more folders than are worth splitting.
    // Two at once: the folders never fit in one round, and the listing
    // goes on page by page after asking for them; sixteen: they do whenever
    // their names fit in one page, and it goes on folder by folder.
    for (const concurrency of [2, 16]) {
      for (let pageSize = 1; pageSize <= 14; pageSize++) {
        const split = await listKeys(raw, bucket, { prefix: "split/", pageSize, concurrency });
        assert.deepEqual(
          split.map((o) => o.key),
          flat,
          `page size ${pageSize}, ${concurrency} at once`,
        );
      }
    }
    const listed = await driver("split", { listPageSize: 5, maxConcurrency: 4 }).list();
    assert.deepEqual(
      listed.map((entry) => entry.path),
      flat.map((key) => key.slice("split/".length)),
    );
  });

  test("keys that are not clean paths are not listed, and deleteMany of the rest leaves them", async () => {
    const d = driver("unclean");
    for (const key of ["unclean/x//y", "unclean/q/../r", "unclean/./s", "unclean/dir/"]) {
      await raw.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "" }));
    }
    await d.write("ok.txt", { type: "bytes", bytes: bytes("ok") });
    const listed = await d.list();
    assert.deepEqual(
      listed.map((entry) => entry.path),
      ["ok.txt"],
    );
    const results = await d.deleteMany(listed.map((entry) => entry.path));
    assert.deepEqual(results, [{ path: "ok.txt" }]);
    await head("unclean/x//y");
  });

  test("a prefix with nothing under it lists as empty", async () => {
    assert.deepEqual(await driver("never/written").list(), []);
  });

  test("stat gives the size, or null when absent", async () => {
    const d = driver("stat");
    await d.write("s.bin", { type: "bytes", bytes: new Uint8Array(123) });
    assert.deepEqual(await d.stat("s.bin"), { path: "s.bin", size: 123, type: "file" });
    assert.equal(await d.stat("missing.bin"), null);
  });

  test("read returns bytes and the unquoted ETag; null when absent", async () => {
    const d = driver("read");
    const token = await d.write("r.json", { type: "bytes", bytes: bytes('{"a":1}') });
    const got = await d.read("r.json");
    assert.ok(got);
    assert.equal(text(got.bytes), '{"a":1}');
    assert.equal(got.token, token);
    assert.ok(!token.includes('"'));
    assert.equal(token, (await head("read/r.json")).ETag?.replaceAll('"', ""));
    assert.equal(await d.read("absent.json"), null);
  });

  test("readStream streams the bytes and fails with storage_error when absent", async () => {
    const d = driver("stream");
    await d.write("s.txt", { type: "bytes", bytes: bytes("streamed") });
    const chunks: Buffer[] = [];
    for await (const chunk of (await d.readStream("s.txt")) as AsyncIterable<Buffer>)
      chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString(), "streamed");
    await assert.rejects(d.readStream("nope.txt"), isCode("storage_error"));
  });
});

describe("write", () => {
  test("a file is streamed with Content-Type and sha256 metadata", async () => {
    const file = path.join(tmp, "page.html");
    await writeFile(file, "<p>hi</p>");
    const d = driver("write-file");
    const sha = `sha256:${createHash("sha256").update("<p>hi</p>").digest("hex")}`;
    const token = await d.write(
      "page.html",
      { type: "file", absPath: file },
      { contentType: "text/html", sha256: sha },
    );
    const meta = await head("write-file/page.html");
    assert.equal(meta.ContentType, "text/html");
    assert.equal(meta.Metadata?.sha256, sha);
    assert.equal(meta.ContentLength, 9);
    assert.equal(token, meta.ETag?.replaceAll('"', ""));
  });

  test("bytes are one PutObject with their metadata", async () => {
    const d = driver("write-bytes");
    await d.write(
      "x.json",
      { type: "bytes", bytes: bytes("{}") },
      { contentType: "application/json", sha256: "sha256:ab" },
    );
    const meta = await head("write-bytes/x.json");
    assert.equal(meta.ContentType, "application/json");
    assert.equal(meta.Metadata?.sha256, "sha256:ab");
  });

  test("a small file whose bytes are not the verified ones is refused, nothing stored", async () => {
    const file = path.join(tmp, "changed.txt");
    await writeFile(file, "changed after verification");
    const verified = `sha256:${createHash("sha256").update("as verified").digest("hex")}`;
    const d = driver("write-mismatch");
    await assert.rejects(
      d.write("changed.txt", { type: "file", absPath: file }, { sha256: verified }),
      (error: unknown) => {
        isCode("storage_error")(error);
        const message = (error as Error).message;
        assert.match(
          message,
          /write-mismatch\/changed\.txt: PutObject failed: 400 XAmzContentSHA256Mismatch/,
        );
        assert.match(message, /changed after verification/);
        return true;
      },
    );
    await assert.rejects(head("write-mismatch/changed.txt"), { name: "NotFound" });
  });

  test("keys with spaces, non-ASCII and reserved characters are written where they are listed", async () => {
    const d = driver("write-keys");
    const paths = ["a b/ü+%!'()*&=;,$@.txt", "c~d/e[f]#g.txt"];
    for (const p of paths) {
      await d.write(p, { type: "bytes", bytes: bytes(p) }, { sha256: undefined });
    }
    assert.deepEqual((await d.list()).map((entry) => entry.path).sort(), [...paths].sort());
    for (const p of paths) assert.equal(text((await d.read(p))?.bytes ?? bytes("")), p);
  });

  test("the executor may keep max_concurrency writes in flight", () => {
    assert.equal(driver("wc", { maxConcurrency: 5 }).writeConcurrency, 5);
    assert.equal(driver("wc").writeConcurrency, 16, "the default max_concurrency");
  });

  test("a missing bucket is a storage_error naming it", async () => {
    const d = createS3Driver({
      bucket: `${bucket}-missing`,
      prefix: "",
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
    });
    await assert.rejects(
      d.write("a.txt", { type: "bytes", bytes: bytes("a") }),
      (error: unknown) => {
        isCode("storage_error")(error);
        assert.match(
          (error as Error).message,
          /-missing\/a\.txt: PutObject failed: 404 NoSuchBucket/,
        );
        return true;
      },
    );
  });

  test("a file at or above the threshold goes up as multipart and returns the real ETag", async () => {
    const content = randomBytes(12 * MiB);
    const file = path.join(tmp, "big.bin");
    await writeFile(file, content);
    const d = driver("multi", { multipartThreshold: 5 * MiB });
    const token = await d.write(
      "big.bin",
      { type: "file", absPath: file },
      { contentType: "application/octet-stream" },
    );
    const meta = await head("multi/big.bin");
    assert.equal(token, meta.ETag?.replaceAll('"', ""));
    assert.match(token, /^[0-9a-f]{32}-3$/, "a 3-part multipart ETag");
    assert.equal(meta.ContentType, "application/octet-stream");
    const got = await d.read("big.bin");
    assert.ok(got && Buffer.from(got.bytes).equals(content));
  });

  test("a 512 MiB file goes up in parts without holding the file in memory", async () => {
    // Multipart keeps about 4 parts of 16 MiB in flight (see _s3-upload.ts), so
    // the process's peak RSS must grow by far less than the file's size.
    const file = path.join(tmp, "large.bin");
    const chunk = randomBytes(MiB);
    const hash = createHash("sha256");
    const handle = await open(file, "w");
    for (let i = 0; i < 512; i++) {
      chunk[0] = i & 0xff; // no two parts alike
      await handle.write(chunk);
      hash.update(chunk);
    }
    await handle.close();
    const sha256 = `sha256:${hash.digest("hex")}`;
    const d = driver("large");
    const peakBefore = process.resourceUsage().maxRSS / 1024;
    const content = { type: "file" as const, absPath: file, size: 512 * MiB, sha256 };
    await d.write("large.bin", content, { sha256 });
    const growth = process.resourceUsage().maxRSS / 1024 - peakBefore;
    await rm(file);
    const meta = await head("large/large.bin");
    assert.equal(meta.ContentLength, 512 * MiB);
    assert.equal(meta.Metadata?.sha256, sha256);
    await d.deleteMany(["large.bin"]);
    assert.ok(growth < 200, `peak RSS grew by ${growth.toFixed(0)} MiB for a 512 MiB upload`);
  });

  for (const [name, size, threshold] of [
    ["a small file", 1000, 64 * MiB],
    ["a streamed file", 2 * MiB, 64 * MiB],
    ["a multipart upload", 12 * MiB, 5 * MiB],
  ] as const) {
    test(`${name} whose bytes are not the verified ones is never completed: source_invalid`, async () => {
      // The file changed after verification: the digest it carries is the
      // verified one, the bytes are not. A symlink in its place is refused too.
      const file = path.join(tmp, `changed-${size}.bin`);
      const verified = randomBytes(size);
      const sha256 = `sha256:${createHash("sha256").update(verified).digest("hex")}`;
      const changed = Buffer.from(verified);
      changed[size - 1] = (changed[size - 1] as number) ^ 1;
      await writeFile(file, changed);
      const prefix = `changed-${size}`;
      const d = driver(prefix, { multipartThreshold: threshold });
      const content = {
        type: "file" as const,
        absPath: file,
        sourcePath: "data/f.bin",
        size,
        sha256,
      };
      await assert.rejects(d.write("f.bin", content, { sha256 }), (error: unknown) => {
        isCode("source_invalid")(error);
        assert.match((error as Error).message, /changed during the run/);
        // The manifest path, as every other source_invalid lists it.
        assert.deepEqual((error as { paths?: string[] }).paths, ["data/f.bin"]);
        return true;
      });
      const link = path.join(tmp, `link-${size}.bin`);
      await symlink(file, link);
      await assert.rejects(
        d.write("g.bin", { ...content, absPath: link }, { sha256 }),
        isCode("source_invalid"),
      );
      for (const key of ["f.bin", "g.bin"]) {
        await assert.rejects(head(`${prefix}/${key}`), { name: "NotFound" });
      }
      const uploads = await raw.send(
        new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: `${prefix}/` }),
      );
      assert.deepEqual(uploads.Uploads ?? [], [], "no multipart upload left open");
      // The verified bytes go up, with their digest as metadata.
      await writeFile(file, verified);
      await d.write("f.bin", content, { sha256 });
      assert.equal((await head(`${prefix}/f.bin`)).Metadata?.sha256, sha256);
    });
  }

  test("bytes kept from verification are sent as they are, without reading the file", async () => {
    // As bundle/_verified-bytes.ts keeps them: a view of a shared block.
    const shared = new Uint8Array(new SharedArrayBuffer(32));
    shared.set(Buffer.from("xx-kept bytes-yy"));
    const verifiedBytes = new Uint8Array(shared.buffer, 3, 10);
    const sha256 = `sha256:${createHash("sha256").update(verifiedBytes).digest("hex")}`;
    const content = {
      type: "file" as const,
      absPath: path.join(tmp, "never-there.txt"),
      size: 10,
      sha256,
      verifiedBytes,
    };
    const d = driver("kept");
    await d.write("k.txt", content, { sha256 });
    // A conditional write goes through the SDK rather than the direct PUT.
    await d.write("c.txt", content, { sha256, ifMatch: null });
    for (const key of ["k.txt", "c.txt"]) {
      assert.equal(text((await d.read(key))?.bytes ?? new Uint8Array()), "kept bytes");
      assert.equal((await head(`kept/${key}`)).Metadata?.sha256, sha256);
    }
  });

  test("a missing source file is a storage_error naming the object", async () => {
    const d = driver("write-missing");
    await assert.rejects(
      d.write("gone.txt", { type: "file", absPath: path.join(tmp, "nope") }),
      (error: unknown) => {
        isCode("storage_error")(error);
        assert.match((error as Error).message, /write-missing\/gone\.txt/);
        return true;
      },
    );
  });
});

describe("conditional writes", () => {
  test("ifMatch null creates once, then refuses with state_conflict", async () => {
    const d = driver("cond-create");
    await d.write("s.json", { type: "bytes", bytes: bytes("1") }, { ifMatch: null });
    await assert.rejects(
      d.write("s.json", { type: "bytes", bytes: bytes("2") }, { ifMatch: null }),
      isCode("state_conflict"),
    );
    assert.equal(text((await d.read("s.json"))?.bytes ?? new Uint8Array()), "1");
  });

  test("a token is compare-and-swap: current wins, stale and absent refuse", async () => {
    const d = driver("cond-cas");
    const first = await d.write("s.json", { type: "bytes", bytes: bytes("1") });
    const second = await d.write(
      "s.json",
      { type: "bytes", bytes: bytes("2") },
      { ifMatch: first },
    );
    assert.notEqual(second, first);
    await assert.rejects(
      d.write("s.json", { type: "bytes", bytes: bytes("3") }, { ifMatch: first }),
      isCode("state_conflict"),
    );
    await assert.rejects(
      d.write("none.json", { type: "bytes", bytes: bytes("x") }, { ifMatch: second }),
      isCode("state_conflict"),
    );
    assert.equal(text((await d.read("s.json"))?.bytes ?? new Uint8Array()), "2");
  });

  test("8 concurrent creates: exactly one wins, the others get state_conflict", async () => {
    const d = driver("race-create");
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        d.write("s.json", { type: "bytes", bytes: bytes(`w${i}`) }, { ifMatch: null }),
      ),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1);
    for (const r of results) if (r.status === "rejected") isCode("state_conflict")(r.reason);
    const winner = results.findIndex((r) => r.status === "fulfilled");
    assert.equal(text((await d.read("s.json"))?.bytes ?? new Uint8Array()), `w${winner}`);
  });

  test("8 concurrent swaps from one token: exactly one wins", async () => {
    const d = driver("race-cas");
    const token = await d.write("s.json", { type: "bytes", bytes: bytes("base") });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        d.write("s.json", { type: "bytes", bytes: bytes(`w${i}`) }, { ifMatch: token }),
      ),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) if (r.status === "rejected") isCode("state_conflict")(r.reason);
  });
});

describe("deletes", () => {
  test("deleteMany batches past 1000 keys; already missing counts as success", async () => {
    const d = driver("del");
    for (const name of ["a.txt", "b/c.txt", "keep.txt"])
      await d.write(name, { type: "bytes", bytes: bytes(name) });
    const missing = Array.from({ length: 1200 }, (_, i) => `missing/${i}.txt`);
    const paths = ["a.txt", ...missing, "b/c.txt"];
    const results = await d.deleteMany(paths);
    assert.deepEqual(
      results,
      paths.map((p) => ({ path: p })),
    );
    assert.deepEqual(
      (await d.list()).map((e) => e.path),
      ["keep.txt"],
    );
  });

  test("a bad path gets its own error and does not stop the others", async () => {
    const d = driver("del-bad");
    await d.write("ok.txt", { type: "bytes", bytes: bytes("x") });
    const results = await d.deleteMany(["../escape", "ok.txt"]);
    assert.equal(results[0]?.path, "../escape");
    assert.match(results[0]?.error ?? "", /\.\.\/escape/);
    assert.deepEqual(results[1], { path: "ok.txt" });
    assert.equal(await d.stat("ok.txt"), null);
  });

  test("deleteAll empties the prefix, keeps the held lock and leaves other prefixes alone", async () => {
    const d = driver("wipe");
    for (const name of ["a.txt", "b/c.txt", ".distributor.json"])
      await d.write(name, { type: "bytes", bytes: bytes(name) });
    await driver("wipe2").write("sibling.txt", { type: "bytes", bytes: bytes("s") });
    await driver("").write("wipe.txt", { type: "bytes", bytes: bytes("t") });
    const lock = await d.acquireLock();
    await d.deleteAll();
    assert.deepEqual(
      (await d.list()).map((e) => e.path),
      [".distributor.lock"],
    );
    assert.ok(await driver("wipe2").stat("sibling.txt"));
    assert.ok(await driver("").stat("wipe.txt"));
    await lock.release();
    assert.deepEqual(await d.list(), []);
  });
});

describe("lock", () => {
  test("acquire, a second writer gets locked naming the holder, release frees it", async () => {
    const d = driver("lock-basic");
    assert.equal(await d.readLock(), null);
    const handle = await d.acquireLock();
    assert.equal(handle.holder.pid, process.pid);
    assert.equal(handle.holder.hostname, os.hostname());
    assert.match(handle.holder.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(await d.readLock(), handle.holder);
    await assert.rejects(driver("lock-basic").acquireLock(), (error: unknown) => {
      assert.ok(error instanceof LockedError);
      assert.deepEqual(error.holder, handle.holder);
      assert.match(error.message, new RegExp(`pid ${process.pid}`));
      return true;
    });
    await handle.release();
    await handle.release();
    assert.equal(await d.readLock(), null);
    const again = await d.acquireLock();
    await again.release();
  });

  test("a dead local holder is taken over with onStaleLock", async () => {
    const d = driver("lock-stale");
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    const stale = { hostname: os.hostname(), pid: dead, started_at: "2020-01-01T00:00:00Z" };
    await d.write(".distributor.lock", { type: "bytes", bytes: bytes(JSON.stringify(stale)) });
    const seen: unknown[] = [];
    const handle = await d.acquireLock({ onStaleLock: (holder) => seen.push(holder) });
    assert.deepEqual(seen, [stale]);
    assert.deepEqual(await d.readLock(), handle.holder);
    await handle.release();
  });

  test("a holder on another host or an unreadable lock is never taken over", async () => {
    const d = driver("lock-foreign");
    const foreign = { hostname: "elsewhere.example", pid: 1, started_at: "2020-01-01T00:00:00Z" };
    await d.write(".distributor.lock", { type: "bytes", bytes: bytes(JSON.stringify(foreign)) });
    await assert.rejects(
      d.acquireLock({ onStaleLock: () => assert.fail("not stale") }),
      (error: unknown) => {
        assert.ok(error instanceof LockedError);
        assert.deepEqual(error.holder, foreign);
        return true;
      },
    );
    await d.write(".distributor.lock", { type: "bytes", bytes: bytes("not json") });
    await assert.rejects(
      d.acquireLock(),
      (error: unknown) => error instanceof LockedError && error.holder === null,
    );
    assert.equal((await d.readLock())?.pid, 0);
  });

  test("release leaves a lock that someone else holds now", async () => {
    const d = driver("lock-taken");
    const handle = await d.acquireLock();
    const other = { hostname: "elsewhere.example", pid: 7, started_at: "2020-01-01T00:00:00Z" };
    await d.write(".distributor.lock", { type: "bytes", bytes: bytes(JSON.stringify(other)) });
    await handle.release();
    assert.deepEqual(await d.readLock(), other);
  });

  test("8 concurrent acquirers: exactly one holds the lock", async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => driver("lock-race").acquireLock()),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1);
    for (const r of results)
      if (r.status === "rejected") assert.ok(r.reason instanceof LockedError, String(r.reason));
    await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
  });
});

describe("errors", () => {
  test("a missing bucket is a storage_error naming bucket, status and error name", async () => {
    const d = createS3Driver({
      bucket: "dist-test-does-not-exist",
      prefix: "p",
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
    });
    await assert.rejects(d.list(), (error: unknown) => {
      isCode("storage_error")(error);
      assert.match(
        (error as Error).message,
        /^s3:\/\/dist-test-does-not-exist\/p\/: ListObjectsV2 failed: 404 NoSuchBucket\./,
      );
      assert.ok((error as Error).cause, "keeps the SDK error as cause");
      return true;
    });
    // The state of a missing bucket is not "missing" (status, verify, prune):
    // a HEAD there is a bare 404, so absence is confirmed by a GET.
    await assert.rejects(readState(d), (error: unknown) => {
      isCode("storage_error")(error);
      assert.match((error as Error).message, /NoSuchBucket/);
      return true;
    });
  });

  test("a wrong secret key is a 403 storage_error that shows no credentials", async () => {
    const secret = "wrong-secret-key-do-not-print";
    const client = new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? "x", secretAccessKey: secret },
    });
    const d = createS3Driver({ bucket, prefix: "auth", client });
    for (const attempt of [
      () => d.write("k.txt", { type: "bytes", bytes: bytes("x") }),
      () => d.stat("k.txt"),
      () => d.list(),
    ]) {
      await assert.rejects(attempt(), (error: unknown) => {
        isCode("storage_error")(error);
        const report = JSON.stringify((error as DistributorError).toReport());
        assert.match(report, / 403 /);
        assert.ok(!report.includes(secret));
        assert.ok(!report.includes(process.env.AWS_SECRET_ACCESS_KEY ?? secret));
        assert.ok(!report.includes(process.env.AWS_ACCESS_KEY_ID ?? secret));
        return true;
      });
    }
    client.destroy();
  });

  test("an unreachable endpoint is a storage_error that says to check the endpoint", async () => {
    const d = createS3Driver({
      bucket,
      prefix: "p",
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      forcePathStyle: true,
    });
    await assert.rejects(d.stat("x"), (error: unknown) => {
      isCode("storage_error")(error);
      assert.match((error as Error).message, /HeadObject failed: ECONNREFUSED.*Check the endpoint/);
      return true;
    });
  });
});

describe("readRoot on S3", () => {
  test("keys below the state's name make no directory of it: the state is missing", async () => {
    const prefix = `read-root-${randomBytes(4).toString("hex")}`;
    await raw.send(
      new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/.distributor.json/x`, Body: "x" }),
    );
    const snapshot = await readRoot(driver(prefix));
    assert.equal(snapshot.state.class, "missing");
    assert.deepEqual(
      snapshot.listing.map((entry) => entry.path),
      [".distributor.json/x"],
    );
  });
});
