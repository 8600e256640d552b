import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { threadId } from "node:worker_threads";
import {
  FollowUp,
  hasIdleHelper,
  helperCounts,
  onHelperOrHere,
  stopIdleHelpers,
} from "./threads.js";

const JOB = new URL("./threads.fixtures.js", import.meta.url);

function threadOf(input: object, followUp?: FollowUp): Promise<number> {
  return onHelperOrHere(
    JOB,
    input,
    (value) => ((value as { threadId?: unknown }).threadId as number | null) ?? null,
    () => threadId,
    followUp,
  );
}

describe("helper threads", () => {
  test("a job runs on a helper thread, which the next job reuses", async () => {
    const before = { ...helperCounts };
    const first = await threadOf({});
    assert.notEqual(first, threadId, "not on this thread");
    assert.equal(hasIdleHelper(), true);
    assert.equal(await threadOf({}), first, "the same, already started thread");
    assert.equal(helperCounts.onThreads - before.onThreads, 2);
    assert.equal(helperCounts.here - before.here, 0);
  });

  test("a job's input is not kept here while its helper works on it", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    let sent: WeakRef<object> | undefined;
    const running = (() => {
      // A shard of 100,000 files is tens of megabytes.
      const input = { waitMs: 1000, padding: new Array(100_000).fill("x") };
      sent = new WeakRef(input);
      return threadOf(input);
    })();
    await sleep(200);
    gc();
    assert.equal(sent?.deref(), undefined, "collected while the job runs");
    assert.notEqual(await running, threadId);
  });

  test("jobs started together run on distinct threads", async () => {
    const ids = await Promise.all([1, 2, 3].map(() => threadOf({ waitMs: 100 })));
    assert.equal(new Set(ids).size, 3);
    assert.ok(!ids.includes(threadId));
  });

  for (const fail of ["throw", "exit"] as const) {
    test(`a job whose helper fails (${fail}) runs here instead`, async () => {
      const before = { ...helperCounts };
      assert.equal(await threadOf({ fail }), threadId);
      assert.equal(helperCounts.here - before.here, 1);
      assert.equal(helperCounts.onThreads - before.onThreads, 0);
      assert.notEqual(await threadOf({}), threadId, "later jobs use helpers again");
    });
  }

  test("an input that cannot be sent to a thread, or an answer accept throws on, runs here", async () => {
    const before = { ...helperCounts };
    const unsendable = { fn: () => 1 };
    assert.equal(
      await onHelperOrHere(
        JOB,
        unsendable,
        () => 0,
        () => threadId,
      ),
      threadId,
    );
    const throwing = () => {
      throw new Error("accept failed");
    };
    assert.equal(await onHelperOrHere(JOB, {}, throwing, () => threadId), threadId);
    assert.equal(helperCounts.here - before.here, 2);
    assert.notEqual(await threadOf({}), threadId, "later jobs use helpers again");
  });

  test("stopIdleHelpers ends the waiting threads; the next job starts a new one", async () => {
    const first = await threadOf({});
    assert.equal(hasIdleHelper(), true);
    stopIdleHelpers();
    assert.equal(hasIdleHelper(), false);
    const next = await threadOf({});
    assert.notEqual(next, threadId);
    assert.notEqual(next, first, "a new thread");
  });

  test("an error of the job here reaches the caller", async () => {
    await assert.rejects(
      onHelperOrHere(
        JOB,
        { fail: "throw" },
        () => null,
        () => {
          throw new Error("here too");
        },
      ),
      /here too/,
    );
  });
});

describe("follow-ups", () => {
  test("a helper runs the follow-up sent after its job, and answers its job only then", async () => {
    const followUp = new FollowUp();
    let answered = false;
    const job = threadOf({}, followUp).then((id) => {
      answered = true;
      return id;
    });
    await sleep(200);
    assert.equal(answered, false, "the job waits for its follow-up");
    followUp.send(JOB, { waitMs: 50 });
    const helper = await job;
    assert.notEqual(helper, threadId);
    assert.deepEqual(followUp.answer(), { threadId: helper }, "run on the job's helper");
    assert.equal(hasIdleHelper(), true, "and the helper is free again");
  });

  test("a follow-up sent before the job ends runs as well", async () => {
    const followUp = new FollowUp();
    const job = threadOf({ waitMs: 100 }, followUp);
    followUp.send(JOB, {});
    const helper = await job;
    assert.deepEqual(followUp.answer(), { threadId: helper });
  });

  test("a cancelled follow-up lets the job answer, with nothing else", async () => {
    const followUp = new FollowUp();
    const job = threadOf({}, followUp);
    await sleep(100);
    followUp.cancel();
    followUp.send(JOB, {});
    assert.notEqual(await job, threadId);
    assert.equal(followUp.answer(), undefined, "a send after cancel does nothing");
  });

  test("a follow-up that fails, or cannot be sent, answers nothing; the job's answer stands", async () => {
    for (const input of [{ fail: "throw" }, { notCloneable: () => 1 }]) {
      const before = { ...helperCounts };
      const followUp = new FollowUp();
      const job = threadOf({}, followUp);
      followUp.send(JOB, input);
      assert.notEqual(await job, threadId);
      assert.equal(followUp.answer(), undefined);
      assert.equal(helperCounts.onThreads - before.onThreads, 1, "the job was not redone here");
    }
  });

  test("a follow-up whose helper dies has the job redone here", async () => {
    const followUp = new FollowUp();
    const job = threadOf({}, followUp);
    followUp.send(JOB, { fail: "exit" });
    assert.equal(await job, threadId);
    assert.equal(followUp.answer(), undefined);
  });
});

describe("work claims", () => {
  test("front and back together take every item once, and the back can refuse", async () => {
    const { hasWork, newWorkClaims, takeBack, takeFront } = await import("./threads.js");
    const claims = newWorkClaims(7);
    assert.equal(hasWork(claims), true);
    assert.equal(takeFront(claims), 0);
    assert.equal(takeBack(claims), 6);
    assert.equal(
      takeBack(claims, (index) => index !== 5),
      undefined,
      "refused item 5",
    );
    assert.equal(takeFront(claims), 1);
    assert.equal(takeBack(claims), 5);
    const rest = [takeFront(claims), takeFront(claims), takeBack(claims), takeFront(claims)];
    assert.deepEqual(rest, [2, 3, 4, undefined]);
    assert.equal(takeBack(claims), undefined);
    assert.equal(hasWork(claims), false);
    assert.equal(hasWork(newWorkClaims(0)), false);
  });

  test("a helper thread at the front and this one at the back never take the same item", async () => {
    const { Worker } = await import("node:worker_threads");
    const { newWorkClaims, takeBack } = await import("./threads.js");
    const count = 1_000_000;
    const claims = newWorkClaims(count);
    const url = new URL("./threads.js", import.meta.url).href;
    const worker = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       import(${JSON.stringify(url)}).then(({ takeFront }) => {
         parentPort.postMessage("ready");
         const taken = [];
         for (let i = takeFront(workerData); i !== undefined; i = takeFront(workerData)) taken.push(i);
         parentPort.postMessage(taken);
       });`,
      { eval: true, workerData: claims },
    );
    const messages: unknown[] = [];
    const front = new Promise<number[]>((resolve) =>
      worker.on("message", (message) => {
        messages.push(message);
        if (Array.isArray(message)) resolve(message as number[]);
      }),
    );
    // Start once the helper is taking, so that the two really overlap.
    while (messages.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const back: number[] = [];
    for (let i = takeBack(claims); i !== undefined; i = takeBack(claims)) back.push(i);
    const fromFront = await front;
    await worker.terminate();
    assert.ok(
      fromFront.length > 0 && back.length > 0,
      `both took some (${fromFront.length} / ${back.length})`,
    );
    // The front took 0..k-1 in order, the back count-1 down to k.
    assert.deepEqual(
      fromFront,
      Array.from({ length: fromFront.length }, (_, i) => i),
    );
    assert.equal(fromFront.length + back.length, count);
    assert.equal(back.at(-1), fromFront.length);
  });
});
