/**
 * The planner's view of a destination listing: reserved tool names removed, and
 * the directories the listing implies (a directory is listed itself only when
 * it is empty).
 */
import {
  addAncestors,
  compareUtf8,
  hasReservedSegment,
  isTempPath,
  nestedRootOf,
} from "../paths.js";
import type { StorageEntry } from "../storage/driver.js";

export interface StorageView {
  /** Every non-reserved entry by path, directories aside. */
  entries: ReadonlyMap<string, StorageEntry>;
  /** Every directory: the listed empty ones, and those some non-reserved entry sits in. */
  dirs: ReadonlySet<string>;
  /** The directories listed as empty: nothing that a delete of files would remove. */
  emptyDirs: ReadonlySet<string>;
  /**
   * Folders holding tool files other than temporary ones (a root nested in this
   * one: its lock or state) at any depth. Planning never deletes those files,
   * so such a folder can never be cleared for a file.
   */
  toolDirs: ReadonlySet<string>;
  /**
   * Folders that are other roots: they hold a `.distributor.*` file other
   * than a temporary one (a lock or a state) themselves. What is inside them
   * is that root's to manage.
   */
  nestedRoots: ReadonlySet<string>;
}

/** Something in storage that stops a planned output from being written where it is. */
export interface Blocker {
  /** The storage path in the way (the output path itself or one of its ancestors). */
  path: string;
  /** Human phrase: "a symbolic link", "a directory", ... */
  why: string;
  /** True for symlinks: the tool never writes through or over content it cannot own. */
  unsafe: boolean;
  /**
   * A folder holding another root's `.distributor.*` files: nothing clears
   * it, not even --force, which keeps them (a live run may hold that lock).
   */
  nestedRoot?: true;
}

/** Build the view; reserved names (any segment starting with `.distributor.`) vanish. */
export function storageView(listing: readonly StorageEntry[]): StorageView {
  const entries = new Map<string, StorageEntry>();
  const dirs = new Set<string>();
  const emptyDirs = new Set<string>();
  const toolDirs = new Set<string>();
  const nestedRoots = new Set<string>();
  // The folder of the last entry whose ancestors are all in `dirs` already: a
  // listing comes folder by folder, so most entries skip addAncestors' slice
  // and lookup (100,000 of each on a large root).
  let lastFolder = "";
  for (const entry of listing) {
    if (hasReservedSegment(entry.path)) {
      // Temporary files of this root are removed before anything is applied;
      // one inside another root's state path still marks that root, and
      // its folders cannot be cleared.
      const nested = nestedRootOf(entry.path);
      if (nested !== null) nestedRoots.add(nested);
      if (nested !== null || !isTempPath(entry.path)) addAncestors(toolDirs, entry.path);
      continue;
    }
    // An empty directory blocks a file at its path like any other directory,
    // and like one it is not content that makes a root "not empty".
    if (entry.type === "directory") {
      dirs.add(entry.path);
      emptyDirs.add(entry.path);
    } else entries.set(entry.path, entry);
    const slash = entry.path.lastIndexOf("/");
    if (slash > 0 && slash === lastFolder.length && entry.path.startsWith(lastFolder)) continue;
    addAncestors(dirs, entry.path);
    if (slash > 0) lastFolder = entry.path.slice(0, slash);
  }
  return { entries, dirs, emptyDirs, toolDirs, nestedRoots };
}

/** The folder of a root nested in this one that holds `path`, shallowest first; or null. */
function nestedRootAround(view: StorageView, path: string): string | null {
  if (view.nestedRoots.size === 0) return null;
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
    const ancestor = path.slice(0, i);
    if (view.nestedRoots.has(ancestor)) return ancestor;
  }
  return null;
}

/**
 * What removing a recorded output does to storage (a replacement's omitted
 * output, a pruned one). Its record goes unless a delete handed to the
 * driver fails; `delete` and `tidy` paths are handed to it, and prune also
 * hands it `folder` ones.
 * - `delete`: the listing shows something there of ours to delete.
 * - `tidy`: nothing there, inside a real folder: the delete finds it missing
 *   (which counts as deleted) and removes the folders left empty, as after a
 *   run killed between deleting a file and removing its folder.
 * - `gone`: nothing there, and no folder of ours around it to tidy (a file or
 *   a symlink where its folder was, or no folder at all).
 * - `folder`: a folder where the file was. A replacement run leaves it and
 *   drops the record; prune hands it to the delete, which removes it only if
 *   it holds nothing but empty folders, and otherwise fails and keeps the record.
 * - `left`: something there that is not this root's to delete: a symlink, or
 *   anything inside a root nested in this one (that root may have published
 *   the path since); `why` says which.
 */
export type Removal =
  | { kind: "delete" | "tidy" | "gone" | "folder" }
  | { kind: "left"; why: string };

export function removalOf(view: StorageView, path: string): Removal {
  const nested = nestedRootAround(view, path);
  if (nested !== null) return { kind: "left", why: `inside another root (${nested})` };
  const entry = view.entries.get(path);
  if (entry?.type === "symlink") return { kind: "left", why: "a symbolic link is there now" };
  if (entry !== undefined) return { kind: "delete" };
  if (view.dirs.has(path)) return { kind: "folder" };
  const slash = path.lastIndexOf("/");
  return slash > 0 && view.dirs.has(path.slice(0, slash)) ? { kind: "tidy" } : { kind: "gone" };
}

/** Non-reserved paths in the view, sorted by UTF-8 bytes. */
export function viewPaths(view: StorageView): string[] {
  return [...view.entries.keys()].sort(compareUtf8);
}

/**
 * What blocks writing a file at `path`, whatever the state says: a symlink or
 * another entry at an ancestor (the write would go through it or need a directory
 * there), or a directory at the path itself. Entries at the path itself are the
 * caller's decision, since they depend on the records.
 */
export function structuralBlocker(
  view: StorageView,
  path: string,
  memo?: ClearFolderMemo,
): Blocker | null {
  const slash = path.lastIndexOf("/");
  const folderClear =
    memo !== undefined && slash > 0 && slash === memo.folder.length && path.startsWith(memo.folder);
  if (!folderClear) {
    const blocker = _ancestorBlocker(view, path);
    if (blocker !== null) return blocker;
    if (memo !== undefined && slash > 0) memo.folder = path.slice(0, slash);
  }
  if (view.toolDirs.has(path)) {
    return {
      path,
      why: "a directory holding another root's .distributor.* files",
      unsafe: false,
      nestedRoot: true,
    };
  }
  if (view.dirs.has(path)) return { path, why: "a directory", unsafe: false };
  return null;
}

/**
 * The last folder whose ancestors (itself included) structuralBlocker found
 * clear: what is in the way above a path depends only on its folder, and the
 * sorted outputs of one folder come one after another. "" before the first.
 */
export interface ClearFolderMemo {
  folder: string;
}

/** A nested root, a symlink or a file at one of `path`'s ancestors, shallowest first. */
function _ancestorBlocker(view: StorageView, path: string): Blocker | null {
  // As ancestorsOf() lists them, without building the list.
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
    const ancestor = path.slice(0, i);
    // Inside another root: its catalog manages what is there (a run of it may
    // be planned in this very run, against a listing without this output).
    if (view.nestedRoots.has(ancestor)) {
      return {
        path: ancestor,
        why: `another root (a folder with its own .distributor.* files) around ${path}`,
        unsafe: false,
        nestedRoot: true,
      };
    }
    const entry = view.entries.get(ancestor);
    if (entry?.type === "symlink") {
      return { path: ancestor, why: `a symbolic link on the way to ${path}`, unsafe: true };
    }
    if (entry !== undefined) {
      return { path: ancestor, why: `a file where ${path} needs a directory`, unsafe: false };
    }
  }
  return null;
}
