/**
 * `distributor run` as a library operation (SPEC §6): load, verify, plan every
 * selected pair, and only if no pair fails, apply the plans. Planning is done by
 * the pure planner; this module only gathers its inputs and carries out its output.
 */

import { lstatSync } from "node:fs";
import path from "node:path";
import {
  KEEP_MAX_FILE_BYTES,
  KEEP_MAX_UPLOAD_FILE_BYTES,
  type KeepBudget,
  keepBudget,
} from "../bundle/_verified-bytes.js";
import { openBundle } from "../bundle/verify.js";
import { loadConfig, noSourceError, selectPairs } from "../config/load.js";
import type { Config, DestinationConfig, PipelineConfig } from "../config/types.js";
import { DistributorError, errnoCode, listedError } from "../errors.js";
import type { PlannedOutput, SourceIdentity } from "../model.js";
import { LOCK_FILE, STATE_FILE } from "../paths.js";
import { planRun, simulateApplied, writesOf } from "../planning/plan-run.js";
import type { RunPlan } from "../planning/types.js";
import { bytesToWrite, type PairResult, type RunReport } from "../reporting/report.js";
import { openDestination } from "../storage/create-driver.js";
import type { StorageDriver, StorageEntry, VersionToken } from "../storage/driver.js";
import { stopIdleHelpers } from "../threads.js";
import { formatTimestamp } from "../timestamps.js";
import { planOutputs, renderDeferred } from "../transform/planned-outputs.js";
import { RenderCache } from "../transform/render-cache.js";
import { DISTRIBUTOR_VERSION } from "../version.js";
import { assertSourceApart, realFolder } from "./_source-apart.js";
import { applyPlan, ForceClearError } from "./apply-plan.js";
import { EarlyStates } from "./early-state.js";
import { withLocks } from "./locks.js";
import { pairResult } from "./pair-result.js";
import { readRoot } from "./root-io.js";
import { removeStaleTempFiles } from "./stale-temp.js";
import { digestsOfUnchanged } from "./verify-digests.js";

export interface RunOptions {
  /** An already loaded config; otherwise it is loaded from `configFile` / DISTRIBUTOR_CONFIG / ./distributor.yaml. */
  config?: Config;
  configFile?: string;
  cwd?: string;
  /**
   * Environment for DISTRIBUTOR_CONFIG, `${NAME}` interpolation and the render
   * cache (DISTRIBUTOR_CACHE, DISTRIBUTOR_CACHE_DIR). Default: `process.env`.
   */
  env?: NodeJS.ProcessEnv;
  pipelines?: string[];
  destinations?: string[];
  /** Source bundle directory for every selected pipeline (overrides the config's `source`). */
  source?: string;
  /** Plan and report only: no lock, no temp file, no write. */
  dryRun?: boolean;
  /** Plan force_replace; requires exactly named pipelines and destinations. */
  force?: boolean;
  /** Re-hash outputs that would be unchanged and rewrite those whose bytes drifted. */
  verify?: boolean;
  /** Clock, for tests. */
  now?: () => Date;
  /** Warnings (stale lock taken over); default: ignored. */
  onWarning?: (message: string) => void;
  /** Called with the total bytes to write before applying, then after each output. */
  onProgress?: (event: { bytesDone: number; bytesTotal: number }) => void;
}

interface SelectedPair {
  pipeline: PipelineConfig;
  destination: DestinationConfig;
}

interface PreparedSource {
  identity: SourceIdentity;
  outputs: PlannedOutput[];
}

interface PlannedPair {
  pair: SelectedPair;
  driver: StorageDriver;
  /** The root as this pair's destination names it (see RootGroup.rootOf). */
  root: string;
  plan: RunPlan;
  stateClass: PairResult["state"];
  startedAt: number;
}

export async function run(options: RunOptions = {}): Promise<RunReport> {
  const config = options.config ?? (await loadConfig(configOptions(options)));
  if (options.force && (!options.pipelines?.length || !options.destinations?.length)) {
    throw new DistributorError(
      "usage",
      "--force needs an explicit --pipeline and --destination: it deletes everything under the destination root. Review with --dry-run first.",
    );
  }
  const pairs = selectPairs(config, {
    pipelines: options.pipelines,
    destinations: options.destinations,
  });
  for (const { pipeline, destination } of pairs) {
    const dir = options.source ?? pipeline.source;
    if (dir !== undefined) assertSourceApart(pipeline.id, dir, destination);
  }
  const renderCache = RenderCache.fromEnv(options.env ?? process.env);
  // Opening a driver reads and writes nothing at the destination; it happens
  // now so that the filesystem roots' states can be read while the sources
  // verify (early-state.ts). An error opening one is still reported after
  // the sources' (awaited below).
  const opening = groupByRoot(pairs);
  const early = new EarlyStates(
    opening.then((groups) =>
      groups
        .filter((group) => group.pairs[0]?.destination.storage.type === "filesystem")
        .map((group) => group.driver),
    ),
  );
  try {
    // One budget for the run: every bundle's kept bytes live until it ends.
    const sources = await prepareSources(pairs, options, {
      renderCache,
      early,
      keep: keepBudget(),
    });
    const groups = await opening;
    if (options.force) refuseSharedForce(groups);
    for (const group of groups) assertStorable(group, sources);
    const body = () => planAndApply(groups, sources, options, early);
    if (options.dryRun) return await body();
    return await withLocks(
      groups.map((group) => group.driver),
      body,
      { onWarning: options.onWarning },
    );
  } finally {
    early.close();
    // A dry run writes nothing, not even the cache (it still reads it).
    if (!options.dryRun) renderCache?.save();
  }
}

/**
 * force_replace empties the root before it writes: two forced pairs on one
 * root would each delete what the other wrote, leaving only the last pair's
 * outputs while both reported theirs as created.
 */
function refuseSharedForce(groups: readonly RootGroup[]): void {
  const outer = groups.find((group) => group.nested.length > 0);
  if (outer) {
    throw new DistributorError(
      "usage",
      `--force would empty ${outer.driver.root}, and with it the outputs of ${outer.nested.map((rel) => `${rel}/`).join(", ")}, another root of this run. Force one root at a time.`,
    );
  }
  const shared = groups.find((group) => group.pairs.length > 1);
  if (!shared) return;
  const names = shared.pairs.map((pair) => `${pair.pipeline.id} → ${pair.destination.id}`);
  throw new DistributorError(
    "usage",
    `--force would empty ${shared.driver.root} once for each of ${names.join(", ")}, and each would delete what the one before wrote. Force one pipeline and destination at a time; the others then publish with a plain run.`,
  );
}

function configOptions(options: RunOptions) {
  return { file: options.configFile, cwd: options.cwd, env: options.env };
}

/**
 * Verify each pipeline's source bundle and derive its outputs. The early
 * state reads start as soon as the first bundle's helper threads verify
 * (see CheckOptions.meanwhile). `context.keep`: the run's budget for bytes
 * kept from verification (bundle/_verified-bytes.ts), shared by all of its
 * pipelines and charged what each keeps; exported for tests.
 */
export async function prepareSources(
  pairs: readonly SelectedPair[],
  options: Pick<RunOptions, "source" | "dryRun">,
  context: { renderCache?: RenderCache; early: EarlyStates; keep: KeepBudget },
): Promise<Map<string, PreparedSource>> {
  const sourceOverride = options.source;
  const { renderCache, early, keep: budget } = context;
  const meanwhile = () => early.start();
  const prepared = new Map<string, PreparedSource>();
  for (const { pipeline } of pairs) {
    if (prepared.has(pipeline.id)) continue;
    const dir = sourceOverride ?? pipeline.source;
    if (!dir) throw noSourceError(pipeline.id);
    const bundle = await openBundle(dir);
    // Verifies the bundle while it renders (see planOutputs).
    const keep = options.dryRun !== true && firstPublishLikely(pairs, pipeline.id);
    const outputs = await planOutputs(bundle, pipeline, {
      renderCache,
      meanwhile,
      keepBytes: keep ? budget : undefined,
      keepFileBytes: keepFileBytesFor(pairs, pipeline.id),
    });
    prepared.set(pipeline.id, { identity: bundle.identity, outputs });
  }
  return prepared;
}

/**
 * The largest source file of the pipeline whose verified bytes are kept for
 * publishing: larger when some destination of it is remote (S3), where a
 * file read again is streamed on the calling thread (bundle/_verified-bytes.ts).
 */
export function keepFileBytesFor(pairs: readonly SelectedPair[], pipelineId: string): number {
  const remote = pairs.some(
    ({ pipeline, destination }) =>
      pipeline.id === pipelineId && destination.storage.type !== "filesystem",
  );
  return remote ? KEEP_MAX_UPLOAD_FILE_BYTES : KEEP_MAX_FILE_BYTES;
}

/**
 * Whether the run is likely to publish most of the pipeline's files: some
 * destination of it has no state yet, or is not a filesystem root (S3:
 * finding out would cost a request). Verification then keeps the bytes of
 * small files for publishing them (bundle/_verified-bytes.ts). That costs
 * memory and page faults: on an unchanged rerun of the benchmark's M, which
 * writes nothing, 0.1 s of CPU and 100 MB. Only a guess, made before the
 * lock: a wrong one costs time, never correctness, since a file without kept
 * bytes is read again and checked when it is copied.
 */
export function firstPublishLikely(pairs: readonly SelectedPair[], pipelineId: string): boolean {
  return pairs.some(({ pipeline, destination }) => {
    if (pipeline.id !== pipelineId) return false;
    const { storage } = destination;
    if (storage.type !== "filesystem") return true;
    try {
      lstatSync(path.join(storage.root, destination.path, STATE_FILE));
      return false;
    } catch (error) {
      return errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR";
    }
  });
}

interface RootGroup {
  driver: StorageDriver;
  pairs: SelectedPair[];
  /**
   * Each pair's own spelling of the root (`driver.root` of its destination),
   * for its report: pairs that name one folder two ways (a symlink on the
   * way) share the first one's driver, but each reports the root it was
   * configured with.
   */
  rootOf: Map<SelectedPair, string>;
  /** Where the root is (placeOf): what two roots are compared by. */
  place: string;
  /**
   * Other roots of this run nested in this one, relative to it. Planned as
   * nested roots (their lock marks them in the listing) also in a dry run,
   * which takes no locks, so that it plans what the real run will.
   */
  nested: string[];
}

/** Pairs that resolve to the same root share one driver and are planned in order. */
async function groupByRoot(pairs: readonly SelectedPair[]): Promise<RootGroup[]> {
  const groups = new Map<string, RootGroup>();
  for (const pair of pairs) {
    const driver = await openDestination(pair.destination);
    const place = placeOf(pair.destination, driver);
    const group = groups.get(place);
    if (group) {
      group.pairs.push(pair);
      group.rootOf.set(pair, driver.root);
    } else {
      groups.set(place, {
        driver,
        pairs: [pair],
        rootOf: new Map([[pair, driver.root]]),
        place,
        nested: [],
      });
    }
  }
  const all = [...groups.values()];
  for (const group of all) {
    const inside = group.place.endsWith("/") ? group.place : `${group.place}/`;
    for (const other of all) {
      if (other !== group && other.place.startsWith(inside)) {
        group.nested.push(other.place.slice(inside.length).replace(/\/$/, ""));
      }
    }
  }
  return all;
}

/**
 * What makes two destinations one root: the same `driver.root` on the same
 * server. `s3://bucket/prefix/` alone does not say which server: a mirror
 * with the same bucket and prefix at another endpoint is another root, and
 * sharing the first one's driver would write its outputs to the first server.
 * (The same server named by two spellings of its endpoint counts as two;
 * their second lock is then refused as held, never silently shared.)
 */
function placeOf(destination: DestinationConfig, driver: StorageDriver): string {
  const storage = destination.storage;
  // Two spellings of one folder (a symlink on the way) are one root, or the
  // run would take its lock twice and refuse itself.
  if (storage.type === "filesystem") return realFolder(driver.root);
  const server = storage.endpoint === undefined ? "aws" : new URL(storage.endpoint).href;
  return `${server} ${driver.root}`;
}

interface PlannedGroup {
  group: RootGroup;
  pairs: PlannedPair[];
  token: VersionToken | null;
  /** The root's listing at plan time, taken under the lock the run still holds. */
  listing: readonly StorageEntry[];
}

async function planAndApply(
  groups: readonly RootGroup[],
  sources: ReadonlyMap<string, PreparedSource>,
  options: RunOptions,
  early: EarlyStates,
): Promise<RunReport> {
  const nowText = formatTimestamp((options.now ?? (() => new Date()))());
  const planAll = async () => {
    const planned: PlannedGroup[] = [];
    for (const group of groups)
      planned.push(await planGroup(group, sources, { ...options, nowText }, early));
    return planned;
  };
  let plannedGroups = await planAll();
  let all = plannedGroups.flatMap((entry) => entry.pairs);
  let failing = all.some((entry) => entry.plan.action.startsWith("fail_"));
  // Outputs planned from the render cache are rendered before anything is
  // written, if they are to be written. One whose digest differs from the
  // cached one (a cache that was wrong) is planned again with the truth; each
  // round renders at least one more output, so this ends. Planning again reads
  // each root again (and re-hashes for --verify): acceptable on a path that a
  // correct cache never takes, and simpler than keeping snapshots aside.
  while (!failing && !options.dryRun && renderWrites(all)) {
    plannedGroups = await planAll();
    all = plannedGroups.flatMap((entry) => entry.pairs);
    failing = all.some((entry) => entry.plan.action.startsWith("fail_"));
  }
  if (failing || options.dryRun) {
    return report(
      all.map((entry) => pairResult(entry, sources, { applied: false })),
      !failing,
      options,
    );
  }
  // Verification and listing are done: the apply step has no job for the
  // helper threads, and would otherwise hold their memory at its peak.
  stopIdleHelpers();
  return report(await applyGroups(plannedGroups, sources, options), true, options);
}

/** Render the deferred outputs that the plans write; true if one differed from its cached digest. */
function renderWrites(pairs: readonly PlannedPair[]): boolean {
  let differed = false;
  for (const { plan } of pairs) {
    for (const { output } of writesOf(plan.changes)) if (renderDeferred(output)) differed = true;
  }
  return differed;
}

async function planGroup(
  group: RootGroup,
  sources: ReadonlyMap<string, PreparedSource>,
  options: RunOptions & { nowText: string },
  early: EarlyStates,
): Promise<PlannedGroup> {
  const snapshot = await readRoot(group.driver, early);
  const marks: StorageEntry[] = group.nested.map((rel) => ({
    path: `${rel}/${LOCK_FILE}`,
    size: 0,
    type: "file",
  }));
  const listing = marks.length === 0 ? snapshot.listing : [...snapshot.listing, ...marks];
  let current = { state: snapshot.state, listing };
  const pairs: PlannedPair[] = [];
  for (const [index, pair] of group.pairs.entries()) {
    const startedAt = performance.now();
    const source = sources.get(pair.pipeline.id) as PreparedSource;
    const verifiedDigests = options.verify
      ? await digestsOfUnchanged(group.driver, { state: current.state, outputs: source.outputs })
      : undefined;
    const plan = planRun({
      owner: { pipelineId: pair.pipeline.id, destinationId: pair.destination.id },
      source: source.identity,
      outputs: source.outputs,
      state: current.state,
      listing: current.listing,
      foldsCase: snapshot.foldsCase,
      workflow: pair.destination.workflow,
      force: options.force ?? false,
      verifiedDigests,
      urlBase: pair.destination.url,
      now: options.nowText,
      distributorVersion: DISTRIBUTOR_VERSION,
    });
    pairs.push({
      pair,
      driver: group.driver,
      root: group.rootOf.get(pair) ?? group.driver.root,
      plan,
      stateClass: current.state.class,
      startedAt,
    });
    // The next pair on this root plans against what this one leaves; after the
    // last one nobody asks (for 100,000 outputs it is a map of all of them).
    if (index < group.pairs.length - 1) current = simulateApplied(plan, current);
  }
  return { group, pairs, token: snapshot.stateToken, listing: snapshot.listing };
}

/**
 * Refuse, before any lock is taken or root read, a root that cannot hold
 * distributor's own objects (StorageDriver.rootProblem: its first write, the
 * lock or S3's probe, would fail), and outputs whose path the root cannot
 * hold (StorageDriver.pathProblem): written, they would fail halfway through
 * the apply, after the claim state recorded them.
 */
function assertStorable(group: RootGroup, sources: ReadonlyMap<string, PreparedSource>): void {
  const { driver } = group;
  const rootProblem = driver.rootProblem?.() ?? null;
  if (rootProblem !== null) {
    throw new DistributorError(
      "storage_error",
      `${driver.root} cannot hold distributor's own objects: ${rootProblem}. Nothing was written; shorten the destination's prefix or path.`,
    );
  }
  if (!driver.pathProblem) return;
  const refused: { path: string; problem: string }[] = [];
  for (const pair of group.pairs) {
    const source = sources.get(pair.pipeline.id) as PreparedSource;
    for (const output of source.outputs) {
      const problem = driver.pathProblem(output.path);
      if (problem !== null) refused.push({ path: output.path, problem });
    }
  }
  if (refused.length === 0) return;
  const shown = refused.slice(0, 20);
  throw listedError(
    "storage_error",
    {
      head: `${driver.root} cannot hold ${refused.length} planned output(s); nothing was written:`,
      items: shown.map(({ path, problem }) => `${path}: ${problem}`),
      advice: "Shorten those paths in the bundle, or the destination's prefix or path.",
    },
    { paths: shown.map(({ path }) => path) },
  );
}

/**
 * Apply group by group, pair by pair. The first failure stops everything after
 * it: later pairs on that root were planned against the state it would have left.
 */
async function applyGroups(
  plannedGroups: readonly PlannedGroup[],
  sources: ReadonlyMap<string, PreparedSource>,
  options: RunOptions,
): Promise<PairResult[]> {
  const results: PairResult[] = [];
  const bytesTotal = plannedGroups
    .flatMap((g) => g.pairs)
    .reduce((sum, entry) => sum + bytesToWrite(entry.plan.changes), 0);
  let bytesDone = 0;
  options.onProgress?.({ bytesDone, bytesTotal });
  let stopped = false;
  for (const { group, pairs, token, listing } of plannedGroups) {
    let stateToken = token;
    // skip_same writes nothing at all (SPEC §6), stale temp files' removal included.
    const writes = pairs.some((entry) => entry.plan.action !== "skip_same");
    if (!stopped && writes) await removeStaleTempFiles(group.driver, listing);
    for (const entry of pairs) {
      if (stopped) {
        results.push(pairResult(entry, sources, { applied: false }));
        continue;
      }
      try {
        const applied = await applyPlan(group.driver, entry.plan, {
          stateToken,
          onOutputWritten: (output) => {
            bytesDone += output.size;
            options.onProgress?.({ bytesDone, bytesTotal });
          },
        });
        stateToken = applied.stateToken;
        results.push(
          pairResult(entry, sources, { applied: true, failedDeletes: applied.failedDeletes }),
        );
        // A failed delete is a failure too: the records kept for it are not in
        // the state the later pairs were planned against, so applying them
        // would drop those records again.
        if (applied.failedDeletes.length > 0) stopped = true;
      } catch (error) {
        if (!(error instanceof DistributorError)) throw error;
        stopped = true;
        const failedDeletes = error instanceof ForceClearError ? error.failedDeletes : undefined;
        results.push(
          pairResult(entry, sources, { applied: false, error: error.toReport(), failedDeletes }),
        );
      }
    }
  }
  return results;
}

function report(results: PairResult[], ok: boolean, options: RunOptions): RunReport {
  return {
    ok: ok && results.every((result) => result.error === null),
    dry_run: options.dryRun ?? false,
    distributor_version: DISTRIBUTOR_VERSION,
    results,
  };
}
