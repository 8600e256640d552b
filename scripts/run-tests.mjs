// Runs every compiled test file (dist/**/*.test.js) with Node's built-in runner,
// preloading the isolated environment (test/helpers/isolated-env.ts).
//
// The files are listed here rather than by handing `dist/` to `node --test`:
// Node.js 20 searches a directory argument for tests, but Node.js 22 reads
// every argument as a file or glob and fails on a directory, and package.json
// promises Node.js 20 or later. Listing `*.test.js` also keeps helper modules
// (dist/test/helpers/, the S3 server's starter) from being run as test files,
// which Node.js 20's directory search did (its patterns take every file under
// a `test` folder).
//
// Usage: node scripts/run-tests.mjs [runner options] [test files]
// With no files, every test file under dist/ runs.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(repo, "dist");

/** Every `*.test.js` under `dir`, as paths relative to the repository, sorted. */
function testFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(full));
    else if (entry.isFile() && entry.name.endsWith(".test.js")) {
      found.push(path.relative(repo, full));
    }
  }
  return found.sort();
}

const args = process.argv.slice(2);
const options = args.filter((arg) => arg.startsWith("-"));
const named = args.filter((arg) => !arg.startsWith("-"));
const files = named.length > 0 ? named : testFiles(dist);
if (files.length === 0) {
  console.error("no test files under dist/: run `npm run build` first");
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "./dist/test/helpers/isolated-env.js",
    "--test",
    "--test-concurrency=2",
    ...options,
    ...files,
  ],
  { cwd: repo, stdio: "inherit" },
);
if (result.error) {
  console.error(`could not start the test runner: ${result.error.message}`);
  process.exit(1);
}
// A runner killed by a signal has no exit status: that is a failure too.
process.exit(result.status ?? 1);
