import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { LOCK_FILE } from "../paths.js";
import { removeIfExpired, TAKEOVER_FILE, takeOver } from "./_fs-lock.js";

const STALE = '{"hostname":"h","pid":99999999,"started_at":"2026-01-01T00:00:00Z"}\n';
const MINE = '{"hostname":"h","pid":1,"started_at":"2026-01-02T00:00:00Z","lock_id":"aa"}\n';

async function withRoot(body: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "distributor-lock-"));
  try {
    await body(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

describe("stale lock takeover", () => {
  it("replaces the stale lock it judged and clears its takeover file", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), true);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), MINE);
      assert.deepEqual(await readdir(root), [LOCK_FILE]);
    }));

  it("leaves alone a lock another taker created after we judged the stale one", () =>
    withRoot(async (root) => {
      const fresh = '{"hostname":"h","pid":2,"started_at":"2026-01-03T00:00:00Z"}\n';
      await writeFile(path.join(root, LOCK_FILE), fresh);
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), false);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), fresh);
      assert.deepEqual(await readdir(root), [LOCK_FILE]);
    }));

  it("loses to a taker whose takeover file is fresh and keeps that file", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      await writeFile(path.join(root, TAKEOVER_FILE), "other taker\n");
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), false);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), STALE);
      assert.equal(await readFile(path.join(root, TAKEOVER_FILE), "utf8"), "other taker\n");
    }));

  it("clears a takeover file left by a crashed taker", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      const leftover = path.join(root, TAKEOVER_FILE);
      await writeFile(leftover, "crashed taker\n");
      const minuteAgo = new Date(Date.now() - 60_000);
      await utimes(leftover, minuteAgo, minuteAgo);
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), true);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), MINE);
      assert.deepEqual(await readdir(root), [LOCK_FILE]);
    }));

  it("clears only an expired takeover file, even when another taker replaced it meanwhile", () =>
    withRoot(async (root) => {
      // What a second taker finds if the first replaced the leftover between
      // the second's look at its age and its removal: a fresh file stays.
      const file = path.join(root, TAKEOVER_FILE);
      await writeFile(file, "fresh taker\n");
      assert.equal(await removeIfExpired(root), false);
      assert.equal(await readFile(file, "utf8"), "fresh taker\n");
      assert.deepEqual(await readdir(root), [TAKEOVER_FILE]);
      const minuteAgo = new Date(Date.now() - 60_000);
      await utimes(file, minuteAgo, minuteAgo);
      assert.equal(await removeIfExpired(root), true);
      assert.deepEqual(await readdir(root), []);
      assert.equal(await removeIfExpired(root), true, "nothing there: nothing in the way");
    }));
});
