/**
 * The render cache: the digest and size of each Markdown document rendered
 * before, so that a rerun whose Markdown did not change can plan without
 * rendering it again (rendering was the longest step of an unchanged rerun, see
 * docs/performance.md). Documents that must be written are still rendered, from
 * freshly verified bytes, before anything is written (see renderDeferred).
 *
 * The destination state cannot hold this: the seed fixes its schema, and it
 * records the digest of each output, not of the Markdown it came from. So the
 * cache is a local file per pipeline id under the user's cache directory,
 * keyed by everything an output depends on (renderKeys). It is best-effort in
 * both directions: a missing, unreadable or malformed cache file is an empty
 * cache, and a cache that cannot be written is left as it was. Neither ever
 * fails a run, and `DISTRIBUTOR_CACHE=off` turns it off.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { SHA256_DIGEST, sha256Hex } from "../hashing.js";
import { compareUtf8 } from "../paths.js";
import { readRegularFile } from "../regular-file.js";
import { rendererFingerprint } from "./_renderer-fingerprint.js";

/** What the cache remembers of one rendered document. */
export interface CachedRender {
  /** `sha256:<64 hex>` of the rendered output. */
  sha256: string;
  size: number;
}

/** Entries not used for this many days are dropped when the file is rewritten. */
const KEEP_DAYS = 30;
/** At most this many entries per pipeline file; the least recently used go first. */
const MAX_ENTRIES = 200_000;
const FILE_FORMAT = "distributor-render-cache";
/** Bump when the key derivation or the file layout changes. */
const FILE_VERSION = 1;
const DAY_MS = 24 * 60 * 60 * 1000;

/** [sha256, size, day the entry was last used (days since the epoch)] */
type Entry = [string, number, number];

/**
 * The cache directory from the environment: `DISTRIBUTOR_CACHE_DIR`, else
 * `$XDG_CACHE_HOME/distributor`, else `~/.cache/distributor`; undefined when
 * `DISTRIBUTOR_CACHE` is `off` (or `0`, `false`, `no`).
 */
export function cacheDirFrom(env: NodeJS.ProcessEnv): string | undefined {
  const switch_ = env.DISTRIBUTOR_CACHE?.trim().toLowerCase();
  if (switch_ && ["off", "0", "false", "no"].includes(switch_)) return undefined;
  if (env.DISTRIBUTOR_CACHE_DIR) return path.resolve(env.DISTRIBUTOR_CACHE_DIR);
  if (env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME))
    return path.join(env.XDG_CACHE_HOME, "distributor");
  try {
    return path.join(homedir(), ".cache", "distributor");
  } catch {
    return undefined; // no home directory: no cache
  }
}

/**
 * The cache key of each transformed file (source path → key). A key covers
 * everything the output depends on: the renderer (distributor version, the
 * transform's code, markdown-it and its dependencies, Node.js), the transform
 * and its options, the file's path (title fallback, relative links) and digest,
 * and every source → output path of the pipeline (links are rewritten by it).
 * Changing any of them changes the key, so the cache never has to be cleared.
 */
export function renderKeys(
  transformed: ReadonlyMap<string, string>,
  documents: Iterable<RenderedDocument>,
): Map<string, string> {
  const links = [...transformed].sort(([a], [b]) => compareUtf8(a, b));
  const context = sha256Hex(JSON.stringify([FILE_VERSION, rendererFingerprint(), links]));
  const keys = new Map<string, string>();
  for (const { path, sha256, transform, allowHtml } of documents) {
    keys.set(path, sha256Hex(JSON.stringify([context, transform, allowHtml, path, sha256])));
  }
  return keys;
}

/** A document to render, as far as its output depends on it alone. */
export interface RenderedDocument {
  /** Manifest path of the source. */
  path: string;
  /** Its manifest digest (verified before the key is used). */
  sha256: string;
  transform: string;
  allowHtml: boolean;
}

function today(): number {
  return Math.floor(Date.now() / DAY_MS);
}

function isEntry(value: unknown): value is Entry {
  return (
    Array.isArray(value) &&
    value.length === 3 &&
    typeof value[0] === "string" &&
    SHA256_DIGEST.test(value[0]) &&
    Number.isSafeInteger(value[1]) &&
    (value[1] as number) >= 0 &&
    Number.isSafeInteger(value[2])
  );
}

/** The entries of a cache file; empty when it is missing or not a cache file of this version. */
function readEntries(file: string): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  let parsed: unknown;
  try {
    const read = readRegularFile(file);
    if (read.kind !== "file") return entries;
    parsed = JSON.parse(read.bytes.toString("utf8"));
  } catch {
    return entries;
  }
  const body = parsed as { format?: unknown; version?: unknown; entries?: unknown };
  if (body?.format !== FILE_FORMAT || body.version !== FILE_VERSION) return entries;
  if (typeof body.entries !== "object" || body.entries === null) return entries;
  for (const [key, value] of Object.entries(body.entries)) {
    if (isEntry(value)) entries.set(key, value);
  }
  return entries;
}

/** One pipeline's entries: those read from its file, and what this process used or added. */
interface PipelineEntries {
  file: string;
  read: Map<string, Entry>;
  used: Map<string, Entry>;
  dirty: boolean;
}

export class RenderCache {
  readonly #dir: string;
  readonly #pipelines = new Map<string, PipelineEntries>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The cache in the directory the environment names (cacheDirFrom), or undefined when off. */
  static fromEnv(env: NodeJS.ProcessEnv): RenderCache | undefined {
    const dir = cacheDirFrom(env);
    return dir === undefined ? undefined : new RenderCache(dir);
  }

  /** The output recorded for `key` in `pipelineId`'s file, if any. */
  get(pipelineId: string, key: string): CachedRender | undefined {
    const entries = this.#entriesOf(pipelineId);
    const entry = entries.used.get(key) ?? entries.read.get(key);
    if (!entry) return undefined;
    if (entry[2] !== today()) entries.dirty = true;
    entries.used.set(key, [entry[0], entry[1], today()]);
    return { sha256: entry[0], size: entry[1] };
  }

  /** Record what rendering the document of `key` gave. */
  set(pipelineId: string, key: string, render: CachedRender): void {
    const entries = this.#entriesOf(pipelineId);
    const known = entries.used.get(key) ?? entries.read.get(key);
    if (!known || known[0] !== render.sha256 || known[1] !== render.size) entries.dirty = true;
    entries.used.set(key, [render.sha256, render.size, today()]);
  }

  /**
   * Write back every pipeline file that changed: this process's entries merged
   * into what the file holds now (another run may have added to it), entries
   * unused for KEEP_DAYS dropped, at most MAX_ENTRIES kept. Atomic (temp file
   * and rename): a concurrent run loses at worst its own additions. Never
   * throws: a cache that cannot be written stays as it was.
   */
  save(): void {
    for (const entries of this.#pipelines.values()) {
      if (!entries.dirty) continue;
      const merged = readEntries(entries.file);
      for (const [key, entry] of entries.used) merged.set(key, entry);
      const oldest = today() - KEEP_DAYS;
      const kept = [...merged]
        .filter(([, entry]) => entry[2] >= oldest)
        .sort(([, a], [, b]) => b[2] - a[2])
        .slice(0, MAX_ENTRIES);
      const body = {
        format: FILE_FORMAT,
        version: FILE_VERSION,
        entries: Object.fromEntries(kept),
      };
      const temp = `${entries.file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
      try {
        // Only its user may write it: a forged entry could make a run skip a changed page.
        makeDirectories(this.#dir);
        writeFileSync(temp, JSON.stringify(body));
        renameSync(temp, entries.file);
        entries.dirty = false;
      } catch {
        try {
          rmSync(temp, { force: true });
        } catch {
          // Nothing more to do: a stray temp file in a cache directory harms nothing.
        }
      }
    }
  }

  #entriesOf(pipelineId: string): PipelineEntries {
    let entries = this.#pipelines.get(pipelineId);
    if (!entries) {
      // Pipeline ids are slugs (config validation), so they are safe file names.
      const file = path.join(this.#dir, `render-${pipelineId}.json`);
      entries = { file, read: readEntries(file), used: new Map(), dirty: false };
      this.#pipelines.set(pipelineId, entries);
    }
    return entries;
  }
}

/**
 * mkdir -p, one level at a time, mode 0700 (only its user may write the
 * cache). Not `mkdirSync(…, { recursive: true })`: Node.js 20's loops
 * forever on some paths (under /proc), and a cache directory that cannot be
 * made must only mean "no cache", never a run that does not end.
 */
function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    try {
      if (statSync(at).isDirectory()) break;
      throw new Error(`${at} is not a directory`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      if (path.dirname(at) === at) throw error;
      missing.unshift(at);
    }
  }
  for (const at of missing) mkdirSync(at, { mode: 0o700 });
}
