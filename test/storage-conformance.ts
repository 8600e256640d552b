/**
 * The storage driver conformance suite: what every StorageDriver (filesystem,
 * s3, ...) must do, stated once. A driver's test file calls
 * {@link describeStorageConformance} with a factory that returns a driver on a
 * fresh, empty root (a new temp directory, a new S3 prefix) and its cleanup.
 *
 * Only the driver interface is used here, so the suite runs unchanged on every
 * backend; behaviour that exists on one backend only (symlinks, dead-pid lock
 * takeover) is tested in that driver's own test file.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { DistributorError, type ErrorCode, LockedError } from "../src/errors.js";
import { LOCK_FILE, STATE_FILE } from "../src/paths.js";
import { UNREADABLE_LOCK_HOLDER } from "../src/storage/_lock-file.js";
import type { StorageDriver, StorageEntry } from "../src/storage/driver.js";

/** A driver on a fresh, empty root, and how to remove whatever it created. */
export interface ConformanceFixture {
  driver: StorageDriver;
  cleanup(): Promise<void>;
}

export interface ConformanceOptions {
  /** Per-test timeout in milliseconds (a remote server is slower). Default 30000. */
  timeout?: number;
}

type Body = (driver: StorageDriver) => Promise<void>;

/** Register the conformance tests for one driver under `describe(name)`. */
export function describeStorageConformance(
  name: string,
  makeDriver: () => Promise<ConformanceFixture>,
  options: ConformanceOptions = {},
): void {
  const timeout = options.timeout ?? 30_000;
  const test = (title: string, body: Body) =>
    it(title, { timeout }, async () => {
      const fixture = await makeDriver();
      try {
        await body(fixture.driver);
      } finally {
        await fixture.cleanup();
      }
    });
  describe(`storage conformance: ${name}`, () => {
    describe("listing and reading", () => describeListing(test));
    describe("writing", () => describeWriting(test));
    describe("conditional writes", () => describeConditional(test));
    describe("deleting", () => describeDeleting(test));
    describe("locking", () => describeLocking(test));
  });
}

type TestFn = (title: string, body: Body) => void;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(text: string) {
  return { type: "bytes" as const, bytes: encoder.encode(text) };
}

async function put(driver: StorageDriver, relPath: string, text: string) {
  return driver.write(relPath, bytesOf(text));
}

async function readText(driver: StorageDriver, relPath: string): Promise<string | null> {
  const stored = await driver.read(relPath);
  return stored === null ? null : decoder.decode(stored.bytes);
}

function sortedPaths(entries: StorageEntry[]): string[] {
  return entries.map((entry) => entry.path).sort();
}

/** Assert that `promise` rejects with a DistributorError of `code`; returns the error. */
export async function rejectsWithCode(
  promise: Promise<unknown>,
  code: ErrorCode,
): Promise<DistributorError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DistributorError, `expected a DistributorError, got ${caught}`);
  assert.equal(caught.code, code, `wrong code; message: ${caught.message}`);
  return caught;
}

function describeListing(test: TestFn): void {
  test("a fresh root lists as empty", async (driver) => {
    assert.deepEqual(await driver.list(), []);
  });

  test("list reports nested files with sizes, including spaces and non-ASCII names", async (driver) => {
    await put(driver, "index.html", "<h1>hi</h1>");
    await put(driver, "deep/a/b/c.txt", "");
    await put(driver, "with space/naïve résumé.md", "ünïcödé");
    await put(driver, "日本/報告.txt", "x");
    const entries = await driver.list();
    assert.deepEqual(
      [...entries].sort((a, b) => (a.path < b.path ? -1 : 1)),
      [
        { path: "deep/a/b/c.txt", size: 0, type: "file" },
        { path: "index.html", size: 11, type: "file" },
        {
          path: "with space/naïve résumé.md",
          size: encoder.encode("ünïcödé").length,
          type: "file",
        },
        { path: "日本/報告.txt", size: 1, type: "file" },
      ],
    );
  });

  test("list includes the reserved tool files (callers filter them)", async (driver) => {
    await driver.write(STATE_FILE, bytesOf("{}\n"), { ifMatch: null, durable: true });
    await put(driver, "a.txt", "a");
    assert.deepEqual(sortedPaths(await driver.list()), [STATE_FILE, "a.txt"].sort());
  });

  test("stat is null when absent and describes a present file", async (driver) => {
    assert.equal(await driver.stat("missing.txt"), null);
    assert.equal(await driver.stat("no/such/dir/file.txt"), null);
    await put(driver, "dir/file.txt", "12345");
    assert.deepEqual(await driver.stat("dir/file.txt"), {
      path: "dir/file.txt",
      size: 5,
      type: "file",
    });
  });

  test("read returns the bytes and the token write returned; null when absent", async (driver) => {
    assert.equal(await driver.read("nothing.json"), null);
    const token = await put(driver, "state/x.json", '{"a":1}');
    const stored = await driver.read("state/x.json");
    assert.ok(stored !== null);
    assert.equal(decoder.decode(stored.bytes), '{"a":1}');
    assert.equal(stored.token, token);
  });

  test("readStream yields the bytes and fails with storage_error when absent", async (driver) => {
    const text = "line\n".repeat(20_000);
    await put(driver, "big/stream.txt", text);
    const chunks: Buffer[] = [];
    for await (const chunk of await driver.readStream("big/stream.txt")) {
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
    assert.equal(Buffer.concat(chunks).toString("utf8"), text);
    await rejectsWithCode(driver.readStream("big/absent.txt"), "storage_error");
  });
}

function describeWriting(test: TestFn): void {
  test("writes bytes and copies a local file", async (driver) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-conformance-src-"));
    try {
      const source = path.join(dir, "source.bin");
      const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
      await writeFile(source, content);
      await driver.write("copied/source.bin", { type: "file", absPath: source });
      await driver.write("generated.html", bytesOf("<p>generated</p>"), {
        contentType: "text/html; charset=utf-8",
      });
      const copied = await driver.read("copied/source.bin");
      assert.ok(copied !== null);
      assert.ok(Buffer.from(copied.bytes).equals(content), "copied bytes differ from the source");
      assert.equal(await readText(driver, "generated.html"), "<p>generated</p>");
      assert.equal((await driver.stat("copied/source.bin"))?.size, content.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("overwriting replaces the content and changes the token", async (driver) => {
    const first = await put(driver, "page.html", "old");
    const second = await put(driver, "page.html", "new content");
    assert.notEqual(second, first);
    assert.equal(await readText(driver, "page.html"), "new content");
    assert.deepEqual(sortedPaths(await driver.list()), ["page.html"]);
  });

  test("a durable write of the state file reads back exactly", async (driver) => {
    const state = `${JSON.stringify({ schema_version: 4, outputs: [] }, null, 2)}\n`;
    const token = await driver.write(STATE_FILE, bytesOf(state), { durable: true });
    const stored = await driver.read(STATE_FILE);
    assert.equal(stored?.token, token);
    assert.equal(stored && decoder.decode(stored.bytes), state);
  });

  test("write refuses paths that could leave the root", async (driver) => {
    for (const bad of ["../escape.txt", "a/../../escape.txt", "/abs.txt", "a//b.txt", "./a.txt"]) {
      await rejectsWithCode(put(driver, bad, "x"), "unsafe_path");
    }
    assert.deepEqual(await driver.list(), []);
  });

  test("a failed write of a missing source file is a storage_error and leaves no file", async (driver) => {
    const missing = path.join(os.tmpdir(), `distributor-missing-${process.pid}-${Date.now()}.bin`);
    await rejectsWithCode(
      driver.write("out/file.bin", { type: "file", absPath: missing }),
      "storage_error",
    );
    // A folder the write made may stay, empty: no content, and in nobody's way
    // but a file planned at that very path, which the planner then refuses.
    const left = (await driver.list()).filter((entry) => entry.type !== "directory");
    assert.deepEqual(left, []);
  });
}

function describeConditional(test: TestFn): void {
  test("ifMatch null creates an absent object", async (driver) => {
    await driver.write(STATE_FILE, bytesOf("one"), { ifMatch: null });
    assert.equal(await readText(driver, STATE_FILE), "one");
  });

  test("ifMatch null fails with state_conflict when the object exists", async (driver) => {
    await put(driver, STATE_FILE, "existing");
    await rejectsWithCode(
      driver.write(STATE_FILE, bytesOf("other"), { ifMatch: null }),
      "state_conflict",
    );
    assert.equal(await readText(driver, STATE_FILE), "existing");
  });

  test("ifMatch with the current token replaces and returns the new token", async (driver) => {
    const token = await put(driver, STATE_FILE, "v1");
    const next = await driver.write(STATE_FILE, bytesOf("v2 longer"), { ifMatch: token });
    assert.notEqual(next, token);
    assert.equal((await driver.read(STATE_FILE))?.token, next);
    assert.equal(await readText(driver, STATE_FILE), "v2 longer");
  });

  test("ifMatch with a stale token fails with state_conflict and keeps the newer bytes", async (driver) => {
    const stale = await put(driver, STATE_FILE, "v1");
    await put(driver, STATE_FILE, "v2 from another writer");
    await rejectsWithCode(
      driver.write(STATE_FILE, bytesOf("v3"), { ifMatch: stale }),
      "state_conflict",
    );
    assert.equal(await readText(driver, STATE_FILE), "v2 from another writer");
  });

  test("ifMatch with a token fails with state_conflict when the object is gone", async (driver) => {
    const token = await put(driver, STATE_FILE, "v1");
    assert.deepEqual(await driver.deleteMany([STATE_FILE]), [{ path: STATE_FILE }]);
    await rejectsWithCode(
      driver.write(STATE_FILE, bytesOf("v2"), { ifMatch: token }),
      "state_conflict",
    );
    assert.equal(await driver.read(STATE_FILE), null);
  });
}

function describeDeleting(test: TestFn): void {
  test("deleteMany removes files and counts already-missing ones as deleted", async (driver) => {
    await put(driver, "keep.txt", "k");
    await put(driver, "a/one.txt", "1");
    await put(driver, "a/two.txt", "2");
    const results = await driver.deleteMany(["a/one.txt", "a/two.txt", "never/was.txt"]);
    assert.deepEqual(results, [
      { path: "a/one.txt" },
      { path: "a/two.txt" },
      { path: "never/was.txt" },
    ]);
    assert.deepEqual(sortedPaths(await driver.list()), ["keep.txt"]);
  });

  test("deleteMany removes emptied directories so their names can hold files again", async (driver) => {
    await put(driver, "x/y/z/leaf.txt", "leaf");
    await put(driver, "x/sibling.txt", "s");
    await driver.deleteMany(["x/y/z/leaf.txt"]);
    assert.equal(await driver.stat("x/y"), null);
    assert.deepEqual(sortedPaths(await driver.list()), ["x/sibling.txt"]);
    // Only possible if x/y is no longer a directory.
    await put(driver, "x/y", "now a file");
    assert.equal(await readText(driver, "x/y"), "now a file");
  });

  test("deleting everything keeps the root usable", async (driver) => {
    await put(driver, "only/file.txt", "f");
    await driver.deleteMany(["only/file.txt"]);
    assert.deepEqual(await driver.list(), []);
    await put(driver, "again.txt", "a");
    assert.deepEqual(sortedPaths(await driver.list()), ["again.txt"]);
  });

  test("deleteMany reports a refused path without stopping the others", async (driver) => {
    await put(driver, "ok.txt", "ok");
    const results = await driver.deleteMany(["../outside.txt", "ok.txt"]);
    assert.equal(results.length, 2);
    assert.equal(results[0]?.path, "../outside.txt");
    assert.equal(typeof results[0]?.error, "string");
    assert.deepEqual(results[1], { path: "ok.txt" });
    assert.deepEqual(await driver.list(), []);
  });

  test("deleteAll empties the root, state included", async (driver) => {
    await put(driver, STATE_FILE, "{}");
    await put(driver, "a/b/c.txt", "c");
    await put(driver, "top.txt", "t");
    await driver.deleteAll();
    assert.deepEqual(await driver.list(), []);
    await driver.deleteAll();
    await put(driver, "after.txt", "a");
    assert.deepEqual(sortedPaths(await driver.list()), ["after.txt"]);
  });

  test("deleteAll keeps the lock its caller holds", async (driver) => {
    const lock = await driver.acquireLock();
    try {
      await put(driver, "x.txt", "x");
      await driver.deleteAll();
      assert.deepEqual(sortedPaths(await driver.list()), [LOCK_FILE]);
      assert.deepEqual(await driver.readLock(), lock.holder);
    } finally {
      await lock.release();
    }
  });
}

function describeLocking(test: TestFn): void {
  test("acquireLock records this host and process; readLock reports it", async (driver) => {
    assert.equal(await driver.readLock(), null);
    const lock = await driver.acquireLock();
    try {
      assert.equal(lock.holder.hostname, os.hostname());
      assert.equal(lock.holder.pid, process.pid);
      assert.match(lock.holder.started_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      assert.deepEqual(await driver.readLock(), lock.holder);
      assert.ok(sortedPaths(await driver.list()).includes(LOCK_FILE));
    } finally {
      await lock.release();
    }
    assert.equal(await driver.readLock(), null);
  });

  test("an unreadable lock still locks, and readLock says so (pid 0)", async (driver) => {
    await put(driver, LOCK_FILE, "garbage, not a lock holder");
    assert.deepEqual(await driver.readLock(), UNREADABLE_LOCK_HOLDER);
    await rejectsWithCode(driver.acquireLock(), "locked");
  });

  test("a second acquire fails with LockedError naming the holder", async (driver) => {
    const lock = await driver.acquireLock();
    try {
      const error = await rejectsWithCode(driver.acquireLock(), "locked");
      assert.ok(error instanceof LockedError);
      assert.deepEqual(error.holder, lock.holder);
      assert.ok(error.message.includes(os.hostname()), error.message);
      assert.ok(error.message.includes(String(process.pid)), error.message);
    } finally {
      await lock.release();
    }
  });

  test("after release the lock can be taken again; release is idempotent", async (driver) => {
    const first = await driver.acquireLock();
    await first.release();
    await first.release();
    const second = await driver.acquireLock();
    try {
      // A late release of the old handle must not free the new lock.
      await first.release();
      assert.deepEqual(await driver.readLock(), second.holder);
      await rejectsWithCode(driver.acquireLock(), "locked");
    } finally {
      await second.release();
    }
    assert.equal(await driver.readLock(), null);
  });

  test("release leaves in place a lock that someone else has put there since", async (driver) => {
    const lock = await driver.acquireLock();
    // What a take-over by another run (which judged this one dead) leaves.
    const other = { hostname: "elsewhere", pid: 42, started_at: "2026-12-02T00:00:00Z" };
    await put(driver, LOCK_FILE, `${JSON.stringify({ ...other, lock_id: "00ff00ff00ff00ff" })}\n`);
    await lock.release();
    assert.deepEqual(await driver.readLock(), other);
    await rejectsWithCode(driver.acquireLock(), "locked");
  });

  test("of two concurrent acquires exactly one wins", async (driver) => {
    const settled = await Promise.allSettled([driver.acquireLock(), driver.acquireLock()]);
    const won = settled.filter((result) => result.status === "fulfilled");
    const lost = settled.filter((result) => result.status === "rejected");
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    assert.ok(lost[0]?.status === "rejected" && lost[0].reason instanceof LockedError);
    if (won[0]?.status === "fulfilled") await won[0].value.release();
    assert.equal(await driver.readLock(), null);
  });
}
