/**
 * The pieces benchmark cases are built from: the case model, the distributor
 * command, the coreutils floors and the rclone anchors.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Command, quote, type Sample, shell } from "./_measure.js";
import { FLOOR_LABEL } from "./_report.js";
import { setAside } from "./_trash.js";

/** One side of a comparison, run as a whole process per sample. */
export interface Contender {
  label: string;
  /** Untimed preparation before each sample (emptying a destination...). */
  before?: () => void | Promise<void>;
  command: () => Command;
  /** A note when the sample did not do what the case claims (e.g. "wrote 3 files"). */
  check?: (sample: Sample) => string | null;
  /** The measured value when it is not the wall time (case 7: MB/s from stdout). */
  value?: (sample: Sample) => number;
  /** A command that must be installed; when missing the row says so. */
  requires?: string;
  /**
   * A floor program (bench/publish-floor.ts, bench/rerun-floor.ts,
   * bench/s3-publish-floor.ts): less work than the contract asks, each part
   * the fastest way found. Evidence of what Node.js allows, not a proof:
   * distributor has beaten one in single rounds and once on the medians
   * (docs/performance.md, "Reading these numbers"). The case's rows with a
   * target then also say how it fares against their anchor (floorNote).
   */
  floor?: true;
}

export interface Comparison {
  anchor: Contender;
  /** Human target, e.g. "≤ 1.25×". */
  target: string;
  /**
   * Met when subject/anchor ≤ ratioMax (or ≥ ratioMin). With neither the row
   * is context for another (met: n/a), not a target of issue #5.
   */
  ratioMax?: number;
  ratioMin?: number;
}

export interface BenchCase {
  id: string;
  title: string;
  unit: "s" | "MB/s";
  /** Default samples per contender after the warm-up. */
  runs: number;
  /** Untimed, once: generate sets, publish the starting destination... */
  setup: () => Promise<void> | void;
  /** Untimed, once, after the samples (even failed ones): release what setup and the samples took. */
  teardown?: () => Promise<void> | void;
  subject: Contender;
  comparisons: Comparison[];
  /** Peak RSS target of the subject, in MB. */
  rssLimitMb?: number;
  /**
   * Directories the contenders read, put back in the page cache before every
   * sample (see warmPageCache): rclone drops the pages of the files it read,
   * so whoever ran after it read from disk.
   */
  inputs?: () => string[];
  /**
   * Cumulative CPU seconds of a server on this machine that the contenders
   * talk to (processCpuSeconds), or null when there is none: read before and
   * after each sample, since the server's work shares the cores.
   */
  serverCpuSeconds?: () => number | null;
}

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Write a one-pipeline config publishing `source` to `storage`; returns its path. */
export function writeConfig(
  file: string,
  options: { source: string; storage: Record<string, unknown>; path?: string },
): string {
  const config = {
    pipelines: {
      bench: {
        source: options.source,
        destinations: ["out"],
        transforms: [{ transform: "markdown_to_html" }],
      },
    },
    destinations: { out: { storage: options.storage, path: options.path ?? "" } },
  };
  // JSON is YAML: no serializer needed.
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * The render cache of a case's runs (never the user's own): `cacheDir` for
 * reruns, which find what the run before them rendered, as on any machine that
 * publishes repeatedly; emptied before each sample of a fresh publish, which
 * stands for the first publish of a new bundle.
 */
export function renderCacheDir(work: string): string {
  return path.join(work, "render-cache");
}

/** `distributor run --quiet` with `config`, optionally with `--source`, and the render cache in `cacheDir`. */
export function distributorRun(config: string, cacheDir: string, source?: string): Command {
  const args = [path.join(REPO_ROOT, "bin/distributor.js"), "run", "--config", config, "--quiet"];
  if (source) args.push("--source", source);
  return {
    cmd: process.execPath,
    args,
    env: { ...process.env, DISTRIBUTOR_CACHE: "on", DISTRIBUTOR_CACHE_DIR: cacheDir },
  };
}

/** Hashing alone: SHA-256 of every file of `dir`, by coreutils. */
export function hashOnly(dir: string): string {
  return `cd ${quote(dir)} && find . -type f -print0 | xargs -0 sha256sum > /dev/null`;
}

/** The physical floor of a publish: hash every file, then `cp -r` the tree. */
export function floorContender(source: () => string, target: string): Contender {
  return {
    label: "floor (sha256sum + cp -r)",
    before: () => setAside(target),
    command: () => shell(`${hashOnly(source())} && cp -r ${quote(source())} ${quote(target)}`),
  };
}

export function hashContender(source: () => string): Contender {
  return { label: "hashing (sha256sum)", command: () => shell(hashOnly(source())) };
}

/**
 * The least work an unchanged rerun of `source` onto `root` can do on Node.js
 * (bench/rerun-floor.ts): context for the reruns' rows, not a target. It
 * skips what distributor must also do (config, every rule of the state, the
 * plan, the lock), so it says how far distributor is from the runtime's floor
 * in the same minutes, whatever the hour does to the anchors.
 */
export function rerunFloorContender(source: () => string, root: string): Contender {
  return {
    label: `${FLOOR_LABEL} (bench/rerun-floor.ts)`,
    floor: true,
    command: () => ({
      cmd: process.execPath,
      args: [path.join(REPO_ROOT, "dist/bench/rerun-floor.js"), source(), root],
    }),
    // Every file but the Markdown (whose outputs it does not check) must be
    // found the same, or the row times a floor that compared something else.
    check: (sample) =>
      floorReport(sample, (report: { files?: number; same?: number; rejected?: number }) => {
        const expected = (report.files ?? 0) - markdownFiles(source());
        return report.rejected === 0 && report.same === expected
          ? null
          : `rerun floor found ${report.same} of ${expected} files the same, rejected ${report.rejected}`;
      }),
  };
}

/** The Markdown files a bundle lists (untimed: read for a floor's check). */
function markdownFiles(bundle: string): number {
  const manifest = JSON.parse(readFileSync(path.join(bundle, "manifest.json"), "utf8")) as {
    files: { path: string }[];
  };
  return manifest.files.filter((file) => file.path.endsWith(".md")).length;
}

/** A floor program's JSON report judged by `judge`; a note when it printed none. */
function floorReport<T>(sample: Sample, judge: (report: T) => string | null): string | null {
  try {
    return judge(JSON.parse(sample.stdout) as T);
  } catch {
    return "the floor printed no report";
  }
}

/**
 * The least work a fresh publish of `source` into an emptied `target` can do
 * on Node.js (bench/publish-floor.ts): context for cases 1 and 5a, not a target.
 * It renders bare documents and writes no temporary file per output, so it
 * says how far distributor is from the runtime's floor, and whether that
 * floor itself beats rclone, in the same minutes.
 */
export function publishFloorContender(source: () => string, target: string): Contender {
  return {
    label: `${FLOOR_LABEL} (bench/publish-floor.ts)`,
    floor: true,
    before: () => setAside(target),
    command: () => ({
      cmd: process.execPath,
      args: [path.join(REPO_ROOT, "dist/bench/publish-floor.js"), source(), target],
    }),
    check: publishedAll(source),
  };
}

/**
 * The same for a fresh publish to S3 (bench/s3-publish-floor.ts): context for
 * case 6. `destination()` is a new `s3://bucket/prefix` for each sample; the
 * server and credentials come from the environment.
 */
export function s3PublishFloorContender(
  source: () => string,
  destination: () => string,
): Contender {
  let next = "";
  return {
    label: `${FLOOR_LABEL} (bench/s3-publish-floor.ts)`,
    floor: true,
    before: () => {
      next = destination();
    },
    command: () => ({
      cmd: process.execPath,
      args: [path.join(REPO_ROOT, "dist/bench/s3-publish-floor.js"), source(), next],
    }),
    check: publishedAll(source),
  };
}

/** A publish floor's check: it wrote one output per file the bundle lists, none bad. */
function publishedAll(source: () => string): Contender["check"] {
  return (sample) =>
    floorReport(sample, (report: { outputs?: number; bad?: number }) => {
      const listed = JSON.parse(readFileSync(path.join(source(), "manifest.json"), "utf8")).files
        .length as number;
      return report.bad === 0 && report.outputs === listed
        ? null
        : `publish floor wrote ${report.outputs} of ${listed} outputs, ${report.bad} bad`;
    });
}

/** rclone with no config file, checksums on. */
export function rcloneLocal(verb: "copy" | "sync", source: string, target: string): Command {
  return { cmd: "rclone", args: ["--config", "/dev/null", verb, "--checksum", source, target] };
}

/** Regular files under `root` modified at or after `sinceMs` (what a run wrote). */
/** The files under `root` (relative `/` paths, sorted) modified at or after `sinceMs`. */
export function writtenSince(root: string, sinceMs: number): string[] {
  const written: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const absPath = path.join(entry.parentPath, entry.name);
    if (statSync(absPath).mtimeMs >= sinceMs) {
      written.push(path.relative(root, absPath).split(path.sep).join("/"));
    }
  }
  return written.sort();
}

/**
 * A check that the run wrote exactly `expected` files under `root`: that
 * many, or (a function, asked at check time) exactly those paths.
 */
export function expectWritten(
  root: string,
  expected: number | (() => readonly string[]),
): Contender["check"] {
  return (sample) => {
    const written = writtenSince(root, sample.startedAtMs);
    if (typeof expected === "number") {
      return written.length === expected
        ? null
        : `wrote ${written.length} files, expected ${expected}`;
    }
    const want = [...expected()].sort();
    return written.join("\n") === want.join("\n")
      ? null
      : `wrote ${written.join(", ") || "nothing"}, expected ${want.join(", ")}`;
  };
}
