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
 * On Linux the temporary folders are also held open (`held`): each is made
 * with mode 0700, through its parent opened level by level with O_NOFOLLOW
 * (_fs-pinned.ts), and opened itself; its files are written through
 * `/proc/self/fd/<fd>/...`. Nobody else can enter it, so nothing inside
 * needs checking, and a link put in its place, or in its parent's place,
 * is never followed: a folder swapped for a link while the run writes
 * cannot send a write outside the root (docs/destination-state.md, "Folders
 * swapped for links"). Opening every folder inside it instead, batch by
 * batch, cost a fresh publish of C 1.1-1.5 s (docs/performance.md, "Tried
 * and dropped"). `commit` gives it the mode a folder made there normally
 * gets, checks that its name still names it, and renames it into place.
 *
 * Killed before the rename, the run leaves the temporary folder. Everything
 * in it is a temporary path (paths.ts, isTempPath): planning ignores it, the
 * state already claims its outputs (apply-plan.ts), so the next run finds
 * them missing and writes them again, after removing the leftover with the
 * other stale temporary files (stale-temp.ts).
 */
import {
  closeSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  rmSync,
} from "node:fs";
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
import {
  canPinFolders,
  FOLDER_FLAGS,
  fdPath,
  type NotPinned,
  openPinnedFolder,
} from "./_fs-pinned.js";
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
  /** The temporary folder held open (Linux, see the module comment), until the batch ends. */
  held?: Held;
}

interface Held {
  fd: number;
  /** The mode a folder made in its place normally gets, given to it before it goes in place. */
  mode: number;
}

/**
 * At most this many temporary folders are held open by one batch; the
 * others are written batch by batch through folders opened for each
 * (_fs-write.ts), as safe and slower. A run adds this many new folders in
 * different places only rarely, and a descriptor each must stay well below
 * the open-file limit.
 */
const MAX_HELD = 1000;

/** Begin writing `paths` under `root`: see the module comment. */
export function beginFsWrites(root: string, paths: readonly string[]): WriteBatch {
  const staged = stageNewFolders(root, newFolders(root, paths));
  const byFolder = new Map(staged.map((entry) => [entry.folder, entry]));
  // Once the batch has ended its descriptors are closed, and a number
  // closed may name another file: no write may go through one after that.
  let ended = false;
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
    if (entry.held) {
      const folder = fdPath(entry.held.fd);
      const inside = folder + dir.slice(entry.folder.length);
      return { at, absolute: inside, staged: { staging: entry.staging, folder, held: true } };
    }
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
    if (ended) throw batchEndedError(root, relPath);
    let place = places.get(dir);
    if (place === undefined) {
      place = placeOf(dir);
      places.set(dir, place);
    }
    const name = relPath.slice(slash + 1);
    // The folder was checked with its place; the name is left. (The same
    // check as resolveInside's, which names the whole path in its error.)
    if (unsafePathProblem(name) !== null) resolveInside(root, relPath);
    const target = place.absolute + path.sep + name;
    // Errors name the output, not its place in a temporary folder.
    return { root, at: relPath, target, content, options, staged: place.staged };
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
    commit: async () => {
      commit(root, staged);
      ended = true;
      release(staged);
    },
    discard: async () => {
      // After a signal's stop, writes may still be in flight: the
      // descriptors stay open until the process ends.
      if (writesStopped()) return;
      ended = true;
      discard(root, staged);
      release(staged);
    },
  };
}

function batchEndedError(root: string, relPath: string): DistributorError {
  return storageError("write", {
    root,
    relPath,
    error: new Error("its batch of writes has ended (committed or discarded)"),
  });
}

/** Close the temporary folders held open. */
function release(staged: readonly StagedFolder[]): void {
  for (const entry of staged) {
    if (entry.held) closeSync(entry.held.fd);
    delete entry.held;
  }
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
  // Linux: each parent opened once (level by level, _fs-pinned.ts), closed below.
  const parents = new Map<string, number>();
  try {
    for (const folder of folders) {
      assertWritesAllowed();
      const slash = folder.lastIndexOf("/");
      const parent = slash < 0 ? "" : folder.slice(0, slash);
      const parentDir = canPinFolders
        ? fdPath(pinnedParent(root, folder, parent, parents))
        : parent === ""
          ? root
          : resolveInside(root, parent);
      const hold = canPinFolders && staged.length < MAX_HELD;
      const absolute = tempPathIn(parentDir);
      // Private while held: see the module comment.
      mkdirSync(absolute, { mode: hold ? 0o700 : 0o777 });
      const name = path.basename(absolute);
      const entry: StagedFolder = {
        folder,
        staging: parent === "" ? name : `${parent}/${name}`,
        committed: false,
      };
      staged.push(entry);
      if (hold) entry.held = holdFolder(root, entry, absolute);
    }
  } catch (error) {
    discard(root, staged);
    release(staged);
    if (error instanceof DistributorError) throw error;
    throw storageError("create a temporary folder in", {
      root,
      relPath: path.posix.dirname(folders[staged.length] ?? ""),
      error,
    });
  } finally {
    for (const fd of parents.values()) closeSync(fd);
  }
  return staged;
}

/** The descriptor of `folder`'s parent `parent`, opened once per batch. */
function pinnedParent(
  root: string,
  folder: string,
  parent: string,
  parents: Map<string, number>,
): number {
  let fd = parents.get(parent);
  if (fd === undefined) {
    fd = openedOrThrow(root, folder, openPinnedFolder(root, parent));
    parents.set(parent, fd);
  }
  return fd;
}

/** An opened folder's descriptor, or the error that says why `folder`'s parent could not be. */
function openedOrThrow(root: string, folder: string, opened: number | NotPinned): number {
  if (typeof opened === "number") return opened;
  if (opened.kind === "unsafe") throw unsafeAncestorError(root, folder, opened);
  const error = Object.assign(new Error("its parent folder is gone"), { code: "ENOENT" });
  throw storageError("create a temporary folder for", { root, relPath: folder, error });
}

/**
 * Open the temporary folder just made at `absolute` (through its open
 * parent), check that it is the one made (a folder of this user's that
 * nobody else can enter: something put in its place in between would not
 * be), and find the mode a folder made in its parent normally gets: that of
 * a folder made inside it, which inherits the same default ACL and setgid
 * bit, and is removed again.
 */
function holdFolder(root: string, entry: StagedFolder, absolute: string): Held {
  const fd = openSync(absolute, FOLDER_FLAGS);
  try {
    const stats = fstatSync(fd);
    if ((stats.mode & 0o077) !== 0 || stats.uid !== process.geteuid?.()) {
      throw storageError("create a temporary folder for", {
        root,
        relPath: entry.folder,
        error: new Error(`${entry.staging} was replaced as it was made`),
      });
    }
    const probe = tempPathIn(fdPath(fd));
    mkdirSync(probe);
    const mode = lstatSync(probe).mode & 0o7777;
    rmdirSync(probe);
    return { fd, mode };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * Rename each temporary folder into place. Its parent is checked again for
 * a symlink (on Linux: opened level by level, and the rename goes through
 * it). On POSIX systems rename(2) replaces an empty folder without a
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
    const slash = entry.folder.lastIndexOf("/");
    const parent = slash < 0 ? "" : entry.folder.slice(0, slash);
    if (!canPinFolders) {
      const check = checkAncestorsSync(root, entry.folder);
      if (check.kind === "unsafe") throw unsafeAncestorError(root, entry.folder, check);
      putInPlace(root, entry, parent === "" ? root : resolveInside(root, parent));
    } else {
      const fd = openedOrThrow(root, entry.folder, openPinnedFolder(root, parent));
      try {
        if (entry.held) readyHeld(root, entry, entry.held, fdPath(fd));
        putInPlace(root, entry, fdPath(fd));
      } finally {
        closeSync(fd);
      }
    }
    entry.committed = true;
  }
}

/**
 * Give a held temporary folder its mode (see holdFolder), and check that
 * its name in `parentDir` still names it: a folder of someone else's put in
 * its place must not be renamed into place as this run's.
 */
function readyHeld(root: string, entry: StagedFolder, held: Held, parentDir: string): void {
  fchmodSync(held.fd, held.mode);
  const ours = fstatSync(held.fd);
  let there: { dev: number; ino: number } | undefined;
  try {
    there = lstatSync(`${parentDir}/${path.posix.basename(entry.staging)}`);
  } catch {
    there = undefined;
  }
  if (there?.dev === ours.dev && there.ino === ours.ino) return;
  const error = new Error(`${entry.staging} is gone or was replaced`);
  throw storageError("put in place the new folder", { root, relPath: entry.folder, error });
}

/** The exclusive mkdir and the rename of `commit`, in the folder's parent `parentDir`. */
function putInPlace(root: string, entry: StagedFolder, parentDir: string): void {
  const target = path.join(parentDir, path.posix.basename(entry.folder));
  const makeFirst = process.platform !== "win32";
  try {
    if (makeFirst) mkdirSync(target);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") throw appearedError(root, entry.folder);
    throw storageError("create the new folder", { root, relPath: entry.folder, error });
  }
  try {
    renameSync(path.join(parentDir, path.posix.basename(entry.staging)), target);
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
