/**
 * The filesystem storage driver (SPEC §11), the embedded default: a destination
 * root is a directory tree, served as a static site.
 *
 * - Writes are atomic (temp file + rename in the same directory); `durable`
 *   adds fsync of the file and its directory. An apply's outputs in folders
 *   that do not exist yet are written into a temporary folder that is renamed
 *   into place whole (`beginWrites`, _fs-staging.ts).
 * - Symlinks inside the root are listed as `symlink` and never followed: not by
 *   `list`, `read`, `readStream`, `write` or `deleteMany` (a symlinked parent
 *   fails with `unsafe_path`). The root itself may be a symlink. A batch's
 *   write into a temporary folder it made checks the way to that folder, not
 *   the folders inside it, which the run made under a random name
 *   (SmallWrite.staging in _fs-write-pool.ts).
 * - `ifMatch` is emulated (check, then rename): `capabilities.conditionalWrite`
 *   is false because the root's lock, not the write, keeps writers apart.
 * - Unexpected errno errors become `storage_error` naming the path and the code.
 */
import { isUtf8 } from "node:buffer";
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readdir, rm, rmdir, unlink } from "node:fs/promises";
import path from "node:path";
import { mapLimit } from "../concurrency.js";
import { DistributorError, errnoCode } from "../errors.js";
import { ancestorsOf, LOCK_FILE, STATE_FILE } from "../paths.js";
import { acquireFsLock, describeFsLock } from "./_fs-lock.js";
import {
  checkAncestors,
  longNameProblem,
  nonFolderOnPath,
  resolveInside,
  storageError,
  undeletablePathProblem,
  unsafeAncestorError,
  unsafePathProblem,
} from "./_fs-paths.js";
import { atPinnedEntry, canPinFolders, inPinnedFolder, removeIn } from "./_fs-pinned.js";
import { readWhole } from "./_fs-read.js";
import { beginFsWrites } from "./_fs-staging.js";
import { entryFromStats, NOT_UTF8, walkTree, walkTreeOffThread } from "./_fs-walk.js";
import { tokenOf, writeAtomic } from "./_fs-write.js";
import {
  assertWritesAllowed,
  FS_WRITE_CONCURRENCY,
  stoppedMessage,
  writesStopped,
} from "./_fs-write-pool.js";
import type {
  DeleteResult,
  ListOptions,
  StorageDriver,
  StorageEntry,
  StoredBytes,
} from "./driver.js";

export { assertWritesAllowed, stopWrites } from "./_fs-write-pool.js";

export interface FilesystemDriverOptions {
  /** Absolute path of the destination root (`<storage.root>/<path>`). It need not exist yet. */
  root: string;
}

const DELETE_CONCURRENCY = 16;
// O_NONBLOCK keeps open() from hanging on a fifo; it changes nothing for regular files.
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Whether `root` finds the lock or the state under its upper-case name too,
 * as the same file (same device and inode): a probe that needs no write,
 * since the run holds the lock whenever it matters. Any error is "no".
 */
async function foldsCase(root: string): Promise<boolean> {
  for (const name of [LOCK_FILE, STATE_FILE]) {
    const [exact, upper] = await Promise.all(
      [name, name.toUpperCase()].map((candidate) =>
        // bigint: a 64-bit file id (NTFS) does not fit a double exactly.
        lstat(path.join(root, candidate), { bigint: true }).catch(() => null),
      ),
    );
    if (exact && upper && exact.ino === upper.ino && exact.dev === upper.dev) return true;
  }
  return false;
}

/** A driver for the directory tree at `options.root`. Throws `config_invalid` for a relative root. */
export function createFilesystemDriver(options: FilesystemDriverOptions): StorageDriver {
  if (!path.isAbsolute(options.root)) {
    throw new DistributorError(
      "config_invalid",
      `Filesystem storage root ${JSON.stringify(options.root)} is not an absolute path; resolve it against the config file's directory first.`,
    );
  }
  const root = path.resolve(options.root);
  const driver = {
    root,
    capabilities: { conditionalWrite: false, batchDelete: false, remote: false },
    writeConcurrency: FS_WRITE_CONCURRENCY,
    list: (listOptions: ListOptions = {}) =>
      listOptions.busyHere ? walkTreeOffThread(root) : walkTree(root),
    stat: (relPath: string) => statEntry(root, relPath),
    foldsCase: () => foldsCase(root),
    read: (relPath: string) => readSmall(root, relPath),
    readStream: (relPath: string) => openStream(root, relPath),
    write: (relPath, content, writeOptions = {}) =>
      writeAtomic(root, relPath, { ...writeOptions, content }),
    beginWrites: async (paths: readonly string[]) => beginFsWrites(root, paths),
    deleteMany: (paths: readonly string[]) => deletePaths(root, paths),
    deleteAll: () => deleteEverything(root),
    acquireLock: (lockOptions = {}) => acquireFsLock(root, lockOptions),
    readLock: () => describeFsLock(root),
    pathProblem: longNameProblem,
  } satisfies StorageDriver;
  return driver;
}

async function statEntry(root: string, relPath: string): Promise<StorageEntry | null> {
  const absolute = resolveInside(root, relPath);
  // Behind a symlinked parent nothing is "under the root", as list() agrees.
  if ((await checkAncestors(root, relPath)).kind !== "ok") return null;
  try {
    return entryFromStats(relPath, await lstat(absolute));
  } catch (error) {
    if (absentAt(root, error)) return null;
    throw storageError("inspect", { root, relPath, error });
  }
}

/**
 * Whether a failed lookup under `root` means "nothing there": ENOENT, or
 * ENOTDIR for a file where a folder of the root would be. A root that is
 * itself a file (or lies under one) is a storage error instead: reading its
 * state as absent would send the user to publish there, which cannot work.
 */
function absentAt(root: string, error: unknown): boolean {
  const code = errnoCode(error);
  return code === "ENOENT" || (code === "ENOTDIR" && nonFolderOnPath(root) === null);
}

/**
 * Open a regular file without following links; `null` when absent. Where
 * folders can be pinned (_fs-pinned.ts) the file is opened through its
 * folder held open, so that a folder swapped for a link between a check and
 * the open cannot send the read outside the root (a `verify` would then
 * judge someone else's file); elsewhere each folder is checked by path
 * first.
 */
async function openRegular(root: string, relPath: string): Promise<FileHandle | null> {
  const absolute = resolveInside(root, relPath);
  let handle: FileHandle | null;
  if (canPinFolders) {
    const pinned = await atPinnedEntry(
      root,
      relPath,
      (entry) => openNoFollow(root, relPath, entry),
      { lookupOnly: true },
    );
    if (pinned.kind === "unsafe") throw unsafeAncestorError(root, relPath, pinned);
    if (pinned.kind === "missing") return missingUnlessRootIsNoFolder(root, relPath);
    handle = pinned.value;
  } else {
    const check = await checkAncestors(root, relPath);
    if (check.kind === "unsafe") throw unsafeAncestorError(root, relPath, check);
    if (check.kind === "missing") return null;
    handle = await openNoFollow(root, relPath, absolute);
  }
  if (handle === null) return null;
  const stats = await handle.stat();
  if (stats.isFile()) return handle;
  await handle.close();
  const error = Object.assign(new Error("not a regular file"), { code: "EINVAL" });
  throw storageError("read", { root, relPath, error });
}

/**
 * A file whose folder was found missing (ENOENT, or ENOTDIR for a root
 * that is a file): absent, unless absentAt says the root is no folder,
 * which is a storage error.
 */
function missingUnlessRootIsNoFolder(root: string, relPath: string): null {
  const error = Object.assign(new Error("not a directory"), { code: "ENOTDIR" });
  if (absentAt(root, error)) return null;
  throw storageError("read", { root, relPath, error });
}

/** open(2) of `at` (the file `relPath` under `root`) without following a link; `null` when absent. */
async function openNoFollow(root: string, relPath: string, at: string): Promise<FileHandle | null> {
  try {
    return await open(at, READ_FLAGS);
  } catch (error) {
    if (absentAt(root, error)) return null;
    const code = errnoCode(error);
    // O_NOFOLLOW reports a final symlink as ELOOP (EMLINK on some BSDs).
    const what = code === "ELOOP" || code === "EMLINK" ? "read (it is a symbolic link)" : "read";
    throw storageError(what, { root, relPath, error });
  }
}

async function readSmall(root: string, relPath: string): Promise<StoredBytes | null> {
  const handle = await openRegular(root, relPath);
  if (handle === null) return null;
  try {
    // The token comes from the handle we read, so it describes exactly these bytes.
    const stats = await handle.stat();
    return { bytes: await readWhole(handle, stats.size), token: tokenOf(stats) };
  } catch (error) {
    throw storageError("read", { root, relPath, error });
  } finally {
    await handle.close();
  }
}

async function openStream(root: string, relPath: string): Promise<NodeJS.ReadableStream> {
  const handle = await openRegular(root, relPath);
  if (handle === null) {
    const error = Object.assign(new Error("no such file"), { code: "ENOENT" });
    throw storageError("read", { root, relPath, error });
  }
  // The stream closes the handle when it ends or fails.
  return handle.createReadStream();
}

/**
 * Unlink each path; then remove the paths that are folders, if nothing but
 * empty folders is in them (deepest first, once the files are gone); then
 * the folders the deletes left empty (deepest first). Where folders can be
 * pinned (_fs-pinned.ts), every unlink and rmdir goes through its parent
 * folder held open, so that a folder swapped for a link meanwhile is never
 * followed; the paths are then deleted folder by folder.
 */
async function deletePaths(root: string, paths: readonly string[]): Promise<DeleteResult[]> {
  const attempts = canPinFolders
    ? await deleteByFolder(root, paths)
    : await mapLimit(paths, (relPath) => deleteOne(root, relPath), { limit: DELETE_CONCURRENCY });
  if (writesStopped()) {
    // No folder is emptied and none removed any more (see deleteOne).
    const stopped = stoppedMessage();
    return attempts.map(({ path: relPath, error, folder }) =>
      error === undefined && !folder
        ? { path: relPath }
        : { path: relPath, error: error ?? stopped },
    );
  }
  const folders = attempts.filter((attempt) => attempt.folder).map((attempt) => attempt.path);
  const depth = (relPath: string) => relPath.split("/").length;
  const folderErrors = new Map<string, string>();
  for (const folder of folders.sort((a, b) => depth(b) - depth(a))) {
    await removeEmptyTree(root, folder).catch((error: unknown) => {
      if (errnoCode(error) !== "ENOENT") folderErrors.set(folder, deleteFailure(error));
    });
  }
  const results: DeleteResult[] = attempts.map(({ path: relPath, error }) => {
    const failure = error ?? folderErrors.get(relPath);
    return failure === undefined ? { path: relPath } : { path: relPath, error: failure };
  });
  const dirs = new Set<string>();
  for (const result of results) {
    if (result.error === undefined) for (const dir of ancestorsOf(result.path)) dirs.add(dir);
  }
  const deepestFirst = [...dirs].sort((a, b) => depth(b) - depth(a));
  const stuck = new Map<string, string>();
  for (const dir of deepestFirst) {
    const failure = await removeIfEmpty(root, dir);
    if (failure !== null) stuck.set(dir, failure);
  }
  return stuck.size === 0 ? results : results.map((result) => withStuckFolder(result, stuck));
}

/**
 * rmdir of `dir`, a folder a delete may have left empty: null when it is
 * gone or was not left empty, else why it stayed. rmdir never follows a link
 * and fails on a non-empty directory: exactly "left empty".
 */
async function removeIfEmpty(root: string, dir: string): Promise<string | null> {
  const attempt = async (entry: string): Promise<string | null> => {
    try {
      await rmdir(entry);
      return null;
    } catch (error) {
      if (NOT_OURS_TO_REMOVE.has(errnoCode(error) ?? "")) return null;
      // Linux checks permissions before emptiness: a folder that still
      // holds files under a read-only parent answers EACCES, not ENOTEMPTY.
      // One we may not read is passed over too (a plan that counted it gone
      // then fails at its write); any other readdir failure leaves it stuck.
      const left = await readdir(entry).catch((readError: unknown) =>
        UNREADABLE.has(errnoCode(readError) ?? "") ? ["?"] : [],
      );
      return left.length === 0 ? deleteFailure(error, entry, path.join(root, dir)) : null;
    }
  };
  if (!canPinFolders) return attempt(path.join(root, dir));
  const pinned = await atPinnedEntry(root, dir, attempt);
  // A parent gone or swapped for a link: nothing of ours is left to remove there.
  return pinned.kind === "ok" ? pinned.value : null;
}

/**
 * rmdir's answers that leave nothing of ours to remove: a folder that was
 * not left empty (ENOTEMPTY, EEXIST on some systems), is gone or is no folder
 * any more, or is in use (EBUSY: a mount point; on Windows also a folder
 * another program has open), which is not the run's to remove. Any other
 * (EACCES, EPERM, EROFS) on a folder that is empty leaves a folder that the
 * plan counted as removed.
 */
const NOT_OURS_TO_REMOVE = new Set(["ENOTEMPTY", "EEXIST", "ENOENT", "ENOTDIR", "EBUSY"]);
/** readdir's answers for a folder that is gone or that we may not read. */
const UNREADABLE = new Set(["EACCES", "EPERM", "ENOENT", "ENOTDIR"]);

/**
 * A delete whose emptied folder could not be removed fails too: its record
 * stays (the next run tries again where that folder is the file's own), and
 * the run stops before its later pairs, which may have been planned against
 * a root without that folder (run.ts, simulateApplied).
 */
function withStuckFolder(result: DeleteResult, stuck: ReadonlyMap<string, string>): DeleteResult {
  if (result.error !== undefined) return result;
  const dir = ancestorsOf(result.path)
    .reverse()
    .find((candidate) => stuck.has(candidate));
  if (dir === undefined) return result;
  return { path: result.path, error: `the folder ${dir} it left empty stayed: ${stuck.get(dir)}` };
}

/**
 * Unlink a file or symlink; true when the path is a folder instead, which
 * deletePaths removes later, and only if it holds nothing but empty folders
 * (the listing names empty folders; a clearing delete names a folder of ours
 * that a killed run emptied). Linux answers unlink of a directory with
 * EISDIR, macOS with EPERM.
 */
async function unlinkUnlessFolder(absolute: string): Promise<boolean> {
  try {
    await unlink(absolute);
    return false;
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "EISDIR" && code !== "EPERM") throw error;
    if (!(await lstat(absolute)).isDirectory()) throw error;
    return true;
  }
}

/**
 * rmdir of `folder` (under `root`) and of the empty folders in it; fails on
 * anything else in there. Where folders can be pinned, each is read through
 * its own descriptor and removed through its parent's, so none swapped for a
 * link is entered; elsewhere it is checked by path right before.
 */
async function removeEmptyTree(root: string, folder: string): Promise<void> {
  const absolute = path.join(root, folder);
  const gone = () => Object.assign(new Error(`${absolute} is gone`), { code: "ENOENT" });
  const notFolder = () =>
    Object.assign(new Error(`${absolute} is no longer a folder`), { code: "ENOTDIR" });
  const emptyTree = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) {
        const error = new Error(
          `${absolute} is a folder that holds ${entry.name}, not only empty folders`,
        );
        throw Object.assign(error, { code: "ENOTEMPTY" });
      }
      await removeEmptyTree(root, `${folder}/${entry.name}`);
    }
  };
  if (!canPinFolders) {
    // Checked again right here: a folder swapped for a symlink is never entered.
    if (!(await lstat(absolute)).isDirectory()) throw notFolder();
    await emptyTree(absolute);
    await rmdir(absolute);
    return;
  }
  const emptied = await inPinnedFolder(root, folder, emptyTree);
  if (emptied.kind === "missing") throw gone();
  if (emptied.kind === "unsafe") throw notFolder();
  const removed = await atPinnedEntry(root, folder, (entry) => rmdir(entry));
  if (removed.kind === "missing") throw gone();
  if (removed.kind === "unsafe") throw notFolder();
}

/** What deleting one path came to; `folder` when it is a folder, removed later. */
type DeleteAttempt = DeleteResult & { folder?: boolean };

/** Delete one path, its ancestors checked by path first (where folders cannot be pinned). */
async function deleteOne(root: string, relPath: string): Promise<DeleteAttempt> {
  const problem = unsafePathProblem(relPath);
  if (problem !== null) return { path: relPath, error: `refused: the path ${problem}` };
  try {
    // A signal stops deletes too, between one file and the next: the lock is
    // released once those in flight end (locks.ts), and nothing may be removed
    // under the root after that.
    assertWritesAllowed();
    const check = await checkAncestors(root, relPath);
    if (check.kind === "missing") return { path: relPath };
    if (check.kind === "unsafe")
      return { path: relPath, error: unsafeAncestorError(root, relPath, check).message };
    const folder = await unlinkUnlessFolder(path.join(root, relPath));
    return folder ? { path: relPath, folder } : { path: relPath };
  } catch (error) {
    return attemptFailed(relPath, error);
  }
}

/**
 * Delete `paths` folder by folder, each through its folder held open
 * (_fs-pinned.ts): one descriptor per folder being worked on, a few folders
 * at once. Results in the order of `paths`.
 */
async function deleteByFolder(root: string, paths: readonly string[]): Promise<DeleteAttempt[]> {
  const attempts: DeleteAttempt[] = new Array(paths.length);
  const byFolder = new Map<string, number[]>();
  paths.forEach((relPath, index) => {
    const problem = undeletablePathProblem(relPath);
    if (problem !== null) {
      attempts[index] = { path: relPath, error: `refused: the path ${problem}` };
      return;
    }
    const slash = relPath.lastIndexOf("/");
    const folder = slash < 0 ? "" : relPath.slice(0, slash);
    const members = byFolder.get(folder);
    if (members === undefined) byFolder.set(folder, [index]);
    else members.push(index);
  });
  await mapLimit(
    [...byFolder],
    async ([folder, indexes]) => {
      const inFolder = await inPinnedFolder(root, folder, async (dir) => {
        await mapLimit(
          indexes,
          async (index) => {
            const relPath = paths[index] as string;
            const name = path.posix.basename(relPath);
            attempts[index] = name.includes(NOT_UTF8)
              ? await deleteUndecodable(root, relPath, dir)
              : await deleteEntry(root, relPath, `${dir}/${name}`);
          },
          { limit: DELETES_PER_FOLDER },
        );
      }).catch((error: unknown) => {
        for (const index of indexes) attempts[index] = attemptFailed(paths[index] as string, error);
        return null;
      });
      if (inFolder === null || inFolder.kind === "ok") return;
      for (const index of indexes) {
        const relPath = paths[index] as string;
        attempts[index] =
          inFolder.kind === "missing"
            ? { path: relPath }
            : { path: relPath, error: unsafeAncestorError(root, relPath, inFolder).message };
      }
    },
    { limit: FOLDERS_AT_ONCE },
  );
  return attempts;
}

/** deleteByFolder's limits: DELETE_CONCURRENCY unlinks in flight at most, in a few folders. */
const FOLDERS_AT_ONCE = 4;
const DELETES_PER_FOLDER = DELETE_CONCURRENCY / FOLDERS_AT_ONCE;

/**
 * Delete what the listing showed as `relPath`, a name with U+FFFD in it, in
 * the open folder `dir`: every entry there whose bytes are not UTF-8 and
 * read as that name, with all it holds (the listing never looked inside
 * it). Such a name can only be reached by its bytes, and only `--force`
 * deletes content it did not record; a name that is U+FFFD in UTF-8 is
 * deleted as any other.
 */
async function deleteUndecodable(
  root: string,
  relPath: string,
  dir: string,
): Promise<DeleteAttempt> {
  const shown = path.posix.basename(relPath);
  try {
    assertWritesAllowed();
    for (const name of await readdir(dir, { encoding: "buffer" })) {
      if (name.toString("utf8") !== shown) continue;
      if (isUtf8(name)) await unlinkUnlessFolder(`${dir}/${shown}`);
      else await removeIn(dir, name);
    }
    return { path: relPath };
  } catch (error) {
    return attemptFailed(relPath, error, {
      shown: dir,
      real: path.join(root, path.posix.dirname(relPath)),
    });
  }
}

/** Unlink `relPath` through `entry`, its path inside its open folder. */
async function deleteEntry(root: string, relPath: string, entry: string): Promise<DeleteAttempt> {
  try {
    // A signal stops deletes too (see deleteOne).
    assertWritesAllowed();
    const folder = await unlinkUnlessFolder(entry);
    return folder ? { path: relPath, folder } : { path: relPath };
  } catch (error) {
    return attemptFailed(relPath, error, { shown: entry, real: path.join(root, relPath) });
  }
}

function attemptFailed(
  relPath: string,
  error: unknown,
  paths?: { shown: string; real: string },
): DeleteAttempt {
  const code = errnoCode(error);
  if (code === "ENOENT" || code === "ENOTDIR") return { path: relPath };
  return { path: relPath, error: deleteFailure(error, paths?.shown, paths?.real) };
}

/**
 * `EPERM: <message>`, without repeating the code when Node's message starts
 * with it; a pinned folder's /proc path `shown` written as the real `real`.
 */
function deleteFailure(error: unknown, shown?: string, real?: string): string {
  const code = errnoCode(error) ?? "error";
  let detail = error instanceof Error ? error.message : String(error);
  if (shown !== undefined && real !== undefined) detail = detail.split(shown).join(real);
  return detail.startsWith(`${code}:`) ? detail : `${code}: ${detail}`;
}

/**
 * Remove every child of the root except the lock, which the caller holds while
 * replacing the destination. fs.rm unlinks symlinks rather than following them;
 * where folders can be pinned, the tree is removed through open folders (removeIn).
 */
async function deleteEverything(root: string): Promise<void> {
  if (canPinFolders) {
    const emptied = await inPinnedFolder(root, "", (dir) => emptyPinnedRoot(root, dir));
    // A root that is missing (or a file) holds nothing to delete.
    if (emptied.kind === "unsafe") {
      const error = Object.assign(new Error(`the root is ${emptied.what}`), { code: "ENOTDIR" });
      throw storageError("delete", { root, relPath: "", error });
    }
    return;
  }
  let names: string[];
  try {
    names = await readdir(root);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw storageError("list", { root, relPath: "", error });
  }
  for (const name of names) {
    if (name === LOCK_FILE) continue;
    await rm(path.join(root, name), { recursive: true, force: true }).catch((error: unknown) => {
      throw storageError("delete", { root, relPath: name, error });
    });
  }
}

/**
 * Every entry of the open root `dir` but the lock, removed with removeIn.
 * Names are read as bytes: one that is not UTF-8 cannot be named again as a
 * string, and --force must empty the root of it too.
 */
async function emptyPinnedRoot(root: string, dir: string): Promise<void> {
  const lock = Buffer.from(LOCK_FILE);
  for (const name of await readdir(dir, { encoding: "buffer" })) {
    if (name.equals(lock)) continue;
    await removeIn(dir, name).catch((error: unknown) => {
      throw storageError("delete", { root, relPath: name.toString(), error });
    });
  }
}
