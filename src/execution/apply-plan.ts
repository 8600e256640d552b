/**
 * Applies one pair's RunPlan to its root, exactly as planned, in the crash-safe
 * order of SPEC §6:
 *
 *   1. claim state  — records every path about to be written (an unknown digest
 *                     for overwritten paths), so a crash or an error leaves no
 *                     unmanaged file and no record that vouches for bytes it
 *                     does not describe;
 *   2. deletes that clear the way — omitted outputs where an output needs the
 *                     place (a file where it needs a folder, or the reverse);
 *   3. outputs      — each an atomic write (temp + rename / one PUT; a new
 *                     folder written whole, see StorageDriver.beginWrites);
 *   4. deletes      — replacement's other omitted outputs;
 *   5. final state  — the plan's next state.
 *
 * force_replace empties the root between 1 and 3 (its claim is a fresh state,
 * written before the deletes wherever the old state path allows it).
 *
 * Killed anywhere, the root holds a complete valid state from which the same run
 * re-plans the remaining work as creates/updates and converges.
 */

import { mapLimit } from "../concurrency.js";
import { DistributorError } from "../errors.js";
import type { PlannedOutput } from "../model.js";
import { STATE_FILE } from "../paths.js";
import { MAX_ERROR_PATHS } from "../planning/_failures.js";
import { writesOf } from "../planning/plan-run.js";
import type { RunPlan } from "../planning/types.js";
import type { CatalogState } from "../state/types.js";
import type { BatchWrite, DeleteResult, StorageDriver, VersionToken } from "../storage/driver.js";
import { unlessStopped } from "./locks.js";
import { writeState } from "./root-io.js";

/** A force_replace that could not empty its root: what stayed, for the report's `deleted`. */
export class ForceClearError extends DistributorError {
  readonly failedDeletes: { path: string; message: string }[];

  constructor(message: string, failedDeletes: { path: string; message: string }[]) {
    super("storage_error", message, { paths: pathsOf(failedDeletes) });
    this.failedDeletes = failedDeletes;
  }
}

export interface ApplyOptions {
  /** Version token of the state read at plan time (`null` = there was none). */
  stateToken: VersionToken | null;
  /** Called after each output write with its byte size. */
  onOutputWritten?: (output: PlannedOutput) => void;
}

export interface ApplyResult {
  /** Paths whose delete failed; their records stay in the final state. */
  failedDeletes: { path: string; message: string }[];
  /** Version token of the state after apply (the next pair on the root writes against it). */
  stateToken: VersionToken | null;
}

export async function applyPlan(
  driver: StorageDriver,
  plan: RunPlan,
  options: ApplyOptions,
): Promise<ApplyResult> {
  let token = options.stateToken;
  let claimed = false;
  if (plan.action === "force_replace") {
    // force_replace replaces whatever is there (unmanaged files, empty
    // directories, a broken state, even one that is a directory), and the
    // outputs are then written into an empty root. Where the state path holds
    // a file that was read at plan time (or nothing), the fresh claim replaces
    // it first: killed while the root is being emptied, the root then holds a
    // valid state from which a plain run converges (SPEC §6). Anything else
    // there (a directory, a symlink, a state that could not be read) goes
    // with the rest, and the claim is written into the emptied root.
    const at = await driver.stat(STATE_FILE);
    const claimFirst =
      plan.claimFirst === true &&
      plan.claimState !== null &&
      (at === null ? token === null : at.type === "file" && token !== null);
    if (claimFirst && plan.claimState) {
      const claim = plan.claimState;
      token = await unlessStopped(() => writeState(driver, claim, token));
      claimed = true;
    }
    const clear = async (paths: readonly string[]) => {
      const failed = failuresOf(await unlessStopped(() => driver.deleteMany(paths)));
      if (failed.length > 0) {
        throw new ForceClearError(
          `force_replace could not clear ${driver.root}: ${listFailures(failed)}`,
          failed,
        );
      }
    };
    await clear(plan.deletes);
    // The old state goes last, and only from a root that was emptied: where
    // a delete failed, the files still there keep the records that own them
    // (a legacy or valid state, which a plain run can still plan against)
    // instead of turning into unmanaged content that only `--force` clears.
    if (!claimed) {
      await clear([STATE_FILE]);
      token = null;
    }
  }
  if (plan.claimState && !claimed) {
    const claim = plan.claimState;
    // A claim that records new paths is fsync'd: lost to a power cut while
    // the files it claims survived, they would be unmanaged, and only --force
    // could clear them. One that only marks overwritten paths' digests
    // unknown is not: a process killed at any point leaves it in the page
    // cache, and one lost to a power cut leaves the old state, from which the
    // same run still converges (SPEC §6 promises no more for a power cut
    // before the final state's fsync; the outputs themselves are not
    // fsync'd). It saves an update-only run an fsync of the whole state.
    const durable = plan.changes.some((change) => change.change === "create");
    token = await unlessStopped(() => writeState(driver, claim, token, durable));
  }
  // The claim still records these paths: killed after this, a rerun finds them
  // missing, drops their records as omitted, and writes the outputs.
  await clearTheWay(driver, plan);
  await writeOutputs(driver, plan, options);
  const failedDeletes = plan.action === "force_replace" ? [] : await deleteOmitted(driver, plan);
  // A fresh root's claim already is its final state (publish_new, force_replace).
  if (plan.finalState && plan.finalState !== plan.claimState) {
    const finalState = keepRecordsOf(plan, failedDeletes);
    token = await unlessStopped(() => writeState(driver, finalState, token));
  }
  return { failedDeletes, stateToken: token };
}

async function writeOutputs(
  driver: StorageDriver,
  plan: RunPlan,
  options: ApplyOptions,
): Promise<void> {
  const outputs = alternateDirectories(writesOf(plan.changes).map((change) => change.output));
  if (outputs.length === 0) return;
  const writes = outputs.map(batchWriteOf);
  const written = (index: number) => options.onOutputWritten?.(outputs[index] as PlannedOutput);
  const batch = driver.beginWrites
    ? await unlessStopped(async () => driver.beginWrites?.(writes.map((write) => write.path)))
    : undefined;
  if (!batch) {
    // One driver call per write: over the network each is a request that
    // costs this thread little next to its round trip (S3).
    await mapLimit(
      writes,
      async (write, index) => {
        await unlessStopped(() => driver.write(write.path, write.content, write.options));
        written(index);
      },
      { limit: driver.writeConcurrency },
    );
    return;
  }
  try {
    await unlessStopped(() => batch.writeAll(writes, written));
    await unlessStopped(() => batch.commit());
  } catch (error) {
    // writeAll has let every write it started end: nothing adds to what this removes.
    await batch.discard();
    throw error;
  }
}

function batchWriteOf(output: PlannedOutput): BatchWrite {
  if (output.content.type === "deferred") {
    // run() renders every deferred output it will write before planning is final.
    throw new Error(`${output.path}: deferred content reached the executor`);
  }
  return {
    path: output.path,
    content: output.content,
    options: { contentType: output.mediaType, sha256: output.sha256 },
  };
}

/**
 * The same writes, reordered so that consecutive ones are in different
 * directories: the first file of every directory, then the second of every
 * directory, and so on. Creating files in one directory is serialised by the
 * filesystem (parallel writers there mostly spin on its lock), so writes in
 * flight together should be spread over directories. Order does not matter
 * otherwise: every path is claimed before the first write.
 */
export function alternateDirectories<T extends { path: string }>(writes: readonly T[]): T[] {
  const byDirectory = new Map<string, T[]>();
  for (const write of writes) {
    const directory = write.path.slice(0, Math.max(0, write.path.lastIndexOf("/")));
    const group = byDirectory.get(directory);
    if (group) group.push(write);
    else byDirectory.set(directory, [write]);
  }
  // Each round leaves out the directories it emptied: C's 10,704 folders
  // hold 3 files each at the median but up to 1,594, and visiting every
  // folder in every round took 100-160 ms before the first write, against
  // 35-60 ms (a scratch loop over C's paths, 2026-12-02).
  let groups = [...byDirectory.values()];
  const out: T[] = [];
  for (let round = 0; groups.length > 0; round++) {
    const left: T[][] = [];
    for (const group of groups) {
      out.push(group[round] as T);
      if (round + 1 < group.length) left.push(group);
    }
    groups = left;
  }
  return out;
}

/** Deletes the outputs need out of their way; any failure stops the run before a write. */
async function clearTheWay(driver: StorageDriver, plan: RunPlan): Promise<void> {
  if (plan.deletesFirst.length === 0) return;
  const failed = failuresOf(await unlessStopped(() => driver.deleteMany(plan.deletesFirst)));
  if (failed.length === 0) return;
  throw new DistributorError(
    "storage_error",
    `Could not delete what new outputs replace under ${driver.root}: ${listFailures(failed)}. No output was written yet (the state still records every path); fix the cause and run again.`,
    { paths: pathsOf(failed) },
  );
}

/** The deletes that failed, as reports list them. */
function failuresOf(results: readonly DeleteResult[]): ApplyResult["failedDeletes"] {
  return results.flatMap((result) =>
    result.error === undefined ? [] : [{ path: result.path, message: result.error }],
  );
}

/** Failures named in a message; the error's `paths` hold up to MAX_ERROR_PATHS. */
const MESSAGE_FAILURES = 10;

/** The first MAX_ERROR_PATHS failed paths, as every error's `paths` list is cut. */
function pathsOf(failed: ApplyResult["failedDeletes"]): string[] {
  return failed.slice(0, MAX_ERROR_PATHS).map((f) => f.path);
}

/**
 * `a.txt (EACCES: ...), b.txt (...)` for messages, the first few and the
 * total: a force stopped by a signal fails every delete it had not made yet,
 * tens of thousands of them, all for the same reason, which is said once.
 */
function listFailures(failed: ApplyResult["failedDeletes"]): string {
  const reasons = new Set(failed.map((f) => f.message));
  const shown = failed.slice(0, MESSAGE_FAILURES);
  const more = failed.length > shown.length ? `, and ${failed.length - shown.length} more` : "";
  if (reasons.size === 1 && failed.length > 1) {
    const [reason] = reasons;
    return `${failed.length} paths (${reason}): ${shown.map((f) => f.path).join(", ")}${more}`;
  }
  return `${shown.map((f) => `${f.path} (${f.message})`).join(", ")}${more}`;
}

async function deleteOmitted(
  driver: StorageDriver,
  plan: RunPlan,
): Promise<ApplyResult["failedDeletes"]> {
  const first = new Set(plan.deletesFirst);
  const rest = plan.deletes.filter((path) => !first.has(path));
  if (rest.length === 0) return [];
  return failuresOf(await unlessStopped(() => driver.deleteMany(rest)));
}

/**
 * A delete that failed leaves its file in place, so its record must stay
 * managed: take it back from the plan's omitted records. (The claim state
 * holds them too, but there is none when the plan creates nothing.)
 */
function keepRecordsOf(plan: RunPlan, failed: ApplyResult["failedDeletes"]): CatalogState {
  const finalState = plan.finalState as CatalogState;
  if (failed.length === 0) return finalState;
  const failedPaths = new Set(failed.map((f) => f.path));
  const kept = (plan.omittedRecords ?? []).filter((record) => failedPaths.has(record.path));
  return { ...finalState, outputs: [...finalState.outputs, ...kept] };
}
