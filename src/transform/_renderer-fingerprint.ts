/**
 * A digest of everything that decides how `markdown_to_html` renders, for the
 * render cache's keys: when it changes, every cached digest is left unused
 * (nothing has to be cleared by hand after an upgrade, or while developing).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DISTRIBUTOR_VERSION } from "../version.js";

/** The transform's own modules (compiled), next to this one. */
const RENDERER_MODULES = [
  "markdown-to-html.js",
  "_gfm-autolinks.js",
  "links.js",
  "style.js",
  "planned-outputs.js",
  "_render-job.js",
];

/**
 * Set by the CLI bundle (scripts/bundle-cli.mjs) to what `ownCodeDigest`
 * returns in dist/src when it is built: a bundle has no RENDERER_MODULES
 * files next to it, and it carries exactly the code they held. markdown-it
 * is not in the bundle (it is loaded from node_modules when a run renders),
 * so its version and its dependencies' are looked up on every run, by the
 * CLI as by the library: an upgrade of any of them after the build changes
 * the keys, and no render of the older code is reused.
 */
declare const DISTRIBUTOR_RENDERER_CODE_DIGEST: string | undefined;

interface PackageJson {
  name?: string;
  version?: string;
  dependencies?: Record<string, string>;
}

/**
 * The package.json of package `name` as resolved from the file `from`, found
 * above its entry point (not every package exports its package.json).
 */
function packageOf(from: string, name: string): { entry: string; pkg: PackageJson } | undefined {
  let entry: string;
  try {
    entry = createRequire(from).resolve(name);
  } catch {
    return undefined;
  }
  for (let dir = path.dirname(entry); path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as PackageJson;
      if (pkg.name === name) return { entry, pkg };
    } catch {
      // no package.json at this level
    }
  }
  return undefined;
}

/** SHA-256 (hex) of the transform's own compiled modules (in the CLI bundle: baked in). */
export function ownCodeDigest(): string {
  if (typeof DISTRIBUTOR_RENDERER_CODE_DIGEST === "string") return DISTRIBUTOR_RENDERER_CODE_DIGEST;
  const hash = createHash("sha256");
  const here = fileURLToPath(import.meta.url);
  for (const module of RENDERER_MODULES) {
    try {
      hash.update(readFileSync(path.join(path.dirname(here), module)));
    } catch {
      hash.update(`missing ${module}`);
    }
  }
  return hash.digest("hex");
}

/**
 * SHA-256 (hex) of the renderer's code: its own modules (ownCodeDigest), and
 * the versions of markdown-it and its direct dependencies as installed now.
 * Something that cannot be found counts as a fixed marker: the rest still
 * changes the digest on every upgrade. Finding the packages takes 5-11 ms of
 * a run that renders.
 */
export function rendererCodeDigest(): string {
  const hash = createHash("sha256");
  hash.update(ownCodeDigest());
  const here = fileURLToPath(import.meta.url);
  const markdownIt = packageOf(here, "markdown-it");
  hash.update(`\0markdown-it@${markdownIt?.pkg.version}`);
  for (const dependency of Object.keys(markdownIt?.pkg.dependencies ?? {}).sort()) {
    const version = markdownIt && packageOf(markdownIt.entry, dependency)?.pkg.version;
    hash.update(`\0${dependency}@${version}`);
  }
  return hash.digest("hex");
}

/** The renderer's code (rendererCodeDigest), the distributor version and the Node.js version. */
function computeFingerprint(): string {
  const hash = createHash("sha256");
  hash.update(`${DISTRIBUTOR_VERSION}\0${process.version}\0`);
  hash.update(rendererCodeDigest());
  return hash.digest("hex");
}

let fingerprint: string | undefined;

export function rendererFingerprint(): string {
  fingerprint ??= computeFingerprint();
  return fingerprint;
}
