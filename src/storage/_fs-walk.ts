/**
 * The filesystem listing: one breadth-first walk of the root. Directory entries
 * give the type for free; only non-directories need an lstat (for the size),
 * done with bounded concurrency so a 100k-file tree neither crawls nor opens
 * thousands of requests at once. Symlinks are reported and never descended.
 */
import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import { mapLimit } from "./_concurrency.js";
import { errnoCode, storageError } from "./_fs-paths.js";
import type { StorageEntry } from "./driver.js";

const DIR_CONCURRENCY = 16;
const STAT_CONCURRENCY = 64;

interface DirListing {
  dirs: string[];
  leaves: string[];
}

/**
 * Every non-directory under `root` with its relative `/` path, sorted by UTF-8
 * bytes (the order S3 lists in). A missing root lists as empty. Entries that
 * vanish during the walk are skipped, not errors.
 */
export async function walkTree(root: string): Promise<StorageEntry[]> {
  const entries: StorageEntry[] = [];
  let level = [""];
  while (level.length > 0) {
    const listings = await mapLimit(level, DIR_CONCURRENCY, (dir) => readDirectory(root, dir));
    const leaves = listings.flatMap((listing) => listing.leaves);
    const found = await mapLimit(leaves, STAT_CONCURRENCY, (leaf) => statLeaf(root, leaf));
    for (const entry of found) if (entry !== null) entries.push(entry);
    level = listings.flatMap((listing) => listing.dirs);
  }
  return sortByUtf8Path(entries);
}

function sortByUtf8Path(entries: StorageEntry[]): StorageEntry[] {
  // Encode each path once: encoding inside the comparator costs n·log n buffers.
  const keyed = entries.map((entry) => ({ entry, key: Buffer.from(entry.path, "utf8") }));
  keyed.sort((a, b) => Buffer.compare(a.key, b.key));
  return keyed.map(({ entry }) => entry);
}

async function readDirectory(root: string, dir: string): Promise<DirListing> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(dir === "" ? root : path.join(root, dir), { withFileTypes: true });
  } catch (error) {
    const code = errnoCode(error);
    // A missing root lists as empty; a subdirectory removed mid-walk has nothing left to list.
    if (code === "ENOENT" || (dir !== "" && code === "ENOTDIR")) return { dirs: [], leaves: [] };
    throw storageError("list", { root, relPath: dir, error });
  }
  const listing: DirListing = { dirs: [], leaves: [] };
  for (const dirent of dirents) {
    const relPath = dir === "" ? dirent.name : `${dir}/${dirent.name}`;
    // isDirectory() is false for a symlink to a directory, so links are never descended.
    if (dirent.isDirectory()) listing.dirs.push(relPath);
    else listing.leaves.push(relPath);
  }
  return listing;
}

async function statLeaf(root: string, relPath: string): Promise<StorageEntry | null> {
  try {
    const stats = await lstat(path.join(root, relPath));
    return entryFromStats(relPath, stats);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw storageError("inspect", { root, relPath, error });
  }
}

/** The listing entry for lstat results: a directory counts as `other` (it is not a file). */
export function entryFromStats(
  relPath: string,
  stats: { size: number; isFile(): boolean; isSymbolicLink(): boolean },
): StorageEntry {
  if (stats.isFile()) return { path: relPath, size: stats.size, type: "file" };
  if (stats.isSymbolicLink()) return { path: relPath, size: stats.size, type: "symlink" };
  return { path: relPath, size: 0, type: "other" };
}
