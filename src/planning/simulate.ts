/**
 * What a root looks like after a plan is applied, without applying it. Pairs that
 * share a root are planned one after another (SPEC §6 step 5): the second is
 * planned against the state and listing the first one leaves.
 */
import { ancestorsOf, hasReservedSegment } from "../paths.js";
import type { ClassifiedState } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";
import type { RunPlan } from "./types.js";

/** The root before the plan: the classified state and listing it was planned against. */
export interface RootSnapshot {
  state: ClassifiedState;
  listing: readonly StorageEntry[];
}

/**
 * The state and listing `before` will have once `plan` has been applied in full.
 * skip_same and fail_* change nothing. force_replace leaves only the reserved
 * tool files and the outputs; other plans remove `deletes` and `deletesFirst`
 * (with what is under them) and the empty folders above them, and put every
 * created or updated output as a regular file of its planned size. A
 * `RunPlanInput` can be passed as `before` directly.
 */
export function simulateApplied(
  plan: RunPlan,
  before: RootSnapshot,
): { state: ClassifiedState; listing: StorageEntry[] } {
  if (plan.finalState === null) return { state: before.state, listing: [...before.listing] };
  const entries = new Map<string, StorageEntry>();
  const removed = new Set(plan.deletes);
  // Deletes that clear the way go with everything under them (a folder of
  // ours a killed run emptied is cleared with its empty subfolders).
  const cleared = new Set(plan.deletesFirst);
  const gone = (path: string) =>
    removed.has(path) || cleared.has(path) || ancestorsOf(path).some((dir) => cleared.has(dir));
  let folders = false;
  for (const entry of before.listing) {
    const keep =
      plan.action === "force_replace" ? hasReservedSegment(entry.path) : !gone(entry.path);
    if (!keep) continue;
    entries.set(entry.path, entry);
    if (entry.type === "directory") folders = true;
  }
  const written: string[] = [];
  for (const change of plan.changes) {
    if (change.output === undefined || change.change === "unchanged") continue;
    entries.set(change.path, { path: change.path, size: change.output.size, type: "file" });
    written.push(change.path);
  }
  // Only filesystem listings name folders (S3 has none): most roots skip
  // this. A force leaves nothing but reserved names, and folders only for them.
  if (folders && plan.action !== "force_replace") {
    unlistFolders(entries, [...removed, ...cleared, ...written]);
  }
  return { state: { class: "valid", state: plan.finalState }, listing: [...entries.values()] };
}

/**
 * A listing names a folder only while it is empty (the filesystem walk).
 * One above `paths` is no longer listed: an output was written into it,
 * or it is above a deleted path, and the driver removes it once its
 * deletes leave it empty (filesystem.ts, deletePaths), also when the path
 * was already gone (a killed run deleted the file and not its folder).
 */
function unlistFolders(entries: Map<string, StorageEntry>, paths: readonly string[]): void {
  for (const path of paths) {
    for (const dir of ancestorsOf(path)) {
      if (entries.get(dir)?.type === "directory") entries.delete(dir);
    }
  }
}
