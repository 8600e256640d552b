/**
 * `run()` as a library call, for what the CLI cannot reach: a Config built by
 * hand, whose destination fails when its driver is opened. Drivers are opened
 * while the sources verify (the early state read, early-state.ts); the error
 * must come out of `run()` once, after the sources', and leave no promise
 * rejected without a handler, for any number of pipelines.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, test } from "node:test";
import { setTimeout } from "node:timers/promises";
import { loadConfig } from "../src/config/load.js";
import { DistributorError } from "../src/errors.js";
import { run } from "../src/execution/run.js";
import { cleanupTempDirs, tempDir, writeBundle, writeConfig } from "./helpers/fixtures.js";
import { SITE_FILES } from "./helpers/scenario.js";

after(cleanupTempDirs);

for (const pipelines of [1, 2, 3]) {
  test(`${pipelines} pipeline(s) and a destination that cannot be opened: one config_invalid, nothing unhandled`, async () => {
    const base = await tempDir();
    const source = path.join(base, "bundle");
    await writeBundle(source, SITE_FILES);
    const ids = Array.from({ length: pipelines }, (_, i) => `p${i}`);
    const file = await writeConfig(
      base,
      [
        "pipelines:",
        ...ids.map((id) => `  ${id}: { source: ${JSON.stringify(source)}, destinations: [web] }`),
        "destinations:",
        `  web: { storage: { type: filesystem, root: ${JSON.stringify(path.join(base, "public"))} } }`,
      ].join("\n"),
    );
    const config = await loadConfig({ file });
    // A relative root: the config loader never makes one, the driver refuses it.
    const web = config.destinations.get("web");
    assert.ok(web?.storage.type === "filesystem");
    web.storage.root = "relative/public";
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      await assert.rejects(run({ config }), (error: unknown) => {
        assert.ok(error instanceof DistributorError);
        assert.equal(error.code, "config_invalid");
        return true;
      });
      await setTimeout(20);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    assert.deepEqual(unhandled, []);
  });
}
