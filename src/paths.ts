/**
 * Clean path rules (SPEC §5) shared by manifests, output paths, state records and
 * the `path`/`prefix` settings. A clean path is relative, `/`-separated, and can be
 * joined under a root without ever leaving it.
 */

/** Names starting with this belong to the tool (state, lock, temp files). */
export const RESERVED_PREFIX = ".distributor.";
export const STATE_FILE = ".distributor.json";
export const LOCK_FILE = ".distributor.lock";
/**
 * Temporary files are `<dir>/.distributor.tmp-<random>`, and so are the
 * folders a new folder is written in before it is renamed into place
 * (storage/_fs-staging.ts); stale ones may be removed under the lock.
 */
export const TEMP_PREFIX = ".distributor.tmp-";

/** The last segment of a relative `/` path: `baseName("a/b.txt") === "b.txt"`. */
export function baseName(relativePath: string): string {
  return relativePath.slice(relativePath.lastIndexOf("/") + 1);
}

/**
 * The exact shape of the names the tool gives its temporary files and
 * folders (storage/_fs-paths.ts, tempPathIn): 64 random bits in hex, then a
 * counter. What is inside a folder is the tool's only if the folder has
 * this shape; a user's `.distributor.tmp-notes/` is left alone.
 */
const TEMP_NAME = /^\.distributor\.tmp-[0-9a-f]{16}-[0-9a-z]+$/;

/** Whether `name` (one segment) is a name the tool gives a temporary file or folder. */
export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/**
 * Whether the path is a temporary file of the tool (`.../.distributor.tmp-*`),
 * or anything inside one of its temporary folders (a new folder not yet
 * renamed into place, storage/_fs-staging.ts).
 */
export function isTempPath(relativePath: string): boolean {
  return baseName(relativePath).startsWith(TEMP_PREFIX) || inTempFolder(relativePath, false);
}

/** Whether a folder in a listing is one of the tool's temporary folders or inside one. */
export function isTempFolder(relativePath: string): boolean {
  return inTempFolder(relativePath, true);
}

function inTempFolder(relativePath: string, itself: boolean): boolean {
  if (!relativePath.includes(TEMP_PREFIX)) return false;
  const segments = relativePath.split("/");
  if (!itself) segments.pop();
  return segments.some(isTempName);
}

const MAX_PATH_BYTES = 1024;
// C0 controls, DEL and the C1 controls (U+0080-U+009F); NUL is among them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// A UTF-16 surrogate without its partner: no UTF-8 encodes it, so two such
// paths could name one file (both written as U+FFFD) and no URL can hold it.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export interface CleanPathOptions {
  /** Allow the empty string (the `path` and `prefix` settings, meaning "the root itself"). */
  allowEmpty?: boolean;
}

/**
 * Why `value` is not a clean path, or `null` when it is. The reason is a short
 * phrase meant to follow the path in an error message.
 */
export function cleanPathProblem(value: string, options: CleanPathOptions = {}): string | null {
  if (value === "") return options.allowEmpty ? null : "must not be empty";
  // Almost every path is clean: one scan without allocations decides that, and
  // only a path it cannot vouch for goes through the checks that name the problem.
  if (_quickClean(value)) return null;
  if (Buffer.byteLength(value, "utf8") > MAX_PATH_BYTES)
    return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (value.includes("\\")) return "must not contain a backslash";
  if (CONTROL.test(value)) return "must not contain NUL or control characters";
  if (LONE_SURROGATE.test(value)) return "must be valid Unicode (it holds a lone surrogate)";
  if (value.startsWith("/")) return "must be relative (no leading /)";
  if (value.endsWith("/")) return "must not end with /";
  for (const segment of value.split("/")) {
    if (segment === "") return "must not contain an empty segment (//)";
    if (segment === "." || segment === "..") return `must not contain a '${segment}' segment`;
    if (segment.startsWith(RESERVED_PREFIX)) {
      return `must not contain a segment starting with '${RESERVED_PREFIX}' (reserved for the tool)`;
    }
  }
  return null;
}

const SLASH = 0x2f;
const DOT = 0x2e;
const BACKSLASH = 0x5c;
// Every UTF-16 unit encodes to at most 3 UTF-8 bytes, so this many units always fit.
const SAFE_UNITS = Math.floor(MAX_PATH_BYTES / 3);

/**
 * True only for a non-empty path that passes every rule of {@link cleanPathProblem};
 * false means "not decided here" (the caller runs the full checks).
 */
function _quickClean(value: string): boolean {
  const length = value.length;
  if (length > SAFE_UNITS) return false;
  let start = 0;
  for (let i = 0; i <= length; i++) {
    const code = i === length ? SLASH : value.charCodeAt(i);
    if (code === SLASH) {
      if (!_quickSegment(value, start, i)) return false;
      start = i + 1;
    } else if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === BACKSLASH) {
      return false;
    } else if (code >= 0xd800 && code <= 0xdfff) return false;
  }
  return true;
}

/** The segment value[start, end) is non-empty, not `.`/`..`, and not reserved. */
function _quickSegment(value: string, start: number, end: number): boolean {
  const length = end - start;
  if (length === 0) return false;
  if (value.charCodeAt(start) !== DOT) return true;
  if (length === 1 || (length === 2 && value.charCodeAt(start + 1) === DOT)) return false;
  return !value.startsWith(RESERVED_PREFIX, start);
}

export function isCleanPath(value: string, options: CleanPathOptions = {}): boolean {
  return cleanPathProblem(value, options) === null;
}

/** True when the last segment of a relative path is a reserved tool file name. */
export function isReservedName(relativePath: string): boolean {
  return baseName(relativePath).startsWith(RESERVED_PREFIX);
}

/**
 * The folder of another root that a tool file in a listing belongs to: the
 * folder the first reserved name that is not a temporary one sits in (`sub`
 * for `sub/.distributor.json`, and for `sub/.distributor.json/x` inside a
 * state path that is a folder). Temporary names are passed over: any root
 * leaves temporary files and folders in any folder it writes, and a user's
 * `.distributor.tmp-notes/` marks no root, though a root inside it does
 * (`sub/.distributor.tmp-notes/deeper` for its `deeper/.distributor.lock`).
 * null for this root's own tool files (at the top, and whatever is in them),
 * for temporary names alone, and for other paths.
 */
export function nestedRootOf(relativePath: string): string | null {
  if (relativePath.startsWith(RESERVED_PREFIX) && !relativePath.startsWith(TEMP_PREFIX)) {
    return null;
  }
  for (let from = 0; ; ) {
    const at = relativePath.indexOf(`/${RESERVED_PREFIX}`, from);
    if (at < 0) return null;
    if (!relativePath.startsWith(TEMP_PREFIX, at + 1)) return relativePath.slice(0, at);
    from = at + 1;
  }
}

/** True when any segment of a relative path is reserved (e.g. a temp dir or file). */
export function hasReservedSegment(relativePath: string): boolean {
  if (!relativePath.includes(RESERVED_PREFIX)) return false;
  return relativePath.split("/").some((segment) => segment.startsWith(RESERVED_PREFIX));
}

/** Compare two paths by their UTF-8 bytes (the state's sort order; differs from UTF-16 order). */
export function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Below the surrogates, UTF-16 units order like code points and so like UTF-8
  // bytes. Surrogates (pairs sort above U+E000-U+FFFF in UTF-8; lone ones encode
  // as U+FFFD) go through the encoder, which is exact by definition.
  const x = i < a.length ? a.charCodeAt(i) : -1;
  const y = i < b.length ? b.charCodeAt(i) : -1;
  const previous = i > 0 ? a.charCodeAt(i - 1) : 0;
  if (x < 0xd800 && y < 0xd800 && (previous < 0xd800 || previous > 0xdfff)) {
    return x === y ? 0 : x < y ? -1 : 1;
  }
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Every proper ancestor directory of a relative path: "a/b/c" -> ["a", "a/b"]. */
export function ancestorsOf(relativePath: string): string[] {
  const out: string[] = [];
  for (let i = relativePath.indexOf("/"); i !== -1; i = relativePath.indexOf("/", i + 1)) {
    out.push(relativePath.slice(0, i));
  }
  return out;
}

/**
 * Add every ancestor of `path` to `dirs`, deepest first, stopping at one already
 * there: its own ancestors were added with it. Same set as adding ancestorsOf().
 */
export function addAncestors(dirs: Set<string>, path: string): void {
  for (let i = path.lastIndexOf("/"); i >= 0; i = i === 0 ? -1 : path.lastIndexOf("/", i - 1)) {
    const dir = path.slice(0, i);
    if (dirs.has(dir)) return;
    dirs.add(dir);
  }
}

/** Join clean relative segments, skipping empty ones: joinClean("", "a/b") === "a/b". */
export function joinClean(...parts: string[]): string {
  return parts.filter((part) => part !== "").join("/");
}

/**
 * A name under a root as reports show it: `/srv/site/.distributor.lock`, or
 * `s3://bucket/prefix/.distributor.lock` for an S3 root, which already ends
 * with a slash.
 */
export function inRoot(root: string, name: string): string {
  return root.endsWith("/") ? `${root}${name}` : `${root}/${name}`;
}
