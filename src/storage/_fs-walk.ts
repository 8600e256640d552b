/**
 * The filesystem listing: one walk of the root (level by level in walkTree,
 * from a stack of folders on each thread of a shared walk), sorted at the
 * end. Directory entries give the type for free; only non-directories need
 * an lstat (for the size). Those lstats are synchronous, one directory at a
 * time: they are served from the kernel's inode cache, and measured on 100k
 * files a synchronous lstat is about five times faster than one sent through
 * libuv's thread pool. The event loop still runs between directories
 * (readdir stays asynchronous). Symlinks are reported and never descended.
 */
import { type Dirent, lstatSync, readdirSync } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { mapLimit } from "../concurrency.js";
import { errnoCode } from "../errors.js";
import { compareUtf8 } from "../paths.js";
import {
  EventLoopTurns,
  idleHelperCount,
  newWorkClaims,
  onHelperOrHere,
  takeFront,
  type WorkClaims,
} from "../threads.js";
import { storageError } from "./_fs-paths.js";
import type { StorageEntry } from "./driver.js";

const DIR_CONCURRENCY = 8;

/**
 * Every non-directory under `root` with its relative `/` path, sorted by UTF-8
 * bytes (the order S3 lists in). A missing root lists as empty. Entries that
 * vanish during the walk are skipped, not errors.
 */
export async function walkTree(root: string): Promise<StorageEntry[]> {
  const entries: StorageEntry[] = [];
  let level = [""];
  while (level.length > 0) {
    const next: string[] = [];
    // Each folder's subfolders and entries go straight into `next` and
    // `entries`, in whatever order the reads end: the entries are sorted below.
    await mapLimit(level, (dir) => readDirectoryInto(root, dir, next, entries), {
      limit: DIR_CONCURRENCY,
    });
    level = next;
  }
  return sortByUtf8Path(entries);
}

/**
 * What one helper thread lists: `leaves` (non-directories already found,
 * to lstat) and the whole subtrees under `dirs`.
 */
export interface WalkShare {
  root: string;
  leaves: string[];
  dirs: string[];
  /**
   * When set, `dirs` then `leaves` are one list shared by several threads:
   * each takes the next item nobody has claimed yet (a directory's whole
   * subtree, or one top-level file), until none is left.
   */
  claims?: WorkClaims;
}

/** A share's entries, sorted, and the indexes of the shared items it did (dirs first, then leaves). */
export interface WalkPart {
  entries: StorageEntry[];
  done: number[];
}

/**
 * Every non-directory under the directories `dirs`, appended to `entries`
 * (in no particular order: each share is sorted once at its end).
 *
 * One stack of folders still to read, and every entry pushed straight into
 * `entries`: the same two arrays all the way through. The level-by-level walk
 * this replaced built each level's arrays with `map` and `flatMap`, whose
 * differing element kinds made V8 throw this loop's optimized code away
 * ("wrong map") and compile it again, up to 11 times in one unchanged rerun
 * of C, each compile 50-100 ms on a compiler thread that competes with the
 * walk for the same two cores (docs/performance.md, item 60).
 */
function walkDirsSync(root: string, dirs: readonly string[], entries: StorageEntry[]): void {
  const pending: string[] = [];
  for (const dir of dirs) pending.push(dir);
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    listInto(root, dir, direntsSync(root, dir), pending, entries);
  }
}

/** Walk shared item `index` of `share` (see WalkShare.claims) into `entries`. */
function walkItemSync(share: WalkShare, index: number, entries: StorageEntry[]): void {
  const { root, leaves, dirs } = share;
  if (index < dirs.length) {
    walkDirsSync(root, [dirs[index] as string], entries);
    return;
  }
  const entry = statLeaf(root, leaves[index - dirs.length] as string);
  if (entry !== null) entries.push(entry);
}

/** A share of the walk, synchronous from start to end, sorted: blocking costs nothing on a helper thread. */
export function walkShareSync(share: WalkShare): WalkPart {
  const { root, leaves, dirs, claims } = share;
  const entries: StorageEntry[] = [];
  const done: number[] = [];
  if (claims === undefined) {
    for (const relPath of leaves) {
      const entry = statLeaf(root, relPath);
      if (entry !== null) entries.push(entry);
    }
    walkDirsSync(root, dirs, entries);
  } else {
    for (let index = takeFront(claims); index !== undefined; index = takeFront(claims)) {
      walkItemSync(share, index, entries);
      done.push(index);
    }
  }
  return { entries: sortByUtf8Path(entries), done };
}

/**
 * This thread's part of a shared walk: the items the helpers have not
 * claimed yet, letting the event loop run every few milliseconds.
 */
async function walkClaimedHere(share: WalkShare & { claims: WorkClaims }): Promise<WalkPart> {
  const entries: StorageEntry[] = [];
  const done: number[] = [];
  const turns = new EventLoopTurns();
  for (let index = takeFront(share.claims); index !== undefined; index = takeFront(share.claims)) {
    walkItemSync(share, index, entries);
    done.push(index);
    if (turns.due()) await turns.take();
  }
  return { entries: sortByUtf8Path(entries), done };
}

const MAX_HELPERS = 4;
/** Directories per thread at the top of a shared walk: small shares even out. */
const DIRS_PER_THREAD = 8;

/**
 * The top of the tree, read here with readdir alone (no lstat): level by
 * level until a level holds `wantDirs` directories or the tree ends. One
 * snapshot, so the shares made from it neither overlap nor leave gaps.
 */
function splitTop(root: string, wantDirs: number): { leaves: string[]; dirs: string[] } {
  const leaves: string[] = [];
  let level = [""];
  while (level.length > 0 && level.length < wantDirs) {
    const next: string[] = [];
    for (const dir of level) {
      const dirents = direntsSync(root, dir);
      // An empty directory is a leaf: its lstat lists it (see listInto).
      if (dirents.length === 0 && dir !== "") leaves.push(dir);
      for (const dirent of dirents) {
        const relPath = dir === "" ? dirent.name : `${dir}/${dirent.name}`;
        // isDirectory() is false for a symlink to a directory, so links are never descended.
        (dirent.isDirectory() && reachable(root, relPath) ? next : leaves).push(relPath);
      }
    }
    level = next;
  }
  return { leaves, dirs: level };
}

/**
 * The walk on helper threads, for a caller that has CPU work of its own
 * meanwhile (parsing a large state): the lstats are kernel work that the
 * other cores can do in parallel. The top of the tree is read here; the
 * helpers take its directories one at a time from a shared list, and once
 * the caller's synchronous work is done (at the next turn of the event loop)
 * this thread takes from the same list too, so the walk ends on every thread
 * at about the same time. Each part is sorted, and the parts are merged. A
 * helper that fails (see onHelperOrHere) answers nothing: its top-level files
 * and every directory nobody answered for are then walked here.
 *
 * By default it uses the helpers already started and idle (verification
 * leaves them), or one new one: starting a thread costs 30-100 ms of CPU,
 * about as much as listing 10,000 files.
 */
export async function walkTreeOffThread(
  root: string,
  helpers = Math.min(Math.max(1, idleHelperCount()), MAX_HELPERS),
): Promise<StorageEntry[]> {
  const { leaves, dirs } = splitTop(root, (helpers + 1) * DIRS_PER_THREAD);
  const count = dirs.length + leaves.length;
  const shared = { root, leaves, dirs, claims: newWorkClaims(count) };
  // A small or missing root would start threads for nothing.
  const answers = Array.from({ length: count > 0 ? helpers : 0 }, () =>
    onHelperOrHere(
      WALK_JOB,
      shared,
      (message) => unpackPart(message as PackedPart, count),
      () => null,
    ),
  );
  // This thread joins in once the caller's synchronous work is done.
  await new EventLoopTurns().take();
  const here = await walkClaimedHere(shared);
  const parts = await Promise.all(answers);
  const redone = walkShareSync(leftOver(shared, [here, ...parts])).entries;
  return mergeSorted([here.entries, ...parts.map((part) => part?.entries ?? []), redone]);
}

/**
 * The items of a shared walk that no answered part did (null: a helper that
 * failed, whose claimed items are lost with it), as a share to walk alone.
 */
export function leftOver(shared: WalkShare, parts: readonly (WalkPart | null)[]): WalkShare {
  const done = new Set<number>();
  for (const part of parts) for (const index of part?.done ?? []) done.add(index);
  const { root, dirs, leaves } = shared;
  return {
    root,
    dirs: dirs.filter((_, index) => !done.has(index)),
    leaves: leaves.filter((_, index) => !done.has(dirs.length + index)),
  };
}

const WALK_JOB = new URL("./_fs-walk-job.js", import.meta.url);

/** Merge lists that are each sorted by UTF-8 bytes of path into one. */
function mergeSorted(lists: StorageEntry[][]): StorageEntry[] {
  let merged = lists[0] ?? [];
  for (const list of lists.slice(1)) {
    const out: StorageEntry[] = [];
    let i = 0;
    let j = 0;
    while (i < merged.length && j < list.length) {
      const a = merged[i] as StorageEntry;
      const b = list[j] as StorageEntry;
      if (compareUtf8(a.path, b.path) <= 0) {
        out.push(a);
        i++;
      } else {
        out.push(b);
        j++;
      }
    }
    for (; i < merged.length; i++) out.push(merged[i] as StorageEntry);
    for (; j < list.length; j++) out.push(list[j] as StorageEntry);
    merged = out;
  }
  return merged;
}

/**
 * A listing as three flat values: structured cloning 100,000 entry objects
 * took about 200 ms more than one string of paths and two typed arrays.
 */
export interface PackedEntries {
  /** Every path, joined by NUL (which no file name contains). */
  paths: string;
  sizes: Float64Array<ArrayBuffer>;
  /** Index into ENTRY_TYPES. */
  types: Uint8Array<ArrayBuffer>;
}

const ENTRY_TYPES: readonly StorageEntry["type"][] = ["file", "symlink", "other", "directory"];

function packEntries(entries: readonly StorageEntry[]): PackedEntries {
  const sizes = new Float64Array(entries.length);
  const types = new Uint8Array(entries.length);
  entries.forEach((entry, index) => {
    sizes[index] = entry.size;
    types[index] = ENTRY_TYPES.indexOf(entry.type);
  });
  return { paths: entries.map((entry) => entry.path).join("\0"), sizes, types };
}

/** The entries again; null for anything that is not a whole packed listing. */
function unpackEntries(packed: PackedEntries): StorageEntry[] | null {
  if (typeof packed?.paths !== "string") return null;
  const paths = packed.paths === "" ? [] : packed.paths.split("\0");
  const { sizes, types } = packed;
  if (sizes?.length !== paths.length || types?.length !== paths.length) return null;
  return paths.map((relPath, index) => ({
    path: relPath,
    size: sizes[index] as number,
    type: ENTRY_TYPES[types[index] as number] ?? "other",
  }));
}

/** A helper's WalkPart as sent: packed entries and the indexes of the shared items it did. */
export interface PackedPart {
  entries: PackedEntries;
  done: Int32Array<ArrayBuffer>;
}

export function packPart(part: WalkPart): { packed: PackedPart; transfer: ArrayBuffer[] } {
  const entries = packEntries(part.entries);
  const done = Int32Array.from(part.done);
  return {
    packed: { entries, done },
    transfer: [entries.sizes.buffer, entries.types.buffer, done.buffer],
  };
}

/** The part again; null for anything that is not a whole packed part of a walk of `count` items. */
function unpackPart(packed: PackedPart, count: number): WalkPart | null {
  const entries = unpackEntries(packed?.entries);
  if (entries === null || !(packed.done instanceof Int32Array)) return null;
  const done = [...packed.done];
  if (done.some((index) => index < 0 || index >= count)) return null;
  return { entries, done };
}

const SURROGATE = /[\uD800-\uDFFF]/;

function sortByUtf8Path(entries: StorageEntry[]): StorageEntry[] {
  // Without surrogates (characters beyond U+FFFF), UTF-16 code units order
  // like UTF-8 bytes, and comparing the strings is about twice as fast as
  // comparing encoded buffers (100,000 paths: 0.18 s against 0.33 s).
  if (!entries.some((entry) => SURROGATE.test(entry.path))) {
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
  // Encode each path once: encoding inside the comparator costs n·log n buffers.
  const keyed = entries.map((entry) => ({ entry, key: Buffer.from(entry.path, "utf8") }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map(({ entry }) => entry);
}

/** Read `dir` and add its subfolders to `dirs` and everything else in it to `entries`. */
async function readDirectoryInto(
  root: string,
  dir: string,
  dirs: string[],
  entries: StorageEntry[],
): Promise<void> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(dir === "" ? root : path.join(root, dir), { withFileTypes: true });
  } catch (error) {
    unreadableDirectory(root, dir, error); // throws unless the directory is gone
    return;
  }
  listInto(root, dir, dirents, dirs, entries);
}

/** The entries of `dir`; none for a directory that is gone (see unreadableDirectory). */
function direntsSync(root: string, dir: string): Dirent[] {
  try {
    return readdirSync(dir === "" ? root : path.join(root, dir), { withFileTypes: true });
  } catch (error) {
    unreadableDirectory(root, dir, error); // throws unless the directory is gone
    return [];
  }
}

/** A missing root lists as empty; a subdirectory removed mid-walk has nothing left to list. */
function unreadableDirectory(root: string, dir: string, error: unknown): void {
  const code = errnoCode(error);
  if (code === "ENOENT" || (dir !== "" && code === "ENOTDIR")) return;
  throw storageError("list", { root, relPath: dir, error });
}

/** Add the subfolders among `dirents` (those of `dir`) to `dirs`, and everything else to `entries`. */
function listInto(
  root: string,
  dir: string,
  dirents: readonly Dirent[],
  dirs: string[],
  entries: StorageEntry[],
): void {
  // An empty directory is listed itself: nothing under it would show it, and a
  // planned file cannot be written where it is.
  if (dirents.length === 0 && dir !== "") entries.push({ path: dir, size: 0, type: "directory" });
  for (const dirent of dirents) {
    const relPath = dir === "" ? dirent.name : `${dir}/${dirent.name}`;
    // isDirectory() is false for a symlink to a directory, so links are never descended.
    if (dirent.isDirectory() && reachable(root, relPath)) dirs.push(relPath);
    else {
      const entry = statLeaf(root, relPath);
      if (entry !== null) entries.push(entry);
    }
  }
}

/**
 * U+FFFD, which readdir puts in place of bytes that are not UTF-8. Such a
 * name cannot be looked up again as a string: it is listed as `other` (see
 * statLeaf), so that it counts as unmanaged content, as anything else there.
 */
export const NOT_UTF8 = "\uFFFD";

/** Whether the folder at `relPath` can be read by that name (see NOT_UTF8). */
function reachable(root: string, relPath: string): boolean {
  if (!relPath.includes(NOT_UTF8)) return true;
  try {
    lstatSync(`${root}/${relPath}`);
    return true;
  } catch {
    return false;
  }
}

function statLeaf(root: string, relPath: string): StorageEntry | null {
  try {
    // Concatenated, not path.join: relPath is made of directory entry names, so
    // there is nothing to normalise, and join cost 0.7 µs of the ~6 µs per entry.
    return entryFromStats(relPath, lstatSync(`${root}/${relPath}`));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      // A name that is not UTF-8 is there, under a name no string can give:
      // unmanaged content in the way of an empty-root publish, not nothing.
      // (A file that vanished during the walk is skipped, as ever.)
      return relPath.includes(NOT_UTF8) ? { path: relPath, size: 0, type: "other" } : null;
    }
    throw storageError("inspect", { root, relPath, error });
  }
}

/** The listing entry for lstat results. */
export function entryFromStats(
  relPath: string,
  stats: { size: number; isFile(): boolean; isSymbolicLink(): boolean; isDirectory(): boolean },
): StorageEntry {
  if (stats.isFile()) return { path: relPath, size: stats.size, type: "file" };
  if (stats.isSymbolicLink()) return { path: relPath, size: stats.size, type: "symlink" };
  if (stats.isDirectory()) return { path: relPath, size: 0, type: "directory" };
  return { path: relPath, size: 0, type: "other" };
}
