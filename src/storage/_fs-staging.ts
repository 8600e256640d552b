/**
 * New folders are written whole (StorageDriver.beginWrites on a filesystem).
 *
 * A folder that an apply's outputs need and that does not exist yet is
 * written as a temporary folder beside it (`<parent>/.distributor.tmp-*`),
 * and `commit` renames that into place once every write has succeeded. The
 * outputs still appear atomically, all of the folder's at once, and each of
 * its files is created under its final name: one system call fewer per file
 * than a temp file and a rename, which on a fresh publish of 100,000 small
 * files was 1.2-1.6 s of kernel time (docs/performance.md, item 48). Writes
 * into folders that exist keep their temp file and rename (_fs-write.ts).
 *
 * Killed before the rename, the run leaves the temporary folder. Everything
 * in it is a temporary path (paths.ts, isTempPath): planning ignores it, the
 * state already claims its outputs (apply-plan.ts), so the next run finds
 * them missing and writes them again, after removing the leftover with the
 * other stale temporary files (stale-temp.ts).
 */
import { mkdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import path from "node:path";
import { eachLimit } from "../concurrency.js";
import { DistributorError, errnoCode } from "../errors.js";
import type { OutputContent } from "../model.js";
import { ancestorsOf } from "../paths.js";
import {
  checkAncestorsSync,
  kindAt,
  resolveInside,
  storageError,
  tempPathIn,
  unsafeAncestorError,
  unsafePathProblem,
} from "./_fs-paths.js";
import { type BatchedWrite, type Staged, startBatched } from "./_fs-write.js";
import { assertWritesAllowed, FS_WRITE_CONCURRENCY, writesStopped } from "./_fs-write-pool.js";
import type { BatchWrite, WriteBatch, WriteOptions } from "./driver.js";

/** A folder that does not exist yet, and the temporary folder standing in for it. */
interface StagedFolder {
  /** The folder's path under the root. */
  folder: string;
  /** The temporary folder's path under the root (same parent). */
  staging: string;
  committed: boolean;
}

/** Begin writing `paths` under `root`: see the module comment. */
export function beginFsWrites(root: string, paths: readonly string[]): WriteBatch {
  const staged = stageNewFolders(root, newFolders(root, paths));
  const byFolder = new Map(staged.map((entry) => [entry.folder, entry]));
  // Where the files of each folder go, found once per folder (a fresh
  // publish of 100,000 files has about 11,000): the key is the folder, null
  // for the root's own files.
  const places = new Map<string | null, Place>();
  const placeOf = (dir: string | null): Place => {
    if (dir === null) return { at: "", absolute: root };
    const entry = [...ancestorsOf(dir), dir]
      .map((ancestor) => byFolder.get(ancestor))
      .find((found) => found !== undefined);
    const at = entry ? entry.staging + dir.slice(entry.folder.length) : dir;
    // Throws unsafe_path for a folder that is not a clean path ("" included).
    const absolute = resolveInside(root, at);
    if (!entry) return { at, absolute };
    const folder = resolveInside(root, entry.staging);
    return { at, absolute, staged: { staging: entry.staging, folder } };
  };
  /** The write of `relPath`, placed in its folder or its folder's stand-in. */
  const batched = (
    relPath: string,
    content: OutputContent,
    options: WriteOptions,
  ): BatchedWrite => {
    const slash = relPath.lastIndexOf("/");
    const dir = slash < 0 ? null : relPath.slice(0, slash);
    let place = places.get(dir);
    if (place === undefined) {
      place = placeOf(dir);
      places.set(dir, place);
    }
    const name = relPath.slice(slash + 1);
    // The folder was checked with its place; the name is left. (The same
    // check as resolveInside's, which names the whole path in its error.)
    if (unsafePathProblem(name) !== null) resolveInside(root, relPath);
    const at = place.at === "" ? name : `${place.at}/${name}`;
    const target = place.absolute + path.sep + name;
    return { root, at, target, content, options, staged: place.staged };
  };
  return {
    writeAll: (writes, onWritten) =>
      eachLimit(
        writes.length,
        FS_WRITE_CONCURRENCY,
        (index, done) => {
          const { path: relPath, content, options = {} } = writes[index] as BatchWrite;
          startBatched(batched(relPath, content, options), done);
        },
        onWritten,
      ),
    commit: async () => commit(root, staged),
    discard: async () => discard(root, staged),
  };
}

/** Where a folder's files are written: the folder, or its stand-in in a temporary folder. */
interface Place {
  /** The path under the root. */
  at: string;
  /** The same, absolute. */
  absolute: string;
  staged?: Staged;
}

/**
 * The shallowest folders on the way to `paths` that do not exist: each
 * path's ancestors are looked at from the top, and the first one missing is
 * new (everything under it is too). A symlink or a file on the way ends the
 * search: that write goes the usual way, which refuses it (unsafe_path).
 * One lstat per folder: the answers are kept.
 */
function newFolders(root: string, paths: readonly string[]): string[] {
  const known = new Map<string, "folder" | "missing" | "other">();
  const found = new Set<string>();
  const seenDirs = new Set<string>();
  for (const relPath of paths) {
    // Paths in one folder share their ancestors: one look per folder.
    const dir = relPath.slice(0, Math.max(0, relPath.lastIndexOf("/")));
    if (seenDirs.has(dir)) continue;
    seenDirs.add(dir);
    for (const ancestor of ancestorsOf(relPath)) {
      let kind = known.get(ancestor);
      if (kind === undefined) {
        kind = kindOf(root, ancestor);
        known.set(ancestor, kind);
      }
      if (kind === "missing") found.add(ancestor);
      if (kind !== "folder") break;
    }
  }
  return [...found];
}

function kindOf(root: string, relPath: string): "folder" | "missing" | "other" {
  return kindAt(resolveInside(root, relPath));
}

/** Create each folder's temporary stand-in beside it. */
function stageNewFolders(root: string, folders: readonly string[]): StagedFolder[] {
  const staged: StagedFolder[] = [];
  try {
    for (const folder of folders) {
      assertWritesAllowed();
      const parent = path.posix.dirname(folder);
      const absolute = tempPathIn(parent === "." ? root : resolveInside(root, parent));
      mkdirSync(absolute);
      const name = path.basename(absolute);
      staged.push({
        folder,
        staging: parent === "." ? name : `${parent}/${name}`,
        committed: false,
      });
    }
  } catch (error) {
    discard(root, staged);
    if (error instanceof DistributorError) throw error;
    throw storageError("create a temporary folder in", {
      root,
      relPath: path.posix.dirname(folders[staged.length] ?? ""),
      error,
    });
  }
  return staged;
}

/**
 * Rename each temporary folder into place. Its parent is checked again for
 * a symlink. On POSIX systems rename(2) replaces an empty folder without a
 * word, and Node has no rename that refuses to, so the folder is first made
 * here, exclusively: if something made it meanwhile (anything not under
 * this root's lock, such as a root nested there taking its own lock), even
 * empty, it is not replaced: the run stops, and the next one plans against
 * it. The only empty folder the rename can replace is the one just made; a
 * folder that something fills in between makes the rename fail (ENOTEMPTY).
 * Windows never renames over an existing folder (EPERM), so there the
 * rename itself refuses, and nothing is made first.
 */
function commit(root: string, staged: readonly StagedFolder[]): void {
  for (const entry of staged) {
    if (entry.committed) continue;
    assertWritesAllowed();
    const check = checkAncestorsSync(root, entry.folder);
    if (check.kind === "unsafe") throw unsafeAncestorError(root, entry.folder, check);
    const target = resolveInside(root, entry.folder);
    const makeFirst = process.platform !== "win32";
    try {
      if (makeFirst) mkdirSync(target);
    } catch (error) {
      if (errnoCode(error) === "EEXIST") throw appearedError(root, entry.folder);
      throw storageError("create the new folder", { root, relPath: entry.folder, error });
    }
    try {
      renameSync(resolveInside(root, entry.staging), target);
    } catch (error) {
      // Only if nothing was put in it meanwhile (rmdir removes empty folders only).
      if (makeFirst) rmdirSafely(target);
      // Filled between the mkdir and the rename (ENOTEMPTY; EEXIST on some
      // systems), or, on Windows, there before the rename.
      if (SOMETHING_THERE.has(errnoCode(error) ?? "") || !makeFirst) {
        if (kindOf(root, entry.folder) !== "missing") throw appearedError(root, entry.folder);
      }
      throw storageError("put in place the new folder", { root, relPath: entry.folder, error });
    }
    entry.committed = true;
  }
}

/** What rename(2) of a folder says when its target is there and not empty (or not a folder). */
const SOMETHING_THERE = new Set(["ENOTEMPTY", "EEXIST", "ENOTDIR", "EISDIR"]);

function appearedError(root: string, folder: string): DistributorError {
  return new DistributorError(
    "storage_error",
    `Could not put the new folder ${folder} in place under ${root}: something appeared there while this run wrote it, and distributor does not replace what it did not write. Run again to plan against it.`,
    { paths: [folder] },
  );
}

function rmdirSafely(absolute: string): void {
  try {
    rmdirSync(absolute);
  } catch {
    // Not empty any more, or gone: not ours to remove.
  }
}

/** Remove the temporary folders not renamed into place (see WriteBatch.discard). */
function discard(root: string, staged: readonly StagedFolder[]): void {
  if (writesStopped()) return;
  for (const entry of staged) {
    if (entry.committed) continue;
    try {
      // rm never follows a symlink: one made inside is removed, not entered.
      rmSync(resolveInside(root, entry.staging), { recursive: true, force: true });
    } catch {
      // Left for the next run's removal of stale temporary files.
    }
  }
}
