/**
 * Path safety for the filesystem driver: a relative path is joined under the
 * root only when it cannot leave it, and nothing is read, written or deleted
 * through a symbolic link (or a file standing where a directory should be)
 * inside the root. The root itself may be a symlink: the user configured it.
 */
import { randomBytes } from "node:crypto";
import { lstatSync, type Stats, statSync } from "node:fs";
import { lstat } from "node:fs/promises";
import path from "node:path";
import { DistributorError, errnoCode } from "../errors.js";
import { ancestorsOf, TEMP_PREFIX } from "../paths.js";

// C0 controls and DEL; NUL is among them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `relPath` could escape the root or name no file, or `null` when it is safe
 * to join. Unlike the clean path rules, reserved `.distributor.` names pass: the
 * driver stores the state and lock files under them.
 */
export function unsafePathProblem(relPath: string): string | null {
  if (relPath === "") return "is empty";
  if (relPath.includes("\\")) return "contains a backslash";
  if (CONTROL.test(relPath)) return "contains NUL or a control character";
  return shapeProblem(relPath);
}

/**
 * The longest name a folder holds, in bytes: NAME_MAX on Linux's file
 * systems (ext4, XFS, Btrfs, tmpfs) and on macOS's. A manifest's names exist
 * in the bundle, but a derived one is longer (`x.md` → `x.html`, `x` →
 * `x.html`), and written it would fail halfway through the apply, after the
 * claim state recorded it. Some file systems hold less (eCryptfs about 143):
 * there the write still fails as it reaches such a name.
 */
const NAME_MAX_BYTES = 255;
/** Above this many UTF-16 units a name may exceed NAME_MAX_BYTES: UTF-8 takes at most 3 bytes a unit. */
const NAME_MAX_UNITS = Math.floor(NAME_MAX_BYTES / 3);

/**
 * Why the root cannot hold a file at the clean path `relPath`
 * (StorageDriver.pathProblem): a name longer than a folder holds. A length
 * check first, so that the usual short path costs one comparison.
 */
export function longNameProblem(relPath: string): string | null {
  if (relPath.length <= NAME_MAX_UNITS) return null;
  for (const name of relPath.split("/")) {
    if (name.length <= NAME_MAX_UNITS) continue;
    const bytes = Buffer.byteLength(name);
    if (bytes > NAME_MAX_BYTES) {
      return `its name ${[...name].slice(0, 24).join("")}… is ${bytes} bytes, and a folder holds names of at most ${NAME_MAX_BYTES}`;
    }
  }
  return null;
}

/** An absolute path, or an empty, `.` or `..` segment: what could lead out of a folder. */
function shapeProblem(relPath: string): string | null {
  if (relPath.startsWith("/")) return "is absolute";
  for (const segment of relPath.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      return `contains an empty, '.' or '..' segment`;
    }
  }
  return null;
}

/**
 * unsafePathProblem for a delete through folders held open (_fs-pinned.ts,
 * Linux): each segment is then only ever a name inside the folder opened
 * before it, so a backslash or a control character (both legal in Linux
 * file names) cannot change where it leads; empty, `.` and `..` segments
 * still could. `--force` can then empty a root of names that no output
 * could have (`a\b`, a newline), which it listed and must delete.
 */
export function undeletablePathProblem(relPath: string): string | null {
  if (relPath === "") return "is empty";
  if (relPath.includes("\0")) return "contains NUL";
  return shapeProblem(relPath);
}

/** The absolute path of `relPath` under `root`; throws `unsafe_path` when it is not safe. */
export function resolveInside(root: string, relPath: string): string {
  const problem = unsafePathProblem(relPath);
  const absolute = path.join(root, ...relPath.split("/"));
  const inside = root.endsWith(path.sep) ? root : root + path.sep;
  if (problem === null && absolute.startsWith(inside)) return absolute;
  throw new DistributorError(
    "unsafe_path",
    `Refusing storage path ${JSON.stringify(relPath)} under ${root}: it ${problem ?? "leaves the root"}. Only clean relative paths can be stored.`,
    { paths: [relPath] },
  );
}

/** What stands on the way from the root to a path's parent directory. */
export type AncestorCheck =
  | { kind: "ok" }
  /** An ancestor does not exist: the path itself cannot exist either. */
  | { kind: "missing" }
  /** An ancestor is a symlink or not a directory; `ancestor` is its relative path. */
  | { kind: "unsafe"; ancestor: string; what: string };

/**
 * lstat every proper ancestor of `relPath` from the top down. Throws
 * `storage_error` only for unexpected errors (EACCES, EIO, ...).
 */
export async function checkAncestors(root: string, relPath: string): Promise<AncestorCheck> {
  for (const ancestor of ancestorsOf(relPath)) {
    let stats: Stats;
    try {
      stats = await lstat(path.join(root, ancestor));
    } catch (error) {
      return ancestorMissing(root, ancestor, error);
    }
    const problem = ancestorProblem(ancestor, stats);
    if (problem) return problem;
  }
  return { kind: "ok" };
}

/**
 * checkAncestors with synchronous lstats, for the small-file write path: served
 * from the inode cache they cost a fraction of a thread-pool round trip.
 * `checked`, when given, holds the absolute paths of folders already found
 * to be real directories, and gets the ones found here: a write thread keeps
 * one for a batch of writes (a few milliseconds), which share their upper
 * folders.
 */
export function checkAncestorsSync(
  root: string,
  relPath: string,
  checked?: Set<string>,
): AncestorCheck {
  return checkFoldersSync(root, ancestorsOf(relPath), checked);
}

/**
 * checkAncestorsSync for `folder` itself and every folder above it: the
 * check of a write into a temporary folder (_fs-staging.ts), which stops at
 * that folder.
 */
export function checkFolderSync(
  root: string,
  folder: string,
  checked?: Set<string>,
): AncestorCheck {
  return checkFoldersSync(root, [...ancestorsOf(folder), folder], checked);
}

/** lstat each of `folders` (each inside the one before) under `root`, from the top. */
function checkFoldersSync(
  root: string,
  folders: readonly string[],
  checked: Set<string> | undefined,
): AncestorCheck {
  for (const ancestor of folders) {
    const absolute = path.join(root, ancestor);
    if (checked?.has(absolute)) continue;
    let stats: Stats;
    try {
      stats = lstatSync(absolute);
    } catch (error) {
      return ancestorMissing(root, ancestor, error);
    }
    const problem = ancestorProblem(ancestor, stats);
    if (problem) return problem;
    checked?.add(absolute);
  }
  return { kind: "ok" };
}

function ancestorMissing(root: string, ancestor: string, error: unknown): AncestorCheck {
  const code = errnoCode(error);
  if (code === "ENOENT" || code === "ENOTDIR") return { kind: "missing" };
  throw storageError("inspect", { root, relPath: ancestor, error });
}

function ancestorProblem(ancestor: string, stats: Stats): AncestorCheck | null {
  if (stats.isSymbolicLink()) return { kind: "unsafe", ancestor, what: "a symbolic link" };
  if (!stats.isDirectory()) return { kind: "unsafe", ancestor, what: "not a directory" };
  return null;
}

/** The `unsafe_path` error for an ancestor check that found a symlink or a file. */
export function unsafeAncestorError(
  root: string,
  relPath: string,
  check: { ancestor: string; what: string },
): DistributorError {
  return new DistributorError(
    "unsafe_path",
    `Refusing to touch ${relPath} under ${root}: its parent ${check.ancestor} is ${check.what}, and distributor never writes, reads or deletes through it. Remove or rename ${check.ancestor} (or use run --force to replace the destination).`,
    { paths: [relPath, check.ancestor] },
  );
}

/**
 * Map an unexpected filesystem error to `storage_error`, naming the operation,
 * the path and the errno code, and keeping the original as `cause`.
 */
export function storageError(
  operation: string,
  where: { root: string; relPath: string; error: unknown },
): DistributorError {
  const code = errnoCode(where.error) ?? "error";
  const target = where.relPath === "" ? where.root : path.join(where.root, where.relPath);
  // Node's errno messages already read "CODE: description, syscall 'path'";
  // keep only the description: the code and the path are said once, here.
  const message = where.error instanceof Error ? where.error.message : String(where.error);
  const detail = message.replace(/^[A-Z]+: /, "").replace(/, \w+ '.*'$/, "");
  // A root mistyped onto a file: say so, rather than "check that it exists".
  const notAFolder =
    code === "ENOTDIR" || (code === "EEXIST" && where.relPath === "")
      ? nonFolderOnPath(where.root)
      : null;
  if (notAFolder !== null) {
    const what =
      notAFolder === where.root
        ? `the destination root ${where.root} is`
        : `${notAFolder}, on the way to the destination root ${where.root}, is`;
    return new DistributorError(
      "storage_error",
      `Could not ${operation} ${target}: ${what} a file (or something else that is not a folder). Point the destination's storage root at a folder, or move ${notAFolder} out of the way.`,
      { paths: where.relPath === "" ? [] : [where.relPath], cause: where.error },
    );
  }
  return new DistributorError(
    "storage_error",
    `Could not ${operation} ${target} (${code}: ${detail}). Check that the destination exists, is writable and has free space.`,
    { paths: where.relPath === "" ? [] : [where.relPath], cause: where.error },
  );
}

/**
 * `root`, or the first folder on its way from the top, that exists and is not
 * a folder (symlinks followed, as the root's path is: the user chose it); null
 * when there is none, or when a part cannot be read.
 */
export function nonFolderOnPath(root: string): string | null {
  const top = path.parse(root).root;
  let current = top;
  for (const part of root.slice(top.length).split(path.sep)) {
    if (part === "") continue;
    current = path.join(current, part);
    try {
      if (!statSync(current).isDirectory()) return current;
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * What is at `absolute`, without following a symlink: a real folder, nothing
 * (ENOENT), or anything else, a file, a symlink, or an error such as EACCES
 * (left for the write that follows to report).
 */
export function kindAt(absolute: string): "folder" | "missing" | "other" {
  try {
    return lstatSync(absolute).isDirectory() ? "folder" : "other";
  } catch (error) {
    return errnoCode(error) === "ENOENT" ? "missing" : "other";
  }
}

/**
 * Temp file names: 64 random bits drawn once per thread, then a counter.
 * Unique among concurrent writers and cheap: `randomBytes` for each file cost
 * 4 µs, 0.4 s of CPU for 100,000 outputs. A leftover of a crashed run has
 * another random part (and is removed before writing starts); temp files are
 * created exclusively, so even a clash would fail, never overwrite.
 */
const TEMP_SESSION = randomBytes(8).toString("hex");
let tempCount = 0;

/** A new temp file name (`.distributor.tmp-*`) in the directory `dir`. */
export function tempPathIn(dir: string): string {
  return path.join(dir, `${TEMP_PREFIX}${TEMP_SESSION}-${(tempCount++).toString(36)}`);
}
