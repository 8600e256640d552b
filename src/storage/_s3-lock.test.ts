import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DistributorError, LockedError } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import { acquireObjectLock, type LockStore } from "./_s3-lock.js";
import type { StoredBytes, VersionToken, WriteOptions } from "./driver.js";

/**
 * An in-memory bucket with conditional writes. `loseNextResponse` stores the
 * next write and then answers as the SDK's retry of it would: refused by the
 * object the first attempt created. `etags: false` plays a server that
 * answers PUTs without an ETag; `deleteIgnoresIfMatch` one that deletes
 * whatever If-Match says, as Ceph RGW does.
 */
function memoryStore(server: { etags?: boolean; deleteIgnoresIfMatch?: boolean } = {}) {
  const objects = new Map<string, StoredBytes>();
  let version = 0;
  let loseNext = false;
  let reads = 0;
  const store: LockStore & {
    loseNextResponse(): void;
    objects: typeof objects;
    readonly reads: number;
  } = {
    get reads() {
      return reads;
    },
    root: "s3://bucket/prefix/",
    objects,
    loseNextResponse() {
      loseNext = true;
    },
    async read(path) {
      reads++;
      return objects.get(path) ?? null;
    },
    async currentToken(path) {
      return objects.get(path)?.token ?? null;
    },
    async write(path, content, options: WriteOptions): Promise<VersionToken> {
      const current = objects.get(path);
      const refused =
        (options.ifMatch === null && current !== undefined) ||
        (typeof options.ifMatch === "string" && current?.token !== options.ifMatch);
      if (refused) throw new DistributorError("state_conflict", `${path}: precondition failed`);
      const token = `v${++version}`;
      objects.set(path, { bytes: content.bytes, token });
      if (loseNext) {
        loseNext = false;
        throw new DistributorError("state_conflict", `${path}: precondition failed (retry)`);
      }
      // A server that answers a PUT without an ETag: the driver's write gives "".
      return server.etags === false ? "" : token;
    },
    async deleteIfMatch(path, token) {
      if (server.deleteIgnoresIfMatch || objects.get(path)?.token === token) objects.delete(path);
    },
  };
  return store;
}

describe("S3 lock", () => {
  it("a create whose response was lost, refused on retry by its own object, holds the lock", async () => {
    const store = memoryStore();
    store.loseNextResponse();
    const lock = await acquireObjectLock(store);
    assert.equal(lock.holder.pid, process.pid);
    assert.ok(store.objects.has(LOCK_FILE));
    // A second acquisition (another run of this process) is refused: the
    // lock_id tells the two apart although host, pid and second are the same.
    await assert.rejects(acquireObjectLock(store), LockedError);
    await lock.release();
    assert.equal(store.objects.has(LOCK_FILE), false, "released");
  });

  it("a lock held elsewhere is refused, naming its holder", async () => {
    const store = memoryStore();
    const other = { hostname: "elsewhere", pid: 42, started_at: "2026-11-30T00:00:00Z" };
    store.objects.set(LOCK_FILE, {
      bytes: new TextEncoder().encode(`${JSON.stringify(other)}\n`),
      token: "v0",
    });
    await assert.rejects(acquireObjectLock(store), (error: unknown) => {
      assert.ok(error instanceof LockedError);
      assert.deepEqual(error.holder, other);
      return true;
    });
  });

  it("release checks the lock's version with a HEAD, not by reading its bytes", async () => {
    const store = memoryStore();
    const lock = await acquireObjectLock(store);
    const reads = store.reads;
    await lock.release();
    assert.equal(store.objects.has(LOCK_FILE), false, "released");
    assert.equal(store.reads, reads, "no GET of the lock on release");
  });

  for (const etags of [true, false]) {
    it(`release leaves a lock taken over since in place (${etags ? "with" : "without"} ETags)`, async () => {
      const store = memoryStore({ etags, deleteIgnoresIfMatch: true });
      const lock = await acquireObjectLock(store);
      const other = new TextEncoder().encode('{"hostname":"elsewhere","pid":42}\n');
      store.objects.set(LOCK_FILE, { bytes: other, token: "v99" });
      await lock.release();
      assert.deepEqual(store.objects.get(LOCK_FILE), { bytes: other, token: "v99" });
    });
  }

  it("without an ETag from the server, release compares the lock's bytes and removes our own", async () => {
    const store = memoryStore({ etags: false });
    const lock = await acquireObjectLock(store);
    await lock.release();
    assert.equal(store.objects.has(LOCK_FILE), false, "released");
    assert.ok(store.reads > 0, "read the bytes to compare them");
  });
});
