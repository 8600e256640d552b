import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { StorageDriver } from "../storage/driver.js";
import { createFilesystemDriver } from "../storage/filesystem.js";
import { withLocks } from "./locks.js";

test("a lock that cannot be released is reported, and the body's result stands", async (t) => {
  const root = await mkdtemp(path.join(os.tmpdir(), "distributor-locks-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const real = createFilesystemDriver({ root });
  // As expired credentials or a read-only bucket policy would refuse the DELETE.
  const driver: StorageDriver = {
    ...real,
    acquireLock: async (options) => {
      const handle = await real.acquireLock(options);
      return {
        holder: handle.holder,
        release: async () => {
          throw new Error("AccessDenied: simulated");
        },
      };
    },
  };
  const warnings: string[] = [];
  const result = await withLocks([driver], async () => "done", {
    onWarning: (message) => warnings.push(message),
  });
  assert.equal(result, "done");
  assert.deepEqual(warnings, [
    `warning: could not release the lock of ${root} (AccessDenied: simulated); once no run holds it, delete its .distributor.lock by hand`,
  ]);
  // It really is still there: the warning is the operator's only sign of it.
  assert.match(await readFile(path.join(root, ".distributor.lock"), "utf8"), /"pid"/);
});
