import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { limiter, mapLimit } from "./concurrency.js";

/** A promise and its resolve, to finish calls in a chosen order. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe("limiter", () => {
  test("runs at most `limit` calls at once, the others in the order they came", async () => {
    const run = limiter(2);
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    let running = 0;
    let most = 0;
    const calls = gates.map((g, i) =>
      run(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await g.promise;
        running--;
        return i;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1], "two start, three wait");
    gates[1]?.open();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1, 2], "the first waiter takes the freed place");
    for (const g of gates) g.open();
    assert.deepEqual(await Promise.all(calls), [0, 1, 2, 3, 4]);
    assert.equal(most, 2);
  });

  test("a call that throws frees its place", async () => {
    const run = limiter(1);
    const failing = run(async () => {
      throw new Error("boom");
    });
    const next = run(async () => "ran");
    await assert.rejects(failing, /boom/);
    assert.equal(await next, "ran");
    assert.equal(await run(async () => "and again"), "and again");
  });
});

describe("mapLimit", () => {
  test("keeps order and never runs more than the limit", async () => {
    let running = 0;
    let most = 0;
    const out = await mapLimit(
      Array.from({ length: 20 }, (_, i) => i),
      async (i) => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        return i * 2;
      },
      { limit: 3 },
    );
    assert.deepEqual(
      out,
      Array.from({ length: 20 }, (_, i) => i * 2),
    );
    assert.equal(most, 3);
  });
});
