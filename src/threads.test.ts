import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { threadId } from "node:worker_threads";
import { hasIdleHelper, helperCounts, onHelperOrHere, stopIdleHelpers } from "./threads.js";

const JOB = new URL("./threads.fixtures.js", import.meta.url);

function threadOf(input: object): Promise<number> {
  return onHelperOrHere(
    JOB,
    input,
    (value) => ((value as { threadId?: unknown }).threadId as number | null) ?? null,
    () => threadId,
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
