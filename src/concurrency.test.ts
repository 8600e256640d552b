import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { eachLimit, limiter, mapLimit, type StepDone } from "./concurrency.js";

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

describe("eachLimit", () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  test("starts in order, never more than the limit, and reports each success once", async () => {
    const started: number[] = [];
    const reported: number[] = [];
    const pending: StepDone[] = [];
    let settled = false;
    const all = eachLimit(
      7,
      3,
      (index, done) => {
        started.push(index);
        pending.push(done);
      },
      (index) => reported.push(index),
    ).then(() => {
      settled = true;
    });
    assert.deepEqual(started, [0, 1, 2], "three start at once");
    pending[1]?.();
    assert.deepEqual(started, [0, 1, 2, 3], "an ended step frees its place at once");
    assert.deepEqual(reported, [1]);
    // Each ended in turn, step 1 a second time: that call does not count.
    for (let i = 0; i < 7; i++) {
      await turn();
      assert.equal(settled, false, `not settled while step ${i} runs`);
      pending[i]?.();
    }
    await all;
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(reported, [1, 0, 2, 3, 4, 5, 6]);
  });

  test("steps that end before start returns run one after another, without recursion", async () => {
    let most = 0;
    let depth = 0;
    const reported: number[] = [];
    await eachLimit(
      100_000,
      4,
      (_index, done) => {
        depth++;
        most = Math.max(most, depth);
        done();
        depth--;
      },
      (index) => reported.push(index),
    );
    assert.equal(reported.length, 100_000);
    assert.equal(reported[99_999], 99_999);
    assert.equal(most, 1, "each step ran from the loop, not from inside another");
  });

  test("after a failure nothing new starts, and it rejects once the started steps ended", async () => {
    const started: number[] = [];
    const pending = new Map<number, StepDone>();
    let outcome: unknown = "pending";
    const all = eachLimit(10, 3, (index, done) => {
      started.push(index);
      pending.set(index, done);
    }).then(
      () => "resolved",
      (error: unknown) => error,
    );
    void all.then((value) => {
      outcome = value;
    });
    const boom = new Error("boom");
    pending.get(1)?.(boom);
    await turn();
    assert.deepEqual(started, [0, 1, 2], "no step started after the failure");
    assert.equal(outcome, "pending", "steps 0 and 2 are still running");
    pending.get(0)?.();
    pending.get(2)?.(new Error("later"));
    assert.equal(await all, boom, "the first failure is the one reported");
    assert.deepEqual(started, [0, 1, 2]);
  });

  test("a throw from start or from onDone is a failure too", async () => {
    const thrown = new Error("start threw");
    const ran: number[] = [];
    await assert.rejects(
      eachLimit(5, 1, (index, done) => {
        ran.push(index);
        if (index === 2) throw thrown;
        done();
      }),
      (error) => error === thrown,
    );
    assert.deepEqual(ran, [0, 1, 2]);
    await assert.rejects(
      eachLimit(
        5,
        2,
        (_index, done) => done(),
        (index) => {
          if (index === 1) throw new Error("progress threw");
        },
      ),
      /progress threw/,
    );
  });

  test("nothing to do resolves; a limit below one is refused", async () => {
    let called = false;
    await eachLimit(0, 4, () => {
      called = true;
    });
    assert.equal(called, false);
    await assert.rejects(
      eachLimit(1, 0, (_i, done) => done()),
      RangeError,
    );
  });
});
