/**
 * Fixtures for end-to-end tests: real bundles, real config files, and the CLI run
 * as a child process exactly as a user runs it (`node bin/distributor.js ...`).
 */
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Repository root (this file compiles to dist/test/helpers/fixtures.js). */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CLI = path.join(REPO_ROOT, "bin", "distributor.js");

const tempDirs: string[] = [];

/** A fresh temp directory, removed by `cleanupTempDirs()`. */
export async function tempDir(prefix = "distributor-test-"): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export async function cleanupTempDirs(): Promise<void> {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export function sha256(bytes: string | Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

export interface BundleOptions {
  id?: string;
  created?: string;
  /** Files to list in the manifest with wrong size/digest, or extra manifest fields. */
  manifestOverrides?: Record<string, unknown>;
}

/**
 * Write a source bundle: every file plus a manifest listing it with its real
 * size and digest. Returns the manifest bytes' digest (the source digest).
 */
export async function writeBundle(
  dir: string,
  files: Record<string, string | Uint8Array>,
  options: BundleOptions = {},
): Promise<{ dir: string; digest: string }> {
  const entries = [];
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(dir, relative);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    entries.push({ path: relative, size: bytes.byteLength, sha256: sha256(bytes) });
  }
  const manifest = {
    schema_version: 1,
    id: options.id ?? "test.bundle",
    created: options.created ?? "2026-06-04T11:55:00Z",
    files: entries,
    ...options.manifestOverrides,
  };
  const bytes = `${JSON.stringify(manifest, null, 2)}\n`;
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "manifest.json"), bytes);
  return { dir, digest: sha256(bytes) };
}

/** Write `distributor.yaml` (given as YAML text) into `dir`; returns its path. */
export async function writeConfig(dir: string, yaml: string): Promise<string> {
  const file = path.join(dir, "distributor.yaml");
  await writeFile(file, yaml);
  return file;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI as a process and wait for it. Never rejects on a non-zero exit. */
export function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: options.cwd,
        env: { ...process.env, NO_COLOR: "1", ...options.env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Run the CLI with `--json` and parse the one document it must print. */
export async function runCliJson<T = Record<string, unknown>>(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult & { json: T }> {
  const result = await runCli([...args, "--json"], options);
  let json: T;
  try {
    json = JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `expected exactly one JSON document on stdout, got:\n${result.stdout}\nstderr:\n${result.stderr}`,
    );
  }
  return { ...result, json };
}

/** Start the CLI without waiting (crash and concurrency tests). */
export function spawnCli(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
) {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Every file under `dir` as sorted relative `/` paths (empty when `dir` is missing). */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(current: string, prefix: string): Promise<void> {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path.join(current, entry.name), relative);
      else out.push(relative);
    }
  }
  await walk(dir, "");
  return out.sort();
}

/** Every directory under `dir` as sorted relative paths. */
export async function listDirectories(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** Parse `<root>/.distributor.json`. */
export async function readStateFile(root: string): Promise<{
  schema_version: number;
  created_at: string;
  updated_at: string;
  outputs: Array<
    Record<string, unknown> & {
      path: string;
      pipeline_id: string;
      destination_id: string;
      sha256: string;
      updated_at: string;
    }
  >;
}> {
  return JSON.parse(await readFile(path.join(root, ".distributor.json"), "utf8"));
}
