/**
 * The fail_* plans: what the user reads when the planner refuses to publish.
 * Every message says what is wrong, where, and what to do next.
 */
import type { ErrorCode } from "../errors.js";
import { compareUtf8, STATE_FILE } from "../paths.js";
import { describeState } from "../state/read.js";
import { type CaseFoldClash, clashPaths } from "./_case-fold.js";
import type { Blocker } from "./_storage-view.js";
import type { RunPlan, RunPlanInput } from "./types.js";

/** At most this many paths go into `error.paths`; the message gives the total. */
export const MAX_ERROR_PATHS = 100;
const MAX_MESSAGE_PATHS = 5;

/** fail_conflict for an invalid or unsupported state. */
export function conflictPlan(input: RunPlanInput): RunPlan {
  const { state } = input;
  const what =
    state.class === "unsupported"
      ? `${STATE_FILE} has schema_version ${state.schemaVersion}, newer than this distributor understands (4): upgrade distributor`
      : `${STATE_FILE} is ${describeState(state)}: distributor will not publish over a state it cannot trust; restore or fix the file`;
  return _failed("fail_conflict", {
    code: "state_conflict",
    message: `${what}, or ${_forceHint(input)}`,
    paths: [STATE_FILE],
  });
}

/**
 * fail_unmanaged because storage content stands where outputs would be
 * written. Every blocker is named, symbolic links first (they decide the
 * code, `unsafe_path`), so that one fix clears them all instead of a second
 * refusal naming what the first one left out.
 */
export function blockedPlan(input: RunPlanInput, blockers: readonly Blocker[]): RunPlan {
  // A path blocked both ways counts as a symbolic link.
  const unique = _unique([
    ...blockers.filter((b) => b.unsafe),
    ...blockers.filter((b) => !b.unsafe),
  ]);
  const unsafe = unique.filter((b) => b.unsafe);
  const others = unique.filter((b) => !b.unsafe);
  const shown = [...unsafe, ...others];
  const listing = (of: readonly Blocker[]) => _listing(of.map((b) => `${b.path} (${b.why})`));
  const inTheWay = `distributor never overwrites content it does not own, nor an output that stays recorded: move or remove them (with \`workflow: replacement\`, an output of this pipeline and destination that the run omits is deleted first)`;
  // Under --force only a folder of a nested root can be in the way (force keeps its files).
  const message =
    shown.every((b) => b.nestedRoot) && input.force
      ? `${shown.length} path(s) that ${_owner(input)} would write are folders of another destination root nested in this one: ${listing(shown)}. --force deletes everything else but keeps that root's lock and state, so a file cannot take its place. Move that root elsewhere, or publish this pipeline to another path; if that root is no longer in use (a lock or state left by a destination since removed), delete its .distributor.* files by hand (docs/recovery.md).`
      : unsafe.length > 0
        ? `${unsafe.length} symbolic link(s) in the destination root stand where ${_owner(input)} would write: ${listing(unsafe)}. distributor never writes through or over symbolic links: replace them with real directories or remove them${others.length > 0 ? `. ${others.length} other path(s) are in the way too: ${listing(others)}; ${inTheWay}` : ""}, or ${_forceHint(input)}`
        : `${shown.length} path(s) in the destination root are in the way of ${_owner(input)}: ${listing(shown)}. ${inTheWay}, or ${_forceHint(input)}`;
  return _failed("fail_unmanaged", {
    code: unsafe.length > 0 ? "unsafe_path" : "unmanaged_path",
    message,
    paths: shown.slice(0, MAX_ERROR_PATHS).map((b) => b.path),
  });
}

/** fail_unmanaged because, on a root that folds case, planned names clash with others by case alone. */
export function caseFoldPlan(input: RunPlanInput, clashes: readonly CaseFoldClash[]): RunPlan {
  const listed = _listing(clashes.map((clash) => clash.description));
  // --force empties the root first, which only helps against names already there.
  const force = clashes.every((clash) => clash.plannedOnly) ? "" : `, or ${_forceHint(input)}`;
  return _failed("fail_unmanaged", {
    code: "unmanaged_path",
    message: `The destination root does not tell names apart by case (it finds ${STATE_FILE} or its lock under an upper-case name too), and ${_owner(input)} would write or delete names that differ from others only by case: ${listed}. On this root each such pair is one file, so writing or deleting one would hit the other. Rename the source files so that no two names differ only by case, or move or remove the other file. To rename a published output only by case, publish once without it under \`workflow: replacement\` (which deletes what a run omits), then with the new name${force || "."}`,
    paths: clashPaths(clashes, MAX_ERROR_PATHS),
  });
}

/** fail_unmanaged for a root without state that holds content no planned output touches. */
export function foreignRootPlan(input: RunPlanInput, existing: readonly string[]): RunPlan {
  return _failed("fail_unmanaged", {
    code: "unmanaged_path",
    message: `The destination root has no ${STATE_FILE} but is not empty (${existing.length} entries: ${_listing(existing)}), so distributor does not manage it. Publish to an empty path, remove the content, or ${_forceHint(input)}`,
    paths: existing.slice(0, MAX_ERROR_PATHS),
  });
}

function _failed(
  action: "fail_conflict" | "fail_unmanaged",
  error: { code: ErrorCode; message: string; paths: string[] },
): RunPlan {
  return {
    action,
    error,
    changes: [],
    deletes: [],
    deletesFirst: [],
    claimState: null,
    finalState: null,
  };
}

function _owner(input: RunPlanInput): string {
  return `${input.owner.pipelineId} -> ${input.owner.destinationId}`;
}

function _forceHint(input: RunPlanInput): string {
  const selector = `--pipeline ${input.owner.pipelineId} --destination ${input.owner.destinationId}`;
  return `review \`distributor run ${selector} --force --dry-run\` and rerun it without --dry-run (force_replace deletes everything under the destination root, other owners' outputs included).`;
}

function _unique(blockers: readonly Blocker[]): Blocker[] {
  const byPath = new Map<string, Blocker>();
  for (const blocker of blockers) if (!byPath.has(blocker.path)) byPath.set(blocker.path, blocker);
  return [...byPath.values()].sort((a, b) => compareUtf8(a.path, b.path));
}

function _listing(items: readonly string[]): string {
  const head = items.slice(0, MAX_MESSAGE_PATHS).join(", ");
  const rest = items.length - MAX_MESSAGE_PATHS;
  return rest > 0 ? `${head} and ${rest} more` : head;
}
