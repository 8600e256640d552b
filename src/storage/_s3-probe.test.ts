import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isReservedName } from "../paths.js";
import { PROBE_PREFIX, type ProbeStore, probeConditionalWrites } from "./_s3-probe.js";

/** An in-memory object store that enforces the conditions it is told to. */
function fakeStore(enforces: { ifNoneMatch: boolean; ifMatch: boolean }) {
  const objects = new Map<string, string>();
  const calls: string[] = [];
  const store: ProbeStore = {
    async put(path, ifMatch) {
      calls.push(`put ${ifMatch === null ? "if-none-match" : "if-match"}`);
      const current = objects.get(path);
      if (ifMatch === null && enforces.ifNoneMatch && current !== undefined) return "refused";
      if (ifMatch !== null && enforces.ifMatch && current !== ifMatch) return "refused";
      objects.set(path, `etag-${calls.length}`);
      return "written";
    },
    async remove(path) {
      calls.push("remove");
      objects.delete(path);
    },
  };
  return { store, objects, calls };
}

describe("probeConditionalWrites", () => {
  it("is true for a server that enforces both conditions, and removes its object", async () => {
    const { store, objects, calls } = fakeStore({ ifNoneMatch: true, ifMatch: true });
    assert.equal(await probeConditionalWrites(store), true);
    assert.equal(objects.size, 0);
    assert.deepEqual(calls, ["put if-none-match", "put if-none-match", "put if-match", "remove"]);
  });

  it("is false when If-None-Match is ignored", async () => {
    const { store, objects } = fakeStore({ ifNoneMatch: false, ifMatch: true });
    assert.equal(await probeConditionalWrites(store), false);
    assert.equal(objects.size, 0);
  });

  it("is false when only If-Match is ignored", async () => {
    const { store } = fakeStore({ ifNoneMatch: true, ifMatch: false });
    assert.equal(await probeConditionalWrites(store), false);
  });

  it("uses a fresh reserved key each time", async () => {
    const keys: string[] = [];
    const store: ProbeStore = {
      async put(path) {
        keys.push(path);
        return "refused";
      },
      async remove() {},
    };
    await probeConditionalWrites(store);
    await probeConditionalWrites(store);
    assert.equal(new Set(keys).size, 2);
    for (const key of keys) {
      assert.ok(key.startsWith(PROBE_PREFIX), key);
      assert.ok(isReservedName(key), `${key} is a reserved name: never an output or unmanaged`);
    }
  });

  it("still removes the probe object when a request fails, and passes the failure on", async () => {
    const removed: string[] = [];
    let puts = 0;
    const store: ProbeStore = {
      async put() {
        puts += 1;
        if (puts === 2) throw new Error("503 SlowDown");
        return "written";
      },
      async remove(path) {
        removed.push(path);
      },
    };
    await assert.rejects(probeConditionalWrites(store), /SlowDown/);
    assert.equal(removed.length, 1);
  });
});
