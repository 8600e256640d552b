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
 * The temporary folder is private: `.distributor.tmp-*`, made with mode
 * 0700, holds the stand-in `new`, made as any folder there is (umask,
 * setgid bit, default ACLs), and only `new` is renamed into place. Nobody
 * but this user (and root) can enter the private folder, so nothing inside
 * it can be swapped for a link. On Linux the parent is opened level by
 * level with O_NOFOLLOW (_fs-pinned.ts) and the private folder made and
 * opened through it, and held open (`held`, up to heldLimit) until the
 * batch ends: its files are written through `/proc/self/fd/<fd>/new/...`,
 * and `commit` renames `new` from that descriptor into the parent opened
 * again, so a link put in place of the private folder, of its parent, or a
 * folder of someone else's put at its name, is never followed nor
 * published (docs/destination-state.md, "Folders swapped for links").
 * Opening every folder inside it instead, batch by batch, cost a fresh
 * publish of C 1.1-1.5 s (docs/performance.md, "Tried and dropped").
 * `discard` removes what is left the same way, never by path.
 *
 * Killed before the rename, the run leaves the temporary folder. Everything
 * in it is a temporary path (paths.ts, isTempPath): planning ignores it, the
 * state already claims its outputs (apply-plan.ts), so the next run finds
 * them missing and writes them again, after removing the leftover with the
 * other stale temporary files (stale-temp.ts).
 */
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
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
  type FolderId,
  fdPath,
  isSameFolder,
  type NotPinned,
  openPinnedFolder,
  removeIn,
} from "./_fs-pinned.js";
import { type BatchedWrite, type Staged, startBatched } from "./_fs-write.js";
import { assertWritesAllowed, FS_WRITE_CONCURRENCY, writesStopped } from "./_fs-write-pool.js";
import type { BatchWrite, WriteBatch, WriteOptions } from "./driver.js";

/** A folder that does not exist yet, and the temporary folder standing in for it. */
interface StagedFolder {
  /** The folder's path under the root. */
  folder: string;
  /** The private temporary folder's path under the root (same parent). */
  outer: string;
  /** The stand-in inside it (`<outer>/new`), renamed into place by `commit`. */
  staging: string;
  committed: boolean;
  /** Linux: the outer folder as made, to know it again by its name. */
  made?: FolderId;
  /** Linux: the outer folder's descriptor, while it is held (see the module comment). */
  held?: number;
}

/** The stand-in's name in its outer folder. */
const INNER = "new";

/**
 * How many temporary folders one batch holds open at most: 1,000, and at
 * most a quarter of the process's open-file limit (write threads open
 * files and folders too). The others are written batch by batch through
 * folders opened for each (_fs-write.ts), as safe and slower. A run adds
 * this many new folders in different places only rarely.
 */
function heldLimit(): number {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const soft = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1]);
    if (Number.isFinite(soft) && soft > 0) return Math.min(1000, Math.floor(soft / 4));
  } catch {
    // No /proc: folders are not held there anyway.
  }
  return 1000;
}

/** Begin writing `paths` under `root`: see the module comment. */
export async function beginFsWrites(root: string, paths: readonly string[]): Promise<WriteBatch> {
  const staged = await stageNewFolders(root, newFolders(root, paths));
  const byFolder = new Map(staged.map((entry) => [entry.folder, entry]));
  // Once the batch has ended its descriptors are closed, and a number
  // closed may name another file: no write may go through one after that.
  let ended = false;
  // Where the files of each folder go, found once per folder (a fresh
  // publish of 100,000 files has about 11,000): the key is the folder, null
  // for the root's own files.
  const places = new Map<string | null, Place>();
  const placeOf = (dir: string | null): Place => {
    if (dir === null) return { absolute: root };
    const entry = [...ancestorsOf(dir), dir]
      .map((ancestor) => byFolder.get(ancestor))
      .find((found) => found !== undefined);
    const at = entry ? entry.staging + dir.slice(entry.folder.length) : dir;
    // Throws unsafe_path for a folder that is not a clean path ("" included).
    const absolute = resolveInside(root, at);
    if (!entry) return { absolute };
    if (entry.held !== undefined) {
      const folder = `${fdPath(entry.held)}/${INNER}`;
      const inside = folder + dir.slice(entry.folder.length);
      return { absolute: inside, staged: { staging: entry.staging, folder, held: true } };
    }
    const folder = resolveInside(root, entry.staging);
    const staged: Staged = { staging: entry.staging, folder };
    if (entry.made) staged.made = entry.made;
    return { absolute, staged };
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
      await discard(root, staged);
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
    if (entry.held !== undefined) closeSync(entry.held);
    delete entry.held;
  }
}

/** Where a folder's files are written: the folder, or its stand-in in a temporary folder. */
interface Place {
  /** Its absolute path (through a held folder's descriptor when held). */
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

/**
 * Create each folder's temporary stand-in: a private folder (mode 0700)
 * beside it, and in that the stand-in itself, made as any folder there is
 * (umask, setgid bit, default ACLs). Parents are opened one at a time.
 */
async function stageNewFolders(root: string, folders: readonly string[]): Promise<StagedFolder[]> {
  const staged: StagedFolder[] = [];
  const limit = canPinFolders ? heldLimit() : 0;
  const byParent = new Map<string, string[]>();
  for (const folder of folders) {
    const parent = parentOf(folder);
    const group = byParent.get(parent);
    if (group) group.push(folder);
    else byParent.set(parent, [folder]);
  }
  let failed: string | undefined;
  try {
    for (const [parent, group] of byParent) {
      failed = group[0];
      if (!canPinFolders) {
        const parentDir = parent === "" ? root : resolveInside(root, parent);
        for (const folder of group) stageOne({ root, folder, parent, parentDir }, staged, false);
        continue;
      }
      const fd = openedOrThrow(root, group[0] as string, openPinnedFolder(root, parent));
      try {
        for (const folder of group) {
          failed = folder;
          const where = { root, folder, parent, parentDir: fdPath(fd) };
          stageOne(where, staged, staged.length < limit);
        }
      } finally {
        closeSync(fd);
      }
    }
  } catch (error) {
    await discard(root, staged);
    release(staged);
    if (error instanceof DistributorError) throw error;
    throw storageError("create a temporary folder for", { root, relPath: failed ?? "", error });
  }
  return staged;
}

function parentOf(folder: string): string {
  const slash = folder.lastIndexOf("/");
  return slash < 0 ? "" : folder.slice(0, slash);
}

/**
 * Stage `folder` (see stageNewFolders) in its parent `parentDir`, and add
 * it to `staged` as soon as there is something to remove. Where folders can
 * be pinned, the private folder is opened (through its parent, held open)
 * and checked to be the one made: a folder of this user's that nobody else
 * can enter (anything put in its place would not be); kept open when `hold`.
 */
function stageOne(
  where: { root: string; folder: string; parent: string; parentDir: string },
  staged: StagedFolder[],
  hold: boolean,
): void {
  assertWritesAllowed();
  const absolute = tempPathIn(where.parentDir);
  mkdirSync(absolute, { mode: 0o700 });
  const name = path.basename(absolute);
  const outer = where.parent === "" ? name : `${where.parent}/${name}`;
  const entry: StagedFolder = {
    folder: where.folder,
    outer,
    staging: `${outer}/${INNER}`,
    committed: false,
  };
  staged.push(entry);
  if (!canPinFolders) {
    mkdirSync(path.join(absolute, INNER));
    return;
  }
  const fd = openSync(absolute, FOLDER_FLAGS);
  try {
    const stats = fstatSync(fd);
    if ((stats.mode & 0o077) !== 0 || stats.uid !== process.geteuid?.()) {
      const error = new Error(`${outer} was replaced as it was made`);
      throw storageError("create a temporary folder for", {
        ...where,
        relPath: where.folder,
        error,
      });
    }
    entry.made = { dev: stats.dev, ino: stats.ino };
    mkdirSync(`${fdPath(fd)}/${INNER}`);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  if (hold) entry.held = fd;
  else closeSync(fd);
}

/** An opened folder's descriptor, or the error that says why `folder`'s parent could not be. */
function openedOrThrow(root: string, folder: string, opened: number | NotPinned): number {
  if (typeof opened === "number") return opened;
  if (opened.kind === "unsafe") throw unsafeAncestorError(root, folder, opened);
  const error = Object.assign(new Error("its parent folder is gone"), { code: "ENOENT" });
  throw storageError("put in place the new folder", { root, relPath: folder, error });
}

/**
 * The descriptor of `entry`'s outer folder: the one held, or else the one
 * its name in `parentDir` (its parent, held open) opens, if that is still
 * the folder made (`made`); undefined when it is not. The caller closes
 * one it did not hold.
 */
function outerOf(entry: StagedFolder, parentDir: string): number | undefined {
  if (entry.held !== undefined) return entry.held;
  let fd: number;
  try {
    fd = openSync(`${parentDir}/${path.posix.basename(entry.outer)}`, FOLDER_FLAGS);
  } catch {
    return undefined;
  }
  if (entry.made && isSameFolder(fd, entry.made)) return fd;
  closeSync(fd);
  return undefined;
}

/**
 * Rename each stand-in into place. Its parent is checked again for a
 * symlink (on Linux: opened level by level, and the rename goes through it,
 * from the outer folder's own descriptor: whatever was moved or put at the
 * outer folder's name meanwhile, the folder renamed is the one this run
 * wrote, and it lands in the parent opened). On POSIX systems rename(2)
 * replaces an empty folder without a
 * word, and Node has no rename that refuses to, so the folder is first made
 * here, exclusively: if something made it meanwhile (anything not under
 * this root's lock, such as a root nested there taking its own lock), even
 * empty, it is not replaced: the run stops, and the next one plans against
 * it. The only empty folder the rename can replace is the one just made; a
 * folder that something fills in between makes the rename fail (ENOTEMPTY).
 * Windows never renames over an existing folder (EPERM), so there the
 * rename itself refuses, and nothing is made first. The outer folder, empty
 * now, is removed when its name still names it.
 */
function commit(root: string, staged: readonly StagedFolder[]): void {
  for (const entry of staged) {
    if (entry.committed) continue;
    assertWritesAllowed();
    const parent = parentOf(entry.folder);
    if (!canPinFolders) {
      const check = checkAncestorsSync(root, entry.folder);
      if (check.kind === "unsafe") throw unsafeAncestorError(root, entry.folder, check);
      const parentDir = parent === "" ? root : resolveInside(root, parent);
      putInPlace(root, entry, parentDir, resolveInside(root, entry.staging));
      entry.committed = true;
      rmdirSafely(resolveInside(root, entry.outer));
      continue;
    }
    const parentFd = openedOrThrow(root, entry.folder, openPinnedFolder(root, parent));
    try {
      const parentDir = fdPath(parentFd);
      const outer = outerOf(entry, parentDir);
      if (outer === undefined) {
        const error = new Error(`${entry.outer} is gone or was replaced`);
        throw storageError("put in place the new folder", { root, relPath: entry.folder, error });
      }
      try {
        putInPlace(root, entry, parentDir, `${fdPath(outer)}/${INNER}`);
        entry.committed = true;
        removeOuter(entry, parentDir, outer);
      } finally {
        if (outer !== entry.held) closeSync(outer);
      }
    } finally {
      closeSync(parentFd);
    }
  }
}

/** The exclusive mkdir and the rename of `commit`: `from` to the folder's name in `parentDir`. */
function putInPlace(root: string, entry: StagedFolder, parentDir: string, from: string): void {
  const target = path.join(parentDir, path.posix.basename(entry.folder));
  const makeFirst = process.platform !== "win32";
  try {
    if (makeFirst) mkdirSync(target);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") throw appearedError(root, entry.folder);
    throw storageError("create the new folder", { root, relPath: entry.folder, error });
  }
  try {
    renameSync(from, target);
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

/**
 * rmdir the outer folder `outer` (a descriptor) by its name in `parentDir`,
 * when that name still names it; else it is left where it was moved, for
 * whoever moved it. rmdir removes only an empty folder: one swapped in
 * between, unless empty, stays.
 */
function removeOuter(entry: StagedFolder, parentDir: string, outer: number): void {
  const at = `${parentDir}/${path.posix.basename(entry.outer)}`;
  try {
    const there = lstatSync(at);
    const ours = fstatSync(outer);
    if (there.dev === ours.dev && there.ino === ours.ino) rmdirSync(at);
  } catch {
    // Gone, or not empty: left for the next run's removal of stale temporary files.
  }
}

/**
 * Remove the temporary folders not renamed into place (see
 * WriteBatch.discard). Where folders can be pinned, never by path: the
 * stand-in is emptied and removed through the outer folder's descriptor
 * (removeIn, which enters no link), and the outer folder removed through
 * its parent held open, when its name still names it. Someone who could
 * rename entries there could otherwise put a folder of their own at the
 * temporary name and swap a folder inside it for a link while a removal
 * by path ran through it (a review did, and the removal emptied a folder
 * outside the root).
 */
async function discard(root: string, staged: readonly StagedFolder[]): Promise<void> {
  if (writesStopped()) return;
  for (const entry of staged) {
    if (entry.committed) continue;
    try {
      if (!canPinFolders) {
        // rm never follows a symlink: one made inside is removed, not entered.
        rmSync(resolveInside(root, entry.outer), { recursive: true, force: true });
        continue;
      }
      const parentFd = openPinnedFolder(root, parentOf(entry.folder));
      if (typeof parentFd !== "number") continue;
      try {
        const outer = outerOf(entry, fdPath(parentFd));
        if (outer === undefined) continue;
        try {
          await removeIn(fdPath(outer), Buffer.from(INNER));
          removeOuter(entry, fdPath(parentFd), outer);
        } finally {
          if (outer !== entry.held) closeSync(outer);
        }
      } finally {
        closeSync(parentFd);
      }
    } catch {
      // Left for the next run's removal of stale temporary files.
    }
  }
}
