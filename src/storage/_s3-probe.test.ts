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

  it("sends the two checks together, and removes the object only once both have settled", async () => {
    // Each check waits for the test to answer it: both must be asked before
    // either is answered, and the cleanup must not overtake the slower one.
    const pending: Array<{ ifMatch: string | null; answer: (refused: boolean) => void }> = [];
    const events: string[] = [];
    let first = true;
    const store: ProbeStore = {
      put(_path, ifMatch) {
        if (first) {
          first = false;
          return Promise.resolve("written");
        }
        return new Promise((resolve, reject) => {
          pending.push({
            ifMatch,
            answer: (refused) => {
              events.push(`settled ${ifMatch === null ? "if-none-match" : "if-match"}`);
              if (ifMatch === null) reject(new Error("503 SlowDown"));
              else resolve(refused ? "refused" : "written");
            },
          });
        });
      },
      async remove() {
        events.push("remove");
      },
    };
    const probe = probeConditionalWrites(store);
    const outcome = assert.rejects(probe, /SlowDown/);
    for (let turn = 0; turn < 50 && pending.length < 2; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(pending.length, 2, "both checks are in flight before either is answered");
    assert.deepEqual(
      pending.map((check) => check.ifMatch === null),
      [true, false],
    );
    pending[0]?.answer(true); // the If-None-Match check fails first
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, ["settled if-none-match"], "no cleanup while a PUT is in flight");
    pending[1]?.answer(true);
    await outcome;
    assert.deepEqual(events, ["settled if-none-match", "settled if-match", "remove"]);
  });
});
