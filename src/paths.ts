/**
 * Clean path rules (SPEC §5) shared by manifests, output paths, state records and
 * the `path`/`prefix` settings. A clean path is relative, `/`-separated, and can be
 * joined under a root without ever leaving it.
 */

/** Names starting with this belong to the tool (state, lock, temp files). */
export const RESERVED_PREFIX = ".distributor.";
export const STATE_FILE = ".distributor.json";
export const LOCK_FILE = ".distributor.lock";
/** Temporary files are `<dir>/.distributor.tmp-<random>`; stale ones may be removed under the lock. */
export const TEMP_PREFIX = ".distributor.tmp-";

const MAX_PATH_BYTES = 1024;
// C0 controls and DEL; NUL is among them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/;

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
  if (Buffer.byteLength(value, "utf8") > MAX_PATH_BYTES)
    return `is longer than ${MAX_PATH_BYTES} bytes`;
  if (value.includes("\\")) return "must not contain a backslash";
  if (CONTROL.test(value)) return "must not contain NUL or control characters";
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

export function isCleanPath(value: string, options: CleanPathOptions = {}): boolean {
  return cleanPathProblem(value, options) === null;
}

/** True when the last segment of a relative path is a reserved tool file name. */
export function isReservedName(relativePath: string): boolean {
  const name = relativePath.slice(relativePath.lastIndexOf("/") + 1);
  return name.startsWith(RESERVED_PREFIX);
}

/** True when any segment of a relative path is reserved (e.g. a temp dir or file). */
export function hasReservedSegment(relativePath: string): boolean {
  return relativePath.split("/").some((segment) => segment.startsWith(RESERVED_PREFIX));
}

/** Compare two paths by their UTF-8 bytes (the state's sort order; differs from UTF-16 order). */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Every proper ancestor directory of a relative path: "a/b/c" -> ["a", "a/b"]. */
export function ancestorsOf(relativePath: string): string[] {
  const segments = relativePath.split("/");
  const out: string[] = [];
  for (let i = 1; i < segments.length; i++) out.push(segments.slice(0, i).join("/"));
  return out;
}

/** Join clean relative segments, skipping empty ones: joinClean("", "a/b") === "a/b". */
export function joinClean(...parts: string[]): string {
  return parts.filter((part) => part !== "").join("/");
}
