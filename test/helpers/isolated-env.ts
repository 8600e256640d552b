/**
 * Preloaded into the test runner and so into every test process (`node
 * --import`, see the `test` script in package.json). The tests' render cache
 * goes to one temp directory per `npm test`, removed when the runner exits,
 * never to the developer's own cache; a developer's DISTRIBUTOR_CACHE setting
 * does not reach the tests either. CLI processes the tests start inherit it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const MARKER = "DISTRIBUTOR_TEST_ENV";

if (process.env[MARKER] === undefined) {
  const dir = mkdtempSync(path.join(tmpdir(), "distributor-test-cache-"));
  process.env[MARKER] = "1";
  process.env.DISTRIBUTOR_CACHE_DIR = dir;
  delete process.env.DISTRIBUTOR_CACHE;
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
}
