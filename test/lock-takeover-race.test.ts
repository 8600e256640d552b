/**
 * Three processes take over one stale lock at once, with a takeover file a
 * crashed taker left behind: system calls are slowed down (a preload that
 * wraps node:fs/promises) to open the windows in which, when takers cleared
 * such a file by moving it aside and linking it back, a live taker's file was
 * lost and two takers both replaced the lock. Whatever the interleaving, at
 * most one may end up holding the lock, and one does.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { LOCK_FILE } from "../src/paths.js";
import { takeoverFileName } from "../src/storage/_fs-lock.js";
import { REPO_ROOT } from "./helpers/fixtures.js";
import { deadPid, lockText } from "./helpers/scenario.js";

/** Slows the first matching calls: DELAYS = [[function, path suffix, ms, calls to let through first]]. */
const PRELOAD = `
import fsp from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
const rules = JSON.parse(process.env.DELAYS || "[]");
for (const fn of ["rename", "unlink", "link"]) {
  const original = fsp[fn];
  fsp[fn] = async function (...args) {
    const target = String(fn === "link" ? args[1] : args[0]);
    for (const rule of rules) {
      if (rule[0] !== fn || !target.endsWith(rule[1]) || rule.used) continue;
      if ((rule[3] ?? 0) > 0) { rule[3]--; continue; }
      rule.used = true;
      await new Promise((resolve) => setTimeout(resolve, rule[2]));
    }
    return original.apply(this, args);
  };
}
syncBuiltinESMExports();
`;

const TAKER = `
import { acquireFsLock } from ${JSON.stringify(pathToFileURL(path.join(REPO_ROOT, "dist/src/storage/_fs-lock.js")).href)};
try {
  const handle = await acquireFsLock(process.argv[2]);
  process.stdout.write("acquired");
  await new Promise((resolve) => setTimeout(resolve, 2500));
  await handle.release();
} catch (error) {
  process.stdout.write(error.code ?? String(error));
}
`;

function taker(dir: string, root: string, delays: unknown[]): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      pathToFileURL(path.join(dir, "preload.mjs")).href,
      path.join(dir, "taker.mjs"),
      root,
    ],
    {
      env: { ...process.env, DELAYS: JSON.stringify(delays) },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve) => child.on("close", () => resolve(out)));
}

describe("stale lock takeover, three takers and a left takeover file", () => {
  it("never lets two of them hold the lock", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-takeover-race-"));
    try {
      await writeFile(path.join(dir, "preload.mjs"), PRELOAD);
      await writeFile(path.join(dir, "taker.mjs"), TAKER);
      const root = path.join(dir, "root");
      await mkdir(root);
      const stale = lockText(await deadPid());
      await writeFile(path.join(root, LOCK_FILE), stale);
      const left = path.join(root, takeoverFileName(stale, 0));
      // As a taker that crashed leaves it: its (dead) pid and a random part.
      await writeFile(left, `${await deadPid()} 0123456789abcdef\n`);

      // C is slow to create its takeover file, B and D to remove the stale lock.
      const c = taker(dir, root, [["link", "-1", 600]]);
      await delay(150);
      const b = taker(dir, root, [["unlink", LOCK_FILE, 1500]]);
      await delay(850);
      const d = taker(dir, root, [["unlink", LOCK_FILE, 1500]]);
      const outcomes = await Promise.all([c, b, d]);
      const holders = outcomes.filter((outcome) => outcome === "acquired");
      // The taker whose takeover file came first wins; the others see it at work.
      assert.equal(holders.length, 1, `takers: ${outcomes.join(", ")}`);
      for (const outcome of outcomes) assert.match(outcome, /^(acquired|locked)$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
