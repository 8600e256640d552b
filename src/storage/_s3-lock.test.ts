import assert from "node:assert/strict";
import os from "node:os";
import { describe, it } from "node:test";
import { BusyLockError, DistributorError, LockedError, type LockHolder } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import { deadPid } from "./_lock.fixtures.js";
import { acquireObjectLock, CREATES_WHILE_RELEASED, type LockStore } from "./_s3-lock.js";
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

  /**
   * Each of the first `times` creates is refused by another run's lock,
   * which that run releases before our read of its holder.
   */
  function releasedBeforeEachRead(times: number) {
    const store = memoryStore();
    const other = new TextEncoder().encode('{"hostname":"elsewhere","pid":42}\n');
    let refused = 0;
    const racing: LockStore = {
      ...store,
      root: store.root,
      async write(path, content, options) {
        if (path !== LOCK_FILE || options.ifMatch !== null || refused >= times) {
          return store.write(path, content, options);
        }
        refused++;
        store.objects.set(LOCK_FILE, { bytes: other, token: `other-${refused}` });
        try {
          return await store.write(path, content, options);
        } finally {
          store.objects.delete(LOCK_FILE);
        }
      },
    };
    return { store, racing };
  }

  it("a lock released before its holder is read is created again, and then held", async () => {
    const { store, racing } = releasedBeforeEachRead(CREATES_WHILE_RELEASED - 1);
    const lock = await acquireObjectLock(racing);
    assert.equal(lock.holder.pid, process.pid);
    assert.ok(store.objects.has(LOCK_FILE));
  });

  it("a root whose lock changes hands at every look is busy, not locked by an unreadable lock", async () => {
    const { store, racing } = releasedBeforeEachRead(CREATES_WHILE_RELEASED);
    await assert.rejects(acquireObjectLock(racing), (error: unknown) => {
      assert.ok(error instanceof BusyLockError && error instanceof LockedError);
      assert.equal(error.code, "locked");
      assert.equal(error.holder, null);
      assert.match(error.message, /is busy: other runs took its lock and released it again/);
      assert.doesNotMatch(error.message, /unreadable|remove/);
      return true;
    });
    assert.equal(store.objects.has(LOCK_FILE), false, "nothing left behind");
  });

  /** A lock of a dead process on this host, which a run may take over. */
  function staleLock(): { holder: LockHolder; bytes: Uint8Array } {
    const holder = { hostname: os.hostname(), pid: deadPid(), started_at: "2026-11-30T00:00:00Z" };
    return { holder, bytes: new TextEncoder().encode(`${JSON.stringify(holder)}\n`) };
  }

  it("a stale lock taken over is reported once it is ours", async () => {
    const store = memoryStore();
    const stale = staleLock();
    store.objects.set(LOCK_FILE, { bytes: stale.bytes, token: "v0" });
    const reported: LockHolder[] = [];
    const lock = await acquireObjectLock(store, { onStaleLock: (old) => reported.push(old) });
    assert.deepEqual(reported, [stale.holder]);
    assert.equal(lock.holder.pid, process.pid);
  });

  it("a take-over another run won first is not reported as taken over, and names the winner", async () => {
    const store = memoryStore();
    const stale = staleLock();
    store.objects.set(LOCK_FILE, { bytes: stale.bytes, token: "v0" });
    const winner = { hostname: "elsewhere", pid: 7, started_at: "2026-11-30T00:00:01Z" };
    const racing: LockStore = {
      ...store,
      root: store.root,
      async write(path, content, options) {
        // The winner's take-over lands just before ours.
        if (typeof options.ifMatch === "string") {
          const bytes = new TextEncoder().encode(`${JSON.stringify(winner)}\n`);
          store.objects.set(LOCK_FILE, { bytes, token: "winner" });
        }
        return store.write(path, content, options);
      },
    };
    const reported: LockHolder[] = [];
    await assert.rejects(
      acquireObjectLock(racing, { onStaleLock: (old) => reported.push(old) }),
      (error: unknown) => {
        assert.ok(error instanceof LockedError);
        assert.deepEqual(error.holder, winner);
        return true;
      },
    );
    assert.deepEqual(reported, [], "no warning for a take-over that did not happen");
  });

  it("without an ETag from the server, release compares the lock's bytes and removes our own", async () => {
    const store = memoryStore({ etags: false });
    const lock = await acquireObjectLock(store);
    await lock.release();
    assert.equal(store.objects.has(LOCK_FILE), false, "released");
    assert.ok(store.reads > 0, "read the bytes to compare them");
  });
});
