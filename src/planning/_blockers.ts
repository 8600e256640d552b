/**
 * What stops the run planner from writing a planned output where it belongs,
 * and which deletes of this run's own omitted outputs clear the way instead
 * (replacement: a file of ours that becomes a folder, or the reverse).
 */
import type { OutputRecord } from "../state/types.js";
import {
  type Blocker,
  type ClearFolderMemo,
  type StorageView,
  structuralBlocker,
} from "./_storage-view.js";

/**
 * What in storage stops writing `path`: structural blockers always; a symlink at
 * the path unless it is recorded (then the atomic rename replaces the link itself,
 * never its target); any other entry when it has no record, except under legacy
 * state, which marks the root as ours (SPEC §5).
 */
export function blockerOf(
  clearing: Clearing,
  path: string,
  recorded: boolean,
  legacy: boolean,
): Blocker | null {
  const { view } = clearing;
  const structural = structuralUnlessCleared(clearing, path);
  if (structural !== null || recorded) return structural;
  const entry = view.entries.get(path);
  if (entry === undefined) return null;
  if (entry.type === "symlink") return { path, why: "a symbolic link", unsafe: true };
  if (legacy) return null;
  return {
    path,
    why: entry.type === "file" ? "a file not recorded in the state" : "a special file",
    unsafe: false,
  };
}

/** Omitted outputs that this run deletes anyway, and which of them must go before the writes. */
export interface Clearing {
  view: StorageView;
  /** The old state's records by path, to say when what is in the way is one. */
  recorded: ReadonlyMap<string, OutputRecord>;
  omitted: ReadonlySet<string>;
  /** Filled in: deletes that clear the way for an output (RunPlan.deletesFirst). */
  first: Set<string>;
  /** For structuralBlocker: the outputs are checked in sorted order. */
  memo: ClearFolderMemo;
}

/**
 * The structural blocker of `path` (see structuralBlocker), unless it is made
 * only of outputs this replacement omits and deletes anyway: a file of ours
 * where `path` needs a folder, or a folder holding only files of ours where
 * `path` is to be a file. Deleting those first clears the way, so they are
 * added to `clearing.first` instead. Symlinks and anything not ours still block.
 */
function structuralUnlessCleared(clearing: Clearing, path: string): Blocker | null {
  const { view, omitted, first } = clearing;
  const blocker = structuralBlocker(view, path, clearing.memo);
  if (blocker === null || blocker.unsafe) return blocker;
  if (blocker.path !== path) {
    // A file (of any kind) at an ancestor: nothing else can sit below a file.
    if (!omitted.has(blocker.path)) {
      const kept = clearing.recorded.get(blocker.path);
      if (kept === undefined) return blocker;
      const owner = `${kept.pipeline_id} -> ${kept.destination_id}`;
      return {
        ...blocker,
        why: `an output of ${owner} that stays recorded, where ${path} needs a directory`,
      };
    }
    first.add(blocker.path);
    return null;
  }
  const prefix = `${path}/`;
  // Another root's lock or state in the folder stays, and so would the folder.
  if (blocker.nestedRoot) return blocker;
  const inside = [...view.entries.values()].filter((entry) => entry.path.startsWith(prefix));
  if (!inside.every((entry) => entry.type === "file" && omitted.has(entry.path))) return blocker;
  const emptyInside = [...view.emptyDirs].some((dir) => dir === path || dir.startsWith(prefix));
  if (emptyInside) {
    // Empty folders are cleared only where a record this run omits lies: the
    // folder was ours, and a run killed between deleting its files and
    // removing the folder left them. The folder itself is deleted then (its
    // empty subfolders with it, never a file); anywhere else it blocks.
    if (![...omitted].some((omittedPath) => omittedPath.startsWith(prefix))) return blocker;
    first.add(path);
  }
  for (const entry of inside) first.add(entry.path);
  return null;
}
