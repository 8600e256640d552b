import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { BusyLockError, LockedError } from "../errors.js";
import { LOCK_FILE } from "../paths.js";
import {
  acquireFsLock,
  describeFsLock,
  retryOnce,
  takeOver,
  takeoverFileName,
} from "./_fs-lock.js";
import { deadPid } from "./_lock.fixtures.js";
import { UNREADABLE_LOCK_HOLDER } from "./_lock-file.js";

const STALE = '{"hostname":"h","pid":99999999,"started_at":"2026-01-01T00:00:00Z"}\n';
const MINE = '{"hostname":"h","pid":1,"started_at":"2026-01-02T00:00:00Z","lock_id":"aa"}\n';

/** A takeover file as a taker writes it: its pid and a random part. */
const takerFile = (pid: number) => `${pid} 0123456789abcdef\n`;

/** A takeover file as a crashed taker leaves it. */
async function leftBehind(root: string, name: string): Promise<void> {
  await writeFile(path.join(root, name), takerFile(deadPid()));
}

async function withRoot(body: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "distributor-lock-"));
  try {
    await body(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

describe("a lock that vanished before its holder was read", () => {
  const mine = {
    holder: { hostname: "h", pid: 1, started_at: "2026-01-02T00:00:00Z" },
    lockId: "aa",
    content: MINE,
  };

  it("is created again; refused again, it names the new holder, or the root is busy if that one is gone too", () =>
    withRoot(async (root) => {
      const lock = await retryOnce(root, mine);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), MINE);
      // Now held (by `lock`): the next run's create is refused and names it.
      await assert.rejects(retryOnce(root, { ...mine, lockId: "bb" }), (error: unknown) => {
        assert.ok(error instanceof LockedError && !(error instanceof BusyLockError));
        assert.deepEqual(error.holder, mine.holder);
        return true;
      });
      // Released again before that run's read of the holder.
      await assert.rejects(
        retryOnce(root, { ...mine, lockId: "bb" }, async () => null),
        (error: unknown) => {
          assert.ok(error instanceof BusyLockError);
          assert.equal(error.holder, null);
          assert.doesNotMatch(error.message, /unreadable|remove/);
          return true;
        },
      );
      await lock.release();
    }));
});

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

  it("loses to a live taker's takeover file and keeps it, also when this host's clock is off", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      const theirs = takeoverFileName(STALE, 0);
      await writeFile(path.join(root, theirs), takerFile(process.ppid));
      for (const skew of [0, 60_000]) {
        const clock = () => Date.now() + skew;
        assert.equal(await takeOver(root, { staleText: STALE, content: MINE }, clock), false);
      }
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), STALE);
      assert.equal(await readFile(path.join(root, theirs), "utf8"), takerFile(process.ppid));
      // Older than any takeover: its pid was reused by another process.
      const later = () => Date.now() + 11 * 60_000;
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }, later), true);
    }));

  it("judges a takeover file that names no taker by its age", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      await writeFile(path.join(root, takeoverFileName(STALE, 0)), "");
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), false);
      const later = () => Date.now() + 11_000;
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }, later), true);
      assert.deepEqual(await readdir(root), [LOCK_FILE]);
    }));

  it("passes over takeover files crashed takers left, and the new holder removes them", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      for (const attempt of [0, 1]) await leftBehind(root, takeoverFileName(STALE, attempt));
      // A taker of another lock, long replaced, left one too.
      await leftBehind(root, takeoverFileName("another lock", 0));
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), true);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), MINE);
      assert.deepEqual(await readdir(root), [LOCK_FILE]);
    }));

  it("loses to a live taker past the same crashed one, and keeps both files", () =>
    withRoot(async (root) => {
      await writeFile(path.join(root, LOCK_FILE), STALE);
      await leftBehind(root, takeoverFileName(STALE, 0));
      await writeFile(path.join(root, takeoverFileName(STALE, 1)), takerFile(process.ppid));
      assert.equal(await takeOver(root, { staleText: STALE, content: MINE }), false);
      assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), STALE);
      assert.equal((await readdir(root)).length, 3);
    }));

  it("of takers that all find a crashed taker's file, exactly one replaces the lock", () =>
    withRoot(async (root) => {
      for (let round = 0; round < 20; round++) {
        await writeFile(path.join(root, LOCK_FILE), STALE);
        await leftBehind(root, takeoverFileName(STALE, 0));
        const contents = [0, 1, 2, 3].map((i) => MINE.replace('"aa"', `"t${i}"`));
        const won = await Promise.all(
          contents.map((content) => takeOver(root, { staleText: STALE, content })),
        );
        assert.equal(won.filter(Boolean).length, 1, `round ${round}: ${won}`);
        const winner = contents[won.indexOf(true)];
        assert.equal(await readFile(path.join(root, LOCK_FILE), "utf8"), winner);
        await rm(path.join(root, LOCK_FILE));
        for (const name of await readdir(root)) await rm(path.join(root, name));
      }
    }));
});

describe("a lock that is not a regular file", () => {
  // A fifo made every run and `status` wait forever in open(); a link to
  // /dev/zero failed with "Invalid string length". Both are held by an
  // unknown holder: nothing here wrote them, and nothing may remove them.
  for (const [what, plant] of [
    ["a fifo", (file: string) => execFileSync("mkfifo", [file])],
    ["a link to /dev/zero", (file: string) => symlinkSync("/dev/zero", file)],
    ["a file larger than any lock", (file: string) => writeFileSync(file, "x".repeat(70_000))],
  ] as const) {
    // The timeout turns a regression (a hang in open()) into a failure.
    it(`${what} is locked by an unknown holder, at once`, { timeout: 10_000 }, () =>
      withRoot(async (root) => {
        plant(path.join(root, LOCK_FILE));
        assert.deepEqual(await describeFsLock(root), UNREADABLE_LOCK_HOLDER);
        await assert.rejects(acquireFsLock(root), (error: unknown) => {
          assert.ok(error instanceof LockedError, String(error));
          assert.match(error.message, /unknown holder/);
          return true;
        });
        assert.deepEqual(await readdir(root), [LOCK_FILE], "left as it was");
      }),
    );
  }
});
