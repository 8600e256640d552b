import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DistributorError, LockedError } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import { acquireObjectLock, type LockStore } from "./_s3-lock.js";
import type { StoredBytes, VersionToken, WriteOptions } from "./driver.js";

/**
 * An in-memory bucket with conditional writes. `loseNextResponse` stores the
 * next write and then answers as the SDK's retry of it would: refused by the
 * object the first attempt created.
 */
function memoryStore() {
  const objects = new Map<string, StoredBytes>();
  let version = 0;
  let loseNext = false;
  const store: LockStore & { loseNextResponse(): void; objects: typeof objects } = {
    root: "s3://bucket/prefix/",
    objects,
    loseNextResponse() {
      loseNext = true;
    },
    async read(path) {
      return objects.get(path) ?? null;
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
      return token;
    },
    async deleteIfMatch(path, token) {
      if (objects.get(path)?.token === token) objects.delete(path);
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
});
