/**
 * Bundles the command-line program (dist/src, as compiled by tsc) into
 * dist/cli with esbuild; bin/distributor.js runs dist/cli/main.js. Part of
 * `npm run build` and of `npm ci` (the `prepare` script).
 *
 * Why: Node.js 20 has no compile cache, and loading the ~170 ES modules of the
 * CLI and its dependencies one by one took 120-145 ms of every run before it
 * did any work; the bundle loads in about 60 ms (docs/performance.md, item
 * 33). The library export (dist/src/index.js) stays unbundled.
 *
 * Worker threads and helper jobs are started by URL relative to the module
 * that starts them (`new URL("./_helper-thread.js", import.meta.url)` in
 * threads.js). Written as entry points into one flat directory, next to the
 * chunks that hold the code starting them, those URLs resolve the same way in
 * the bundle. The entry points are found by looking for those URLs.
 */
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const compiled = path.join(repoRoot, "dist/src");
const outdir = path.join(repoRoot, "dist/cli");

/**
 * The CLI plus every module the compiled sources start by URL
 * (`new URL("./name.js", import.meta.url)`), found next to the module that
 * names it. The output folder is flat, so two such modules may not share a name.
 */
function entryPointsOf() {
  const entries = { main: path.join(compiled, "cli/main.js") };
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith(".js") && !entry.name.includes(".test.")) {
        const text = readFileSync(file, "utf8");
        for (const match of text.matchAll(/new URL\("\.\/([\w-]+)\.js", import\.meta\.url\)/g)) {
          const name = match[1];
          const target = path.join(dir, `${name}.js`);
          if (!statSync(target, { throwIfNoEntry: false })?.isFile()) {
            throw new Error(`${file} starts ${name}.js, which is not in ${dir}`);
          }
          if (entries[name] !== undefined && entries[name] !== target) {
            throw new Error(
              `two modules started by URL are named ${name}.js: the bundle is one folder`,
            );
          }
          entries[name] = target;
        }
      }
    }
  };
  walk(compiled);
  return entries;
}

/** version.js reads ../../package.json relative to itself: dist/cli must sit as deep as dist/src. */
function checkDepth() {
  const packageJson = path.join(outdir, "../../package.json");
  if (!statSync(packageJson, { throwIfNoEntry: false })?.isFile()) {
    throw new Error(`${packageJson} not found: the bundle must sit two levels below the package`);
  }
}

checkDepth();
// Read from the compiled, unbundled module: the bundle carries the same digest.
const { ownCodeDigest } = await import(
  pathToFileURL(path.join(compiled, "transform/_renderer-fingerprint.js")).href
);
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: repoRoot,
  entryPoints: entryPointsOf(),
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // ES module builds first, where a package has one: esbuild can then drop
  // what the CLI never calls. The AWS SDK's S3 client is otherwise taken
  // whole from its CommonJS build, every command and schema of it built when
  // the S3 driver loads: the S3 chunk was 1.09 MB and took 84-118 ms to
  // import, against 309 KB and 46-80 ms (docs/performance.md, item 45).
  mainFields: ["module", "main"],
  // The CommonJS dependencies (commander, yaml, cli-progress) require Node's
  // built-in modules, which an ES module bundle can only do through this.
  banner: {
    js: 'import { createRequire as distributorCreateRequire } from "node:module"; const require = distributorCreateRequire(import.meta.url);',
  },
  define: { DISTRIBUTOR_RENDERER_CODE_DIGEST: JSON.stringify(ownCodeDigest()) },
  logLevel: "warning",
});
