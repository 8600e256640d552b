/**
 * A signal while an apply step is in flight: the handler waits for the step,
 * and the lock must be released even though `withLocks`, whose body ends with
 * that step, starts releasing it at the same moment. A second SIGINT/SIGTERM
 * meanwhile (an impatient Ctrl-C) must not kill the process with its locks
 * held: it is reported, and the first signal's shutdown goes on. Run in a
 * child process, since the handlers are for the whole process.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { after, test } from "node:test";
import { cleanupTempDirs, tempDir } from "./helpers/fixtures.js";

after(cleanupTempDirs);

const locks = new URL("../src/execution/locks.js", import.meta.url).href;
const filesystem = new URL("../src/storage/filesystem.js", import.meta.url).href;

// Holds the lock of argv[2] while one apply step takes 1.5 s, and signals
// itself (argv[1]) once or, with argv[3], twice while that step is in flight.
const CHILD = `
import { installSignalHandlers, unlessStopped, withLocks } from ${JSON.stringify(locks)};
import { createFilesystemDriver } from ${JSON.stringify(filesystem)};
const [signal, root, twice] = process.argv.slice(1);
installSignalHandlers(
  (s) => process.stderr.write("first " + s + "\\n"),
  (s) => process.stderr.write("again " + s + "\\n"),
  async (s) => process.stderr.write("last words " + s + "\\n"),
);
await withLocks([createFilesystemDriver({ root })], () =>
  unlessStopped(async () => {
    process.kill(process.pid, signal);
    await new Promise((resolve) => setTimeout(resolve, 200));
    if (twice) process.kill(process.pid, signal);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    process.stderr.write("step done\\n");
  }),
);
`;

for (const [signal, exitCode] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  for (const twice of [false, true]) {
    const name = twice
      ? `a second ${signal} during shutdown is reported, and the lock is still released`
      : `${signal} during an apply step releases the lock once the step ends`;
    test(name, async () => {
      const root = path.join(await tempDir("distributor-signal-step-"), "root");
      const args = ["--input-type=module", "--eval", CHILD, signal, root];
      const child = spawn(process.execPath, twice ? [...args, "twice"] : args, {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      const [code, killedBy] = await once(child, "exit");
      assert.equal(killedBy, null, `killed by ${killedBy}: ${stderr}`);
      assert.equal(code, exitCode, stderr);
      // The last words (the CLI's --json document) come after the step, before the exit.
      const expected = twice
        ? [`first ${signal}`, `again ${signal}`, "step done", `last words ${signal}`]
        : [`first ${signal}`, "step done", `last words ${signal}`];
      assert.deepEqual(stderr.split("\n").filter(Boolean), expected);
      // The lock is gone, and with it the root that taking the lock created.
      assert.deepEqual(await readdir(path.dirname(root)), [], "the lock was released");
    });
  }
}
