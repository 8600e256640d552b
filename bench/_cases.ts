/**
 * The benchmark cases of issue #5, in its order. Each contender is a whole
 * process; `setup` does the untimed work (generating sets, publishing the
 * starting destination) once per case.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { derivedHtmlPath } from "../src/transform/links.js";
import { s3Case } from "./_case-s3.js";
import {
  type BenchCase,
  type Contender,
  distributorRun,
  expectWritten,
  floorContender,
  hashContender,
  publishFloorContender,
  REPO_ROOT,
  rcloneLocal,
  renderCacheDir,
  rerunFloorContender,
  writeConfig,
} from "./_kit.js";
import { setAside } from "./_trash.js";
import {
  benchDir,
  changedPathOf,
  changedVariant,
  ensureWorkload,
  type SetSpec,
  type Workload,
} from "./workload.js";

export interface CaseOptions {
  seed: number;
}

function workDir(id: string): string {
  const dir = path.join(benchDir(), `work-${id}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Lazily generated set, shared by every case of one benchmark process. */
function lazySet(name: SetSpec["name"], options: CaseOptions): () => Workload {
  let workload: Workload | undefined;
  return () => {
    workload ??= ensureWorkload(name, options.seed);
    return workload;
  };
}

/** distributor publishing `source()` into an emptied `root` each sample. */
function freshPublish(work: string, source: () => Workload, root: string): Contender {
  const config = () =>
    writeConfig(path.join(work, "fresh.yaml"), {
      source: source().dir,
      storage: { type: "filesystem", root },
    });
  const cache = renderCacheDir(work);
  return {
    label: "distributor",
    before: () => {
      setAside(root);
      setAside(cache);
    },
    command: () => distributorRun(config(), cache),
  };
}

/**
 * Publish `source` into `root` once, untimed, so that reruns have a state to
 * compare with (and a render cache: the one `work`'s runs use).
 */
function publishOnce(work: string, config: string, root: string, source?: string): void {
  setAside(root);
  setAside(renderCacheDir(work));
  const { cmd, args, env } = distributorRun(config, renderCacheDir(work), source);
  execFileSync(cmd, args, { stdio: "inherit", cwd: REPO_ROOT, env });
}

function freshCase(
  id: string,
  title: string,
  set: () => Workload,
  extra: Partial<BenchCase>,
): BenchCase {
  const work = workDir(id);
  return {
    id,
    title,
    unit: "s",
    runs: 3,
    setup: () => void set(),
    subject: freshPublish(work, set, path.join(work, "dist-out")),
    inputs: () => [set().dir],
    comparisons: [
      {
        anchor: floorContender(() => set().dir, path.join(work, "floor-out")),
        target: "≤ 1.25×",
        ratioMax: 1.25,
      },
    ],
    ...extra,
  };
}

function unchangedCase(
  id: string,
  title: string,
  set: () => Workload,
  extra: Partial<BenchCase>,
): BenchCase {
  const work = workDir(id);
  const root = path.join(work, "dist-out");
  const config = () =>
    writeConfig(path.join(work, "rerun.yaml"), {
      source: set().dir,
      storage: { type: "filesystem", root },
    });
  return {
    id,
    title,
    unit: "s",
    runs: 3,
    setup: () => publishOnce(work, config(), root),
    inputs: () => [set().dir],
    subject: {
      label: "distributor (skip_same)",
      command: () => distributorRun(config(), renderCacheDir(work)),
      check: expectWritten(root, 0),
    },
    comparisons: [{ anchor: hashContender(() => set().dir), target: "≤ 1.15×", ratioMax: 1.15 }],
    ...extra,
  };
}

function caseOne(m: () => Workload): BenchCase {
  const work = workDir("1");
  const rcloneOut = path.join(work, "rclone-out");
  const base = freshCase("1", "M fresh publish", m, {});
  const rclone: Contender = {
    label: "rclone copy --checksum",
    requires: "rclone",
    before: () => setAside(rcloneOut),
    command: () => rcloneLocal("copy", m().dir, rcloneOut),
  };
  const floorOut = path.join(work, "publish-floor-out");
  return {
    ...base,
    comparisons: [
      ...base.comparisons,
      { anchor: rclone, target: "< 1× (aim 0.5×)", ratioMax: 1 },
      { anchor: publishFloorContender(() => m().dir, floorOut), target: "context" },
    ],
  };
}

function caseTwo(m: () => Workload): BenchCase {
  const work = workDir("2");
  const copy = path.join(work, "rclone-copy");
  const base = unchangedCase("2", "M unchanged rerun", m, {});
  const rclone: Contender = {
    label: "rclone sync --checksum (no-op)",
    requires: "rclone",
    command: () => rcloneLocal("sync", m().dir, copy),
  };
  return {
    ...base,
    setup: () => {
      base.setup();
      setAside(copy);
      execFileSync("cp", ["-r", m().dir, copy]);
    },
    inputs: () => [m().dir, copy],
    comparisons: [
      ...base.comparisons,
      { anchor: rclone, target: "≤ 0.5×", ratioMax: 0.5 },
      // Its floor skips the 1,000 Markdown outputs (render cache lookups).
      {
        anchor: rerunFloorContender(() => m().dir, path.join(work, "dist-out")),
        target: "context",
      },
    ],
  };
}

/** Two variants of M that differ in one Markdown file: every changed sample flips between them. */
function caseThree(m: () => Workload): BenchCase {
  const work = workDir("3");
  const root = path.join(work, "dist-out");
  const config = path.join(work, "changed.yaml");
  const variants: Workload[] = [];
  let current = 0;
  // What a changed sample must write: the changed document's page and the state.
  let expected: string[] = [];
  return {
    id: "3",
    title: "M one file changed",
    unit: "s",
    runs: 3,
    setup: () => {
      variants.push(changedVariant(m(), "a"), changedVariant(m(), "b"));
      const changed = changedPathOf(m(), variants[0] as Workload);
      expected = [derivedHtmlPath(changed), ".distributor.json"];
      writeConfig(config, { source: m().dir, storage: { type: "filesystem", root } });
      publishOnce(work, config, root, variants[0]?.dir);
    },
    inputs: () => variants.map((variant) => variant.dir),
    subject: {
      label: "distributor (1 changed)",
      before: () => {
        current = 1 - current;
      },
      command: () => distributorRun(config, renderCacheDir(work), variants[current]?.dir),
      check: expectWritten(root, () => expected),
    },
    comparisons: [
      {
        anchor: {
          label: "distributor unchanged (case 2)",
          command: () => distributorRun(config, renderCacheDir(work), variants[current]?.dir),
          check: expectWritten(root, 0),
        },
        target: "≤ 1.2×",
        ratioMax: 1.2,
      },
    ],
  };
}

function caseSeven(m: () => Workload): BenchCase {
  const script = path.join(REPO_ROOT, "dist/bench/md-throughput.js");
  const labels: Record<string, string> = {
    bare: "bare markdown-it",
    gfm: "markdown-it with SPEC §4's GFM syntax",
    distributor: "distributor markdown_to_html",
  };
  const mode = (name: string): Contender => ({
    label: labels[name] ?? name,
    command: () => ({ cmd: process.execPath, args: [script, "--mode", name, "--dir", m().dir] }),
    value: (sample) => Number(sample.stdout.trim()),
  });
  return {
    id: "7",
    title: "markdown_to_html throughput (M's 1,000 .md)",
    unit: "MB/s",
    runs: 5,
    setup: () => void m(),
    inputs: () => [m().dir],
    subject: mode("distributor"),
    comparisons: [
      { anchor: mode("bare"), target: "≥ 0.8×", ratioMin: 0.8 },
      // Context, not a target: how much of the row the required syntax alone costs.
      { anchor: mode("gfm"), target: "— (context)" },
    ],
  };
}

/** Every case, in the order. */
/**
 * The ids of `allCases`, in order, for checking a command line before any
 * case is made (making one creates its work folder).
 */
export const CASE_IDS: readonly string[] = ["1", "2", "3", "4", "5a", "5b", "6", "7"];

export function allCases(options: CaseOptions): BenchCase[] {
  const m = lazySet("M", options);
  const l = lazySet("L", options);
  const c = lazySet("C", options);
  const s = lazySet("S", options);
  return [
    caseOne(m),
    caseTwo(m),
    caseThree(m),
    freshCase("4", "L 2 GB fresh publish", l, {
      runs: 2,
      rssLimitMb: 150,
      comparisons: [
        {
          anchor: floorContender(() => l().dir, path.join(workDir("4"), "floor-out")),
          target: "≤ 1.2×",
          ratioMax: 1.2,
        },
      ],
    }),
    // More samples for C than for L: its rows sit near their targets, and a
    // median of two is the mean of two noisy numbers. A 5b sample costs about
    // 5 s with its anchor and creates nothing; a 5a sample about 15 s.
    freshCase("5a", "C 100k outputs fresh publish", c, {
      runs: 3,
      comparisons: [
        {
          anchor: floorContender(() => c().dir, path.join(workDir("5a"), "floor-out")),
          target: "≤ 1.5×",
          ratioMax: 1.5,
        },
        // Whether the target is within Node.js's reach on this machine: where
        // creating files is cheap, the per-file cost of any Node.js program
        // outweighs `cp -r`'s (docs/performance.md, 5a).
        {
          anchor: publishFloorContender(
            () => c().dir,
            path.join(workDir("5a"), "publish-floor-out"),
          ),
          target: "context",
        },
      ],
    }),
    unchangedCase("5b", "C 100k outputs unchanged rerun", c, {
      runs: 5,
      comparisons: [
        { anchor: hashContender(() => c().dir), target: "≤ 1.3×", ratioMax: 1.3 },
        {
          anchor: rerunFloorContender(() => c().dir, path.join(workDir("5b"), "dist-out")),
          target: "context",
        },
      ],
    }),
    s3Case(s, workDir("6")),
    caseSeven(m),
  ];
}
