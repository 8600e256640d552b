/**
 * A real published root shared by two owners, for the maintenance command tests
 * (reconcile-state, verify, prune): pipelines `alpha` and `beta` publish into the
 * same directory through destinations `site-a` and `site-b`, with `run` run as a
 * process, and then unmanaged files are dropped in by hand.
 */
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { classifyState } from "../../src/state/read.js";
import type { CatalogState } from "../../src/state/types.js";
import { runCli, tempDir, writeBundle, writeConfig } from "./fixtures.js";

export const ALPHA = ["--pipeline", "alpha", "--destination", "site-a"] as const;
export const BETA = ["--pipeline", "beta", "--destination", "site-b"] as const;

/** Dropped in by hand after publishing: nobody's outputs. */
export const UNMANAGED = ["handmade.txt", "alpha/stray.txt", "loose/notes.md"];

export interface PublishedRoot {
  /** Working directory holding distributor.yaml, the bundles and `public/`. */
  dir: string;
  /** The shared destination root. */
  root: string;
  alphaFiles: string[];
  betaFiles: string[];
}

export interface PublishOptions {
  /** Files of alpha's bundle (paths under `alpha/`). Default: three small files. */
  alpha?: Record<string, string>;
  /** YAML for site-a's `retention:` (indented by the caller), e.g. `prune: { max_age: 1d }`. */
  retentionA?: string;
}

/** Publish both owners into one root with `distributor run`, then add the unmanaged files. */
export async function publishTwoOwners(options: PublishOptions = {}): Promise<PublishedRoot> {
  const dir = await tempDir("distributor-maint-");
  const alpha = options.alpha ?? {
    "alpha/one.txt": "one\n",
    "alpha/two.txt": "two\n",
    "alpha/deep/three.txt": "three\n",
  };
  const beta = { "beta/b1.txt": "b1\n", "beta/b2.txt": "b2\n" };
  await writeBundle(path.join(dir, "bundle-alpha"), alpha, { id: "alpha.bundle" });
  await writeBundle(path.join(dir, "bundle-beta"), beta, { id: "beta.bundle" });
  const retention = options.retentionA ? `\n    retention:\n      ${options.retentionA}` : "";
  await writeConfig(
    dir,
    `pipelines:
  alpha: { source: ./bundle-alpha, destinations: [site-a] }
  beta: { source: ./bundle-beta, destinations: [site-b] }
destinations:
  site-a:
    storage: { type: filesystem, root: ./public }${retention}
  site-b:
    storage: { type: filesystem, root: ./public }
    retention:
      prune: { max_age: 1s }
`,
  );
  const published = await runCli(["run"], { cwd: dir });
  assert.equal(published.code, 0, `run failed:\n${published.stdout}\n${published.stderr}`);
  const root = path.join(dir, "public");
  for (const relative of UNMANAGED) {
    await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
    await writeFile(path.join(root, relative), `unmanaged ${relative}\n`);
  }
  return { dir, root, alphaFiles: Object.keys(alpha).sort(), betaFiles: Object.keys(beta).sort() };
}

/** The state file's exact bytes and mtime: "not rewritten" means both are unchanged. */
export async function stateFingerprint(root: string): Promise<{ bytes: string; mtimeMs: number }> {
  const file = path.join(root, ".distributor.json");
  return { bytes: await readFile(file, "utf8"), mtimeMs: (await stat(file)).mtimeMs };
}

/** Read and classify the state; fails the test unless it is a complete valid state. */
export async function readValidState(root: string): Promise<CatalogState> {
  const classified = classifyState({ bytes: await readFile(path.join(root, ".distributor.json")) });
  assert.equal(
    classified.class,
    "valid",
    `state is ${classified.class}: ${"reason" in classified ? classified.reason : ""}`,
  );
  return (classified as { state: CatalogState }).state;
}

/** Paths of the records owned by (pipeline, destination). */
export function ownedPaths(state: CatalogState, pipeline: string, destination: string): string[] {
  return state.outputs
    .filter((record) => record.pipeline_id === pipeline && record.destination_id === destination)
    .map((record) => record.path)
    .sort();
}

/** Write a state file by hand (invalid, legacy, unsupported cases). */
export async function writeStateBytes(root: string, text: string): Promise<void> {
  await mkdir(root, { recursive: true });
  await writeFile(path.join(root, ".distributor.json"), text);
}
