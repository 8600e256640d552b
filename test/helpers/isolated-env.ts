/**
 * Preloaded into the test runner and so into every test process (`node
 * --import`, see the `test` script in package.json). Each `npm test` gets one
 * temp directory, removed when the runner exits: TMPDIR points there, so the
 * bundles, roots and files the tests make under `os.tmpdir()` go with it
 * (test processes, the CLI processes they start and their threads inherit
 * it), and so does the tests' render cache, never the developer's own; a
 * developer's DISTRIBUTOR_CACHE setting does not reach the tests either.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const MARKER = "DISTRIBUTOR_TEST_ENV";

if (process.env[MARKER] === undefined) {
  const dir = mkdtempSync(path.join(tmpdir(), "distributor-tests-"));
  const cache = path.join(dir, "render-cache");
  mkdirSync(cache);
  process.env[MARKER] = "1";
  process.env.TMPDIR = dir;
  process.env.DISTRIBUTOR_CACHE_DIR = cache;
  delete process.env.DISTRIBUTOR_CACHE;
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
}
