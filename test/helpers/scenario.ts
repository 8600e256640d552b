/**
 * Scenario builders for the CLI end-to-end suites: a temp directory holding a
 * config file, one or more bundles and destination roots, and small readers for
 * what a run left behind. Built on fixtures.ts; nothing here mocks the program.
 */
import { lstat, readFile, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  type CliResult,
  listFiles,
  REPO_ROOT,
  readStateFile,
  runCli,
  runCliJson,
  tempDir,
  writeBundle,
} from "./fixtures.js";

export interface PipelineSpec {
  source?: string;
  destinations: string[];
  include?: string[];
  exclude?: string[];
  /** Default: one markdown_to_html transform with its defaults. */
  transforms?: Record<string, unknown>[];
}

export interface DestinationSpec {
  root: string;
  path?: string;
  url?: string;
  workflow?: "additive" | "replacement";
}

export interface ConfigSpec {
  pipelines: Record<string, PipelineSpec>;
  destinations: Record<string, DestinationSpec>;
}

/** Write `distributor.yaml` as JSON (YAML is a superset); returns its path. */
export async function writeConfigSpec(dir: string, spec: ConfigSpec): Promise<string> {
  const pipelines: Record<string, unknown> = {};
  for (const [id, pipeline] of Object.entries(spec.pipelines)) {
    pipelines[id] = {
      ...pipeline,
      transforms: pipeline.transforms ?? [{ transform: "markdown_to_html" }],
    };
  }
  const destinations: Record<string, unknown> = {};
  for (const [id, { root, ...rest }] of Object.entries(spec.destinations)) {
    destinations[id] = { storage: { type: "filesystem", root }, ...rest };
  }
  const file = path.join(dir, "distributor.yaml");
  await writeFile(file, `${JSON.stringify({ pipelines, destinations }, null, 2)}\n`);
  return file;
}

/** The default site bundle: two Markdown pages (one linking the other), a CSS file, a text file. */
export const SITE_FILES: Record<string, string> = {
  "index.md": "# Home\n\nRead the [guide](docs/guide.md).\n",
  "docs/guide.md": "# Guide\n\nSteps.\n",
  "assets/style.css": "body { margin: 0; }\n",
  "data/a.txt": "alpha\n",
};

/** Planned output paths of SITE_FILES under the default transform, in UTF-8 order. */
export const SITE_OUTPUTS = ["assets/style.css", "data/a.txt", "docs/guide.html", "index.html"];

export interface Scenario {
  base: string;
  /** Root of destination `web`. */
  root: string;
  config: string;
  /** `run --config <config> ...args --json`, parsed. */
  runJson(args?: readonly string[]): Promise<CliResult & { json: RunJson }>;
  /** `run --config <config> ...args`, human output. */
  run(args?: readonly string[]): Promise<CliResult>;
  /** A new bundle directory under base (for `--source`). */
  bundle(name: string, files: Record<string, string | Uint8Array>, id?: string): Promise<string>;
}

/**
 * One pipeline `site` (bundle SITE_FILES) publishing to destination `web` at
 * `<base>/public`, unless `spec` says otherwise (roots relative to base).
 */
export async function scenario(
  build: (base: string) => ConfigSpec | Promise<ConfigSpec> = defaultSpec,
): Promise<Scenario> {
  const base = await tempDir("distributor-e2e-");
  await writeBundle(path.join(base, "bundle"), SITE_FILES, { id: "site.v1" });
  const config = await writeConfigSpec(base, await build(base));
  const root = path.join(base, "public");
  const prefix = ["run", "--config", config];
  return {
    base,
    root,
    config,
    runJson: (args = []) => runCliJson<RunJson>([...prefix, ...args]),
    run: (args = []) => runCli([...prefix, ...args]),
    async bundle(name, files, id = `${name}.bundle`) {
      const dir = path.join(base, name);
      await writeBundle(dir, files, { id });
      return dir;
    },
  };
}

export function defaultSpec(base: string): ConfigSpec {
  return {
    pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
    destinations: { web: { root: path.join(base, "public") } },
  };
}

/** defaultSpec under `workflow: replacement`. */
export function replacementSpec(base: string): ConfigSpec {
  const spec = defaultSpec(base);
  return {
    ...spec,
    destinations: { web: { root: path.join(base, "public"), workflow: "replacement" } },
  };
}

export interface OutputJson {
  path: string;
  kind: "source" | "generated";
  change: "create" | "update" | "unchanged";
  sha256: string;
  size: number;
  url?: string;
}

export interface ErrorJson {
  code: string;
  message: string;
  paths: string[];
}

export interface PairJson {
  pipeline_id: string;
  destination_id: string;
  root: string;
  state: string;
  action: string;
  source: { id: string; digest: string; created: string };
  outputs: OutputJson[];
  deleted: string[];
  deletions: { path: string; reason: string }[];
  counts: { created: number; updated: number; unchanged: number; deleted: number };
  error: ErrorJson | null;
}

export interface RunJson {
  ok: boolean;
  dry_run?: boolean;
  distributor_version?: string;
  results?: PairJson[];
  error?: ErrorJson;
}

/** The single pair result of a report (fails when there is not exactly one). */
export function onlyResult(json: RunJson): PairJson {
  if (json.results?.length !== 1) {
    throw new Error(`expected exactly one result, got ${JSON.stringify(json)}`);
  }
  return json.results[0] as PairJson;
}

/** `{path: change}` of a result's outputs. */
export function changesOf(result: PairJson): Record<string, string> {
  return Object.fromEntries(result.outputs.map((output) => [output.path, output.change]));
}

/** Non-reserved files under a root (what a user sees published). */
export async function publishedFiles(root: string): Promise<string[]> {
  const files = await listFiles(root);
  return files.filter((file) => !path.posix.basename(file).startsWith(".distributor."));
}

/** `{path: "pipeline/destination"}` of every state record. */
export async function stateOwners(root: string): Promise<Record<string, string>> {
  const state = await readStateFile(root);
  return Object.fromEntries(
    state.outputs.map((record) => [record.path, `${record.pipeline_id}/${record.destination_id}`]),
  );
}

/** Bytes and mtime of a file, to prove it was not rewritten. */
export async function fingerprint(file: string): Promise<{ bytes: string; mtimeMs: number }> {
  const [bytes, stats] = await Promise.all([readFile(file, "utf8"), stat(file)]);
  return { bytes, mtimeMs: stats.mtimeMs };
}

export async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}

/** The package version the CLI must report. */
export async function packageVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(path.join(REPO_ROOT, "package.json"), "utf8"));
  return pkg.version as string;
}

/** A pid that belonged to a process on this host that has exited. */
export async function deadPid(): Promise<number> {
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  const pid = child.pid as number;
  await new Promise((resolve) => child.once("exit", resolve));
  return pid;
}

/** Lock file bytes naming `pid` on this host, as the tool writes them. */
export function lockText(pid: number, startedAt = "2026-01-01T00:00:00Z"): string {
  return `${JSON.stringify({ hostname: os.hostname(), pid, started_at: startedAt }, null, 2)}\n`;
}

/** Assert-friendly: stderr shows no JavaScript stack frame. */
export function hasStackTrace(output: string): boolean {
  return output.includes("    at ");
}
