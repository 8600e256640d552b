/**
 * Atomic writes for the filesystem driver: the bytes go to a temporary file in
 * the target's own directory, which is then renamed over the target, so a
 * reader (or a crash) sees the old file or the new one, never a mix.
 */
import {
  constants,
  mkdirSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
} from "node:fs";
import { lstat, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import { limiter } from "../concurrency.js";
import { DistributorError, errnoCode } from "../errors.js";
import type { OutputContent } from "../model.js";
import {
  checkAncestors,
  checkAncestorsSync,
  checkFolderSync,
  kindAt,
  resolveInside,
  storageError,
  tempPathIn,
  unsafeAncestorError,
} from "./_fs-paths.js";
import { canPinFolders, type FolderId, OpenFolders } from "./_fs-pinned.js";
import {
  assertWritesAllowed,
  PoolUnavailable,
  type SmallWrite,
  type WriteDone,
  writePool,
} from "./_fs-write-pool.js";
import { copyVerified, readVerifiedSync } from "./_source-read.js";
import type { VersionToken, WriteOptions } from "./driver.js";

/**
 * Outputs up to this size (without `ifMatch` or `durable`) are written with
 * synchronous calls. Measured on 10k files (bench case 1), the thread-pool
 * round trips of the six calls a write makes cost about three times the work
 * itself; above this size the copy dominates and stays off the event loop.
 */
const SYNC_WRITE_LIMIT = 256 * 1024;

/** The filesystem version token: modification time, size and inode. */
export function tokenOf(stats: Pick<Stats, "mtimeMs" | "size" | "ino">): VersionToken {
  return `${stats.mtimeMs}:${stats.size}:${stats.ino}`;
}

/**
 * Put `content` at `relPath` under `root` atomically and return its new token
 * (StorageDriver.write). `ifMatch` is checked before the rename but not
 * atomically with it: on a filesystem the root's lock is what keeps writers
 * apart.
 */
export function writeAtomic(
  root: string,
  relPath: string,
  options: { content: OutputContent } & WriteOptions,
): Promise<VersionToken> {
  return new Promise((resolve, reject) => {
    const target = resolveInside(root, relPath);
    const write = { root, at: relPath, target, content: options.content, options };
    startWrite(write, true, (error, token) => {
      if (error) reject(error);
      else resolve(token as VersionToken);
    });
  });
}

/**
 * Start one write of a batch (WriteBatch.writeAll, _fs-staging.ts); `done`
 * is called once it has ended, maybe before this returns (a write done on
 * this thread). No token: the executor records an output by its digest, and
 * the stat that makes a token was 100,000 system calls of a fresh publish of
 * the benchmark's C. Throws only when writing has stopped.
 */
export function startBatched(write: BatchedWrite, done: (error: Error | null) => void): void {
  startWrite(write, false, done);
}

/** A write of a batch: see startBatched. */
export interface BatchedWrite {
  root: string;
  /** The output's path under the root: what the write's errors name. */
  at: string;
  /**
   * Where it is written, absolute: inside the temporary folder when
   * staged. The batch finds it once per folder.
   */
  target: string;
  content: OutputContent;
  options: WriteOptions;
  /**
   * The file goes inside a temporary folder that is renamed into place
   * later (_fs-staging.ts). Nobody else sees that folder, so a small file
   * is created there under its final name, with no temp file and no rename
   * of its own; a large one still goes through a temp file beside it.
   */
  staged?: Staged | undefined;
}

/** Where a staged write goes: see BatchedWrite. */
export interface Staged {
  /** The temporary folder's path under the root. */
  staging: string;
  /** The same, absolute; when `held`, the path that names it through its descriptor. */
  folder: string;
  /**
   * The temporary folder is held open on this thread and nobody else can
   * enter it (_fs-staging.ts): `target` is inside `folder`, and nothing on
   * the way needs checking.
   */
  held?: true;
  /**
   * Linux, when not `held`: the private folder `staging` is in, as made
   * (its device and inode); the write refuses any other folder found at
   * its name.
   */
  made?: FolderId;
}

function startWrite(write: BatchedWrite, token: boolean, done: WriteDone): void {
  const { root, at, target, content, options, staged } = write;
  assertWritesAllowed();
  if (options.durable !== true && options.ifMatch === undefined && isSmall(content)) {
    // Bytes kept from verification are all a write thread needs of a source
    // file: the path, size and digest would only lengthen the message.
    const bytes = content.type === "file" ? content.verifiedBytes : undefined;
    const request: SmallWrite = {
      root,
      relPath: at,
      target,
      content: bytes === undefined ? content : { type: "bytes", bytes },
    };
    if (staged?.held) request.held = staged.folder;
    else if (staged) {
      request.staging = staged.staging;
      if (staged.made) request.made = staged.made;
    }
    if (token) request.token = true;
    writeSmall(request, done);
    return;
  }
  largeWrites(() => writeLarge(root, at, target, { ...options, content, staged })).then(
    (newToken) => done(null, newToken),
    (error) => done(asError(error), null),
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Make the folder a file goes in. A staged file's temporary folder must still
 * be there: one that is gone was discarded or put in place already, and
 * making it again would leave a stray folder, or add a file to the published
 * one. Defensive: since the pool lets its threads finish what they were sent
 * when it breaks (_fs-write-pool.ts), no write of a thread should come that
 * late.
 */
function makeParent(dir: string, stagedIn: string | undefined): void {
  if (stagedIn !== undefined && kindAt(stagedIn) !== "folder") {
    const error = new Error(`its temporary folder ${stagedIn} is gone`);
    throw Object.assign(error, { code: "ENOENT" });
  }
  mkdirSync(dir, { recursive: true });
}

/**
 * At most this many large (or durable, or conditional) writes at once. The executor keeps
 * hundreds of writes in flight for the small ones (filesystem.ts); a stop on
 * a signal must not wait for hundreds of large copies queued in libuv's
 * thread pool, nor keep hundreds of files open.
 */
const largeWrites = limiter(8);

async function writeLarge(
  root: string,
  relPath: string,
  target: string,
  options: { content: OutputContent; staged?: Staged } & WriteOptions,
): Promise<VersionToken> {
  // Checked again here: this write may have waited for its turn past a stop.
  assertWritesAllowed();
  const staged = options.staged;
  if (staged?.held !== true && !canPinFolders) {
    // In a temporary folder only the way to it (see SmallWrite.staging).
    const check = staged
      ? checkFolderSync(root, staged.staging)
      : await checkAncestors(root, relPath);
    if (check.kind === "unsafe") throw unsafeAncestorError(root, relPath, check);
  }
  if (options.ifMatch !== undefined) await assertVersion(root, relPath, options.ifMatch);
  // Where folders can be pinned, the file's folder is held open until the
  // copy and the rename have settled (see writeSmallPinned).
  const folders = canPinFolders && staged?.held !== true ? new OpenFolders() : undefined;
  try {
    const dir = folders
      ? pinnedFolderOf(root, relPath, target, folders, staged)
      : madeFolderOf(root, relPath, target, staged);
    const temp = tempPathIn(dir);
    try {
      const token = await fillTemp(temp, options.content, options.durable === true);
      // A copy can take seconds: after a stop it is not renamed into place.
      assertWritesAllowed();
      await rename(temp, `${dir}${path.sep}${path.basename(target)}`);
      if (options.durable === true) await syncDirectory(dir);
      return token;
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  } catch (error) {
    if (error instanceof DistributorError) throw error;
    throw storageError("write", { root, relPath, error });
  } finally {
    folders?.close();
  }
}

/** The folder `target` goes in, made where missing (see makeParent, makeFoldersIn). */
function madeFolderOf(
  root: string,
  relPath: string,
  target: string,
  staged: Staged | undefined,
): string {
  const dir = path.dirname(target);
  try {
    if (staged?.held) makeFoldersIn(staged.folder, dir);
    else makeParent(dir, staged?.folder);
  } catch (error) {
    throw storageError("create the directory for", { root, relPath, error });
  }
  return dir;
}

/**
 * The folder `target` goes in, held open in `folders` (made where missing,
 * except a staged write's temporary folder, which must be there), as the
 * path that names it through its descriptor.
 */
function pinnedFolderOf(
  root: string,
  relPath: string,
  target: string,
  folders: OpenFolders,
  staged: Pick<Staged, "staging" | "made"> | undefined,
): string {
  const relDir = path.relative(root, path.dirname(target)).split(path.sep).join("/");
  const made = staged?.made;
  const expect = made && { at: path.posix.dirname(staged.staging), ...made };
  const dir = folders.folder(root, relDir, staged?.staging ?? "", expect);
  if (typeof dir === "string") return dir;
  if (dir.kind === "unsafe") throw unsafeAncestorError(root, relPath, dir);
  const gone = staged === undefined ? "the root" : `its temporary folder ${staged.staging}`;
  const error = Object.assign(new Error(`${gone} is gone`), { code: "ENOENT" });
  throw storageError("create the directory for", { root, relPath, error });
}

/**
 * Make `dir` and the folders on the way to it below `base`, a folder held
 * open, one level at a time. Not `mkdirSync(dir, { recursive: true })`:
 * through `/proc/self/fd/<fd>` of a folder removed meanwhile, Node 20's
 * recursive mkdir retries forever (the missing parent it makes is the
 * magic link, which exists); here the first level fails, and so the write.
 */
function makeFoldersIn(base: string, dir: string): void {
  if (dir === base || dir.length <= base.length) return;
  try {
    mkdirSync(dir);
    return;
  } catch (error) {
    const code = errnoCode(error);
    if (code === "EEXIST") return;
    if (code !== "ENOENT") throw error;
  }
  makeFoldersIn(base, path.dirname(dir));
  try {
    mkdirSync(dir);
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
}

async function assertVersion(root: string, relPath: string, expected: VersionToken | null) {
  let current: VersionToken | null = null;
  try {
    current = tokenOf(await lstat(path.join(root, relPath)));
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR")
      throw storageError("inspect", { root, relPath, error });
  }
  if (current === expected) return;
  const found = current === null ? "it does not exist" : "it was changed by someone else";
  const wanted = expected === null ? "to create it" : "to replace the version read earlier";
  throw new DistributorError(
    "state_conflict",
    `Refusing to write ${relPath} under ${root}: expected ${wanted}, but ${found}. Another writer may be active; re-run to plan against the current state.`,
    { paths: [relPath] },
  );
}

/** Write the temp file (exclusive create) and return the token it will keep after the rename. */
async function fillTemp(temp: string, content: OutputContent, durable: boolean) {
  const handle = await open(temp, "wx");
  try {
    // Not a kernel copy (copyFile): the bytes are hashed on the way, so that
    // only the verified ones are published (_source-read.ts). The new file
    // gets the mode any new file gets, not the source's.
    if (content.type === "bytes") await handle.writeFile(content.bytes);
    else if (content.verifiedBytes !== undefined) await handle.writeFile(content.verifiedBytes);
    else await copyVerified(content, handle);
    if (durable) await handle.sync();
    return tokenOf(await handle.stat());
  } finally {
    await handle.close();
  }
}

/** fsync a directory so a rename inside it survives a power cut. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function isSmall(content: OutputContent): boolean {
  if (content.type === "bytes") return content.bytes.byteLength <= SYNC_WRITE_LIMIT;
  // A stat per file on the thread that hands out the writes cost ~30 us each.
  if (content.size !== undefined) return content.size <= SYNC_WRITE_LIMIT;
  try {
    return statSync(content.absPath).size <= SYNC_WRITE_LIMIT;
  } catch {
    // The asynchronous path reports the error with its context.
    return false;
  }
}

/** A small write on a pool worker when there is one (_fs-write-pool.ts), else here. */
function writeSmall(request: SmallWrite, done: WriteDone): void {
  const pool = writePool();
  if (!pool) {
    writeHere(request, done);
    return;
  }
  pool.submit(request, (error, token) => {
    if (error instanceof PoolUnavailable) writeHere(request, done);
    else done(error, token);
  });
}

/** A small write on this thread; it ends through `done`, before this returns. */
function writeHere(request: SmallWrite, done: WriteDone): void {
  let token: VersionToken | null;
  try {
    // The pool may have been stopped by a signal while this write waited on it.
    assertWritesAllowed();
    token = writeSmallSync(request.root, request.relPath, request, undefined);
  } catch (error) {
    done(asError(error), null);
    return;
  }
  done(null, token);
}

/**
 * writeAtomic's steps for a small output, with synchronous calls; the new
 * file's token when `options.token`, else null. `checked`: see
 * checkAncestorsSync. `staging`: see SmallWrite.
 */
export function writeSmallSync(
  root: string,
  relPath: string,
  options: Pick<SmallWrite, "target" | "content" | "staging" | "made" | "held" | "token">,
  cache?: WriteCache,
): VersionToken | null {
  const held = options.held;
  if (held !== undefined) {
    // Inside a temporary folder held open: nothing to check (see Staged.held).
    const dir = path.dirname(options.target);
    const make = () => makeFoldersIn(held, dir);
    return putSmall({ root, relPath }, dir, options, make);
  }
  if (canPinFolders) return writeSmallPinned(root, relPath, options, cache?.folders);
  const checked = cache?.checked;
  // In a temporary folder only the way to it is checked (see SmallWrite.staging).
  const check =
    options.staging === undefined
      ? checkAncestorsSync(root, relPath, checked)
      : checkFolderSync(root, options.staging, checked);
  if (check.kind === "unsafe") throw unsafeAncestorError(root, relPath, check);
  const dir = path.dirname(options.target);
  const make = () => makeParent(dir, stagingFolder(root, options.staging));
  try {
    // A parent that exists has just been checked to be a real directory; only the
    // root itself (the parent of a top-level path) was not checked. A
    // temporary folder that is gone makes this throw (makeParent). Inside
    // one, the file's folder is made when the create finds none (putSmall).
    if (check.kind === "missing" || !relPath.includes("/")) make();
  } catch (error) {
    throw storageError("create the directory for", { root, relPath, error });
  }
  return putSmall({ root, relPath }, dir, options, make);
}

/**
 * What a write thread keeps for one batch of small writes: the folders it
 * found to be real directories (`checked`, where folders are checked by
 * path), or the folders it holds open (`folders`, _fs-pinned.ts).
 */
export interface WriteCache {
  checked?: Set<string>;
  folders?: OpenFolders;
}

/** A WriteCache for one batch; `close` it once the batch is done. */
export function batchCache(): WriteCache & { close(): void } {
  const folders = canPinFolders ? new OpenFolders() : undefined;
  return { checked: new Set(), folders, close: () => folders?.close() };
}

/**
 * writeSmallSync where folders can be pinned (_fs-pinned.ts), outside a
 * temporary folder held open: the file's folder is opened level by level
 * from the root with O_NOFOLLOW (see pinnedFolderOf), and the file is
 * created, or written to a temporary file and renamed, through that open
 * folder. A folder swapped for a link meanwhile is never followed: checking
 * folders by path and then writing by path let such a swap put the write,
 * or a replacement of an existing file, outside the root. `given`: a
 * batch's open folders, else opened for this write only.
 */
function writeSmallPinned(
  root: string,
  relPath: string,
  options: Pick<SmallWrite, "target" | "content" | "staging" | "made" | "token">,
  given: OpenFolders | undefined,
): VersionToken | null {
  const folders = given ?? new OpenFolders();
  try {
    const staged =
      options.staging === undefined ? undefined : { staging: options.staging, made: options.made };
    const dir = pinnedFolderOf(root, relPath, options.target, folders, staged);
    const target = `${dir}/${path.basename(options.target)}`;
    return putSmall({ root, relPath }, dir, { ...options, target }, () => undefined);
  } finally {
    if (given === undefined) folders.close();
  }
}

/**
 * The file of a small write put at `options.target`, in `dir`: in a
 * temporary folder (`staging` or `held`) created under its own name,
 * `makeDir` making its folder when the create finds none (for the first
 * file of each folder one failed open, instead of a look at each folder on
 * the way for every file); elsewhere, or when something is there already
 * (see createSync), a temporary file renamed over it.
 */
function putSmall(
  where: { root: string; relPath: string },
  dir: string,
  options: Pick<SmallWrite, "target" | "content" | "staging" | "held" | "token">,
  makeDir: () => void,
): VersionToken | null {
  const { target, content } = options;
  const token = options.token === true;
  try {
    // A source file's bytes kept from verification, or else the file read
    // and checked whole (see fillTemp), then written.
    const bytes =
      content.type === "bytes"
        ? content.bytes
        : (content.verifiedBytes ?? readVerifiedSync(content));
    if (options.staging === undefined && options.held === undefined) {
      return replaceSync(dir, target, bytes, token);
    }
    if (createMaking(where, target, bytes, makeDir)) {
      return token ? tokenOf(statSync(target)) : null;
    }
    return replaceSync(dir, target, bytes, token);
  } catch (error) {
    if (error instanceof DistributorError) throw error;
    throw storageError("write", { ...where, error });
  }
}

/** The absolute path of a write's temporary folder (see SmallWrite.staging), if staged. */
function stagingFolder(root: string, staging: string | undefined): string | undefined {
  return staging === undefined ? undefined : resolveInside(root, staging);
}

/** createSync, making the file's folder with `makeDir` first when the create finds none. */
function createMaking(
  where: { root: string; relPath: string },
  target: string,
  bytes: Uint8Array,
  makeDir: () => void,
): boolean {
  try {
    return createSync(target, bytes);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
  }
  try {
    makeDir();
  } catch (error) {
    throw storageError("create the directory for", { ...where, error });
  }
  return createSync(target, bytes);
}

/**
 * Create `target` with `bytes`; false when something is there already. In a
 * staging folder that is only a write done again: by the calling thread after
 * the write thread that had done it died, or after its answer could not be
 * read (_fs-write-pool.ts). The caller then
 * replaces it atomically, which is right whether the first try finished or not.
 */
function createSync(target: string, bytes: Uint8Array): boolean {
  try {
    writeFileSync(target, bytes, { flag: "wx" });
    return true;
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
}

/** Temp file in `dir`, then rename over `target`; the token of the new file when asked for. */
function replaceSync(
  dir: string,
  target: string,
  bytes: Uint8Array,
  token: boolean,
): VersionToken | null {
  const temp = tempPathIn(dir);
  try {
    writeFileSync(temp, bytes, { flag: "wx" });
    const stats = token ? statSync(temp) : null;
    renameSync(temp, target);
    return stats === null ? null : tokenOf(stats);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
