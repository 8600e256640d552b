/**
 * Folders held open while the files in them are removed or written, so that
 * a folder swapped for a symbolic link in the middle of a delete or a write
 * cannot send it outside the root.
 *
 * A check of the path followed by `unlink(path)` leaves a window: anyone who
 * can rename entries under the root can replace a checked folder with a link
 * to a folder elsewhere, and the unlink then removes the file of the same
 * name there (a review reproduced it with a replacement run of 10,000
 * deletes: a dozen files outside the root removed). Here a folder is opened
 * level by level from the root, every level with O_NOFOLLOW, and the calls
 * that follow name their file through `/proc/self/fd/<fd>/<name>`, which the
 * kernel resolves through the open folder itself: the folder opened while it
 * was inside the root stays the one used, wherever it is moved meanwhile,
 * and a link put in its place is never followed. Node.js has no unlinkat(2);
 * this is the same guarantee through Linux's /proc. Writes go the same way
 * (OpenFolders, _fs-write.ts), and so does making and committing a new
 * folder's temporary stand-in (_fs-staging.ts). Reads open their file the
 * same way, through folders opened with O_PATH (`lookupOnly`).
 *
 * A descriptor is closed only once every call through it has settled (a
 * number closed and reused while a call through it is in flight would
 * resolve to another folder), and at most one per folder being worked on is
 * open: a tree of 10,000 folders must not need 10,000 descriptors.
 *
 * Elsewhere (no /proc/self/fd) `canPinFolders` is false and callers check
 * each folder by path before using it, with the window above
 * (docs/destination-state.md, "Folders swapped for links").
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  type Stats,
} from "node:fs";
import { readdir, rmdir, unlink } from "node:fs/promises";
import { errnoCode } from "../errors.js";
import { type AncestorCheck, storageError } from "./_fs-paths.js";

const PROC_FD = "/proc/self/fd";
/** The root, opened as configured: a link there is followed (docs/configuration.md). */
const ROOT_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY;
/** A folder under the root: never through a link at its own name. */
export const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/**
 * Linux's O_PATH (Node.js has no constant for it): a descriptor only to
 * look names up in, which needs search permission on the folder but not
 * read permission. Opening a file by its path needs no more, so reads open
 * their folders this way: with O_RDONLY, a folder the user may enter but not
 * list (0711) refused reads that had always worked (a review, 2026-12-03).
 */
const O_PATH = 0o10000000;

/** How a caller uses the folder: `lookupOnly` for opening files in it only (O_PATH). */
export interface PinOptions {
  lookupOnly?: boolean;
}

/** The path that names the open file or folder `fd` (Linux). */
export function fdPath(fd: number): string {
  return `${PROC_FD}/${fd}`;
}

/** Whether folders can be pinned here (Linux with /proc mounted). */
export const canPinFolders = process.platform === "linux" && existsSync(PROC_FD);

/** Why a folder could not be opened: it is missing, or a link or a file stands on the way. */
export type NotPinned = Exclude<AncestorCheck, { kind: "ok" }>;

/**
 * Run `body` with `relDir` (under `root`; "" for the root itself) open,
 * passing the path that names it through its descriptor; closed once `body`
 * settles. The root is opened as configured, a link included (as everywhere
 * else: docs/configuration.md); each folder under it with O_NOFOLLOW,
 * relative to the one above, whose descriptor is closed as soon as the next
 * is open.
 */
export async function inPinnedFolder<T>(
  root: string,
  relDir: string,
  body: (dir: string) => Promise<T>,
  options: PinOptions = {},
): Promise<Pinned<T>> {
  const opened = openPinnedFolder(root, relDir, options);
  if (typeof opened !== "number") return opened;
  try {
    return { kind: "ok", value: await body(fdPath(opened)) };
  } finally {
    closeSync(opened);
  }
}

/** What `body` gave, or why its folder could not be opened. */
export type Pinned<T> = { kind: "ok"; value: T } | NotPinned;

/** inPinnedFolder on `relPath`'s parent, passing the path of `relPath`'s own entry in it. */
export function atPinnedEntry<T>(
  root: string,
  relPath: string,
  body: (entry: string) => Promise<T>,
  options: PinOptions = {},
): Promise<Pinned<T>> {
  const slash = relPath.lastIndexOf("/");
  const parent = slash < 0 ? "" : relPath.slice(0, slash);
  return inPinnedFolder(root, parent, (dir) => body(`${dir}/${relPath.slice(slash + 1)}`), options);
}

/**
 * The descriptor of `relDir` under `root` (see inPinnedFolder), or why it
 * cannot be opened; the caller closes it.
 */
export function openPinnedFolder(
  root: string,
  relDir: string,
  options: PinOptions = {},
): number | NotPinned {
  const lookup = options.lookupOnly ? O_PATH : 0;
  let fd = openOne(root, "", root, ROOT_FLAGS | lookup);
  if (typeof fd !== "number") return fd;
  let at = "";
  for (const name of relDir === "" ? [] : relDir.split("/")) {
    at = at === "" ? name : `${at}/${name}`;
    let next: number | NotPinned;
    try {
      next = openOne(root, at, `${fdPath(fd)}/${name}`, FOLDER_FLAGS | lookup);
    } finally {
      // Also when openOne throws (EACCES, ENAMETOOLONG, EMFILE): a failed
      // read must not leave its parent's descriptor open.
      closeSync(fd);
    }
    if (typeof next !== "number") return next;
    fd = next;
  }
  return fd;
}

function openOne(root: string, relDir: string, at: string, flags: number): number | NotPinned {
  try {
    return openSync(at, flags);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return { kind: "missing" };
    // A root that is a file holds nothing to delete (as a path lookup under it finds).
    if (code === "ENOTDIR" && relDir === "") return { kind: "missing" };
    // With O_DIRECTORY, Linux answers a link with ENOTDIR (ELOOP without
    // it), as it answers a file: the entry itself says which (lstat never
    // follows it, and `at` reaches it through the open parent).
    if (code === "ENOTDIR" || code === "ELOOP") {
      const link = lstatIfThere(at)?.isSymbolicLink();
      if (link === undefined) return { kind: "missing" };
      return {
        kind: "unsafe",
        ancestor: relDir,
        what: link ? "a symbolic link" : "not a directory",
      };
    }
    throw storageError("inspect", { root, relPath: relDir, error });
  }
}

function lstatIfThere(at: string): Stats | undefined {
  try {
    return lstatSync(at);
  } catch {
    return undefined;
  }
}

/** A folder as it was opened or made: what tells it from any other put at its name. */
export interface FolderId {
  dev: number;
  ino: number;
}

/** Whether the open folder `fd` is the folder `id`. */
export function isSameFolder(fd: number, id: FolderId): boolean {
  const stats = fstatSync(fd);
  return stats.dev === id.dev && stats.ino === id.ino;
}

/**
 * A folder on the way that must be one known by its device and inode: a
 * private temporary folder this run made (_fs-staging.ts), which anyone who
 * can rename entries in its parent could swap for another folder.
 */
export interface ExpectedFolder extends FolderId {
  /** Its path under the root. */
  at: string;
}

/**
 * The folders a writer holds open: each folder under the root opened once
 * and kept for the writes that follow, closed together by `close`, which
 * the writer calls only once every call through them has settled (a write
 * thread's batch is synchronous; a large write awaits its copy and rename
 * first).
 */
export class OpenFolders {
  /** Relative folder (under its root) → its descriptor; ancestors included. */
  readonly #fds = new Map<string, number>();

  /**
   * `relDir` under `root` held open: the path naming it through its
   * descriptor, or why it cannot be opened. Opened from its deepest folder
   * already open (a batch's writes share their upper folders), each level
   * with O_NOFOLLOW inside the one before. Folders missing below `keep` (a
   * relative folder that must already exist, such as a staged write's
   * temporary folder; "" for none) are made, one level at a time; with no
   * `keep`, a missing root is made too, as the root a run publishes to for
   * the first time. `expect`: a folder on the way that must be that one
   * (checked when it is opened).
   */
  folder(root: string, relDir: string, keep = "", expect?: ExpectedFolder): string | NotPinned {
    const key = (dir: string) => `${root}\0${dir}`;
    const names = relDir === "" ? [] : relDir.split("/");
    let level = names.length;
    while (level > 0 && !this.#fds.has(key(names.slice(0, level).join("/")))) level--;
    let fd = this.#fds.get(key(names.slice(0, level).join("/")));
    if (fd === undefined) {
      const opened = openRoot(root, keep === "");
      if (typeof opened !== "number") return opened;
      fd = opened;
      this.#fds.set(key(""), fd);
    }
    for (let at = level; at < names.length; at++) {
      const dir = names.slice(0, at + 1).join("/");
      const next = openOrMake(root, dir, `${PROC_FD}/${fd}/${names[at]}`, keep);
      if (typeof next !== "number") return next;
      if (expect?.at === dir && !isSameFolder(next, expect)) {
        closeSync(next);
        return { kind: "unsafe", ancestor: dir, what: "not the temporary folder this run made" };
      }
      fd = next;
      this.#fds.set(key(dir), fd);
    }
    return `${PROC_FD}/${fd}`;
  }

  close(): void {
    for (const fd of this.#fds.values()) closeSync(fd);
    this.#fds.clear();
  }
}

/** The root's descriptor; made first when missing and `make`. */
function openRoot(root: string, make: boolean): number | NotPinned {
  const opened = openOne(root, "", root, ROOT_FLAGS);
  if (typeof opened === "number" || opened.kind !== "missing" || !make) return opened;
  try {
    mkdirSync(root, { recursive: true });
  } catch (error) {
    throw storageError("create the destination root", { root, relPath: "", error });
  }
  return openOne(root, "", root, ROOT_FLAGS);
}

/** The folder `dir` at `entry` (inside its open parent), made first when missing below `keep`. */
function openOrMake(root: string, dir: string, entry: string, keep: string): number | NotPinned {
  const opened = openOne(root, dir, entry, FOLDER_FLAGS);
  const mayMake = keep === "" || (dir !== keep && dir.startsWith(`${keep}/`));
  if (typeof opened === "number" || opened.kind !== "missing" || !mayMake) return opened;
  try {
    mkdirSync(entry);
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") {
      throw storageError("create the directory", { root, relPath: dir, error });
    }
  }
  return openOne(root, dir, entry, FOLDER_FLAGS);
}

/**
 * The entry `name` of the open folder `dir` (a /proc/self/fd path) and
 * everything under it: a folder is opened with O_NOFOLLOW relative to `dir`,
 * emptied through its own descriptor and then removed through `dir`, so a
 * folder swapped for a link at any moment is never entered: fs.rm reads a
 * folder by its path after checking it, and a folder swapped for a link in
 * between had the link's target emptied. A link is removed itself. One
 * descriptor per level is open at a time.
 */
export async function removeIn(dir: string, name: Buffer): Promise<void> {
  const entry = Buffer.concat([Buffer.from(`${dir}/`), name]);
  let fd: number;
  try {
    fd = openSync(entry, FOLDER_FLAGS);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT") return;
    // Not a folder (a file, a link, a fifo...): unlink never follows it.
    if (code === "ENOTDIR" || code === "ELOOP") return unlink(entry).catch(ignoreMissing);
    throw error;
  }
  try {
    const inside = fdPath(fd);
    for (const child of await readdir(inside, { encoding: "buffer" }))
      await removeIn(inside, child);
  } finally {
    closeSync(fd);
  }
  try {
    await rmdir(entry);
  } catch (error) {
    // Swapped for a link (or a file) while it was emptied: remove that instead.
    if (errnoCode(error) === "ENOTDIR") await unlink(entry).catch(ignoreMissing);
    else ignoreMissing(error);
  }
}

function ignoreMissing(error: unknown): void {
  if (errnoCode(error) !== "ENOENT") throw error;
}
