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
      const etag = `etag-${calls.length}`;
      objects.set(path, etag);
      return etag;
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
    assert.deepEqual(calls, [
      "put if-none-match",
      "put if-none-match",
      "put if-none-match",
      "put if-none-match",
      "put if-match",
      "put if-match",
      "remove",
      "remove",
      "remove",
    ]);
  });

  it("sends the three keys' requests side by side, never two at once to one key", async () => {
    const inFlight = new Map<string, number>();
    let most = 0;
    const stages: string[][] = [];
    const track = async (path: string, what: string) => {
      const here = (inFlight.get(path) ?? 0) + 1;
      assert.equal(here, 1, `two requests at once to ${path}`);
      inFlight.set(path, here);
      const total = [...inFlight.values()].reduce((a, b) => a + b, 0);
      most = Math.max(most, total);
      if (total === 1) stages.push([]);
      stages.at(-1)?.push(what);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight.set(path, 0);
    };
    const objects = new Map<string, string>();
    const store: ProbeStore = {
      async put(path, ifMatch) {
        await track(path, ifMatch === null ? "create" : "swap");
        if (ifMatch === null ? objects.has(path) : objects.get(path) !== ifMatch) return "refused";
        objects.set(path, `etag-of-${path}`);
        return `etag-of-${path}`;
      },
      async remove(path) {
        await track(path, "remove");
        objects.delete(path);
      },
    };
    assert.equal(await probeConditionalWrites(store), true);
    assert.equal(most, 3);
    assert.deepEqual(stages, [
      ["create", "create", "create"],
      ["create", "swap", "swap"],
      ["remove", "remove", "remove"],
    ]);
    assert.equal(objects.size, 0);
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

  it("is false when the server refuses even an If-Match with the object's own ETag", async () => {
    // As a server that wants the ETag quoted, or refuses every If-Match on PUT:
    // the state's updates would all fail as false conflicts.
    const objects = new Map<string, string>();
    const store: ProbeStore = {
      async put(path, ifMatch) {
        if (ifMatch !== null) return "refused";
        if (objects.has(path)) return "refused";
        objects.set(path, "abc");
        return "abc";
      },
      async remove(path) {
        objects.delete(path);
      },
    };
    assert.equal(await probeConditionalWrites(store), false);
    assert.equal(objects.size, 0);
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
    assert.equal(keys.length, 6);
    assert.equal(new Set(keys).size, 6);
    for (const key of keys) {
      assert.ok(key.startsWith(PROBE_PREFIX), key);
      assert.ok(isReservedName(key), `${key} is a reserved name: never an output or unmanaged`);
    }
  });

  it("waits for the other key's request before deleting, when one fails", async () => {
    const inFlight = new Set<string>();
    const events: string[] = [];
    let puts = 0;
    const store: ProbeStore = {
      async put(path) {
        puts += 1;
        if (puts === 2) throw new Error("503 SlowDown");
        inFlight.add(path);
        await new Promise((resolve) => setTimeout(resolve, 20));
        inFlight.delete(path);
        events.push("put done");
        return "written";
      },
      async remove(path) {
        events.push(inFlight.has(path) ? "remove while its put is in flight" : "remove");
      },
    };
    await assert.rejects(probeConditionalWrites(store), /SlowDown/);
    assert.deepEqual(events, ["put done", "put done", "remove", "remove", "remove"]);
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
    assert.equal(removed.length, 3);
    assert.equal(new Set(removed).size, 3);
  });
});
