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

test("an S3 prefix too long for distributor's own keys stops the run before any request, dry run included", async () => {
  const base = await tempDir();
  const source = path.join(base, "bundle");
  await writeBundle(source, SITE_FILES);
  // 999 bytes of clean path: every output key fits (the longest, 1,016
  // bytes), but the probe's key (35 bytes more than the prefix) would not.
  const prefix = Array.from({ length: 10 }, () => "y".repeat(99)).join("/");
  assert.equal(prefix.length, 999);
  const file = await writeConfig(
    base,
    [
      "pipelines:",
      `  site: { source: ${JSON.stringify(source)}, destinations: [bucket] }`,
      "destinations:",
      // Port 9 (discard) answers no S3 request: any request would fail otherwise.
      `  bucket: { storage: { type: s3, bucket: b, prefix: ${JSON.stringify(prefix)}, endpoint: "http://127.0.0.1:9", force_path_style: true, region: us-east-1 } }`,
    ].join("\n"),
  );
  const config = await loadConfig({ file });
  for (const dryRun of [true, false]) {
    await assert.rejects(run({ config, dryRun }), (error: unknown) => {
      assert.ok(error instanceof DistributorError);
      assert.equal(error.code, "storage_error");
      assert.match(
        error.message,
        /cannot hold distributor's own objects: its key prefix is 1000 bytes, and .* need keys of up to 1035 bytes, where S3 keys hold at most 1024/,
      );
      return true;
    });
  }
});
