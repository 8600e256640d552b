/**
 * manifest.json: the producer contract of a source bundle (SPEC §2). Parsing is
 * pure (bytes in, manifest out); reading the bundle and checking its files lives
 * in verify.ts.
 */

import * as z from "zod";
import { type DistributorError, listedError } from "../errors.js";
import { SHA256_DIGEST, sha256Digest } from "../hashing.js";
import type { ManifestFile, SourceIdentity } from "../model.js";
import { cleanPathProblem } from "../paths.js";
import { isRfc3339 } from "../timestamps.js";

export const MANIFEST_FILE = "manifest.json";

/** A parsed, valid manifest: the bundle's identity and its listed files, in manifest order. */
export interface Manifest {
  identity: SourceIdentity;
  files: ManifestFile[];
}

const ID_PATTERN = /^[A-Za-z0-9._-]{1,200}$/;
/** Printable ASCII, no space at either end: what a Content-Type header can carry. */
const MEDIA_TYPE_TEXT = /^[!-~](?:[ -~]*[!-~])?$/;
/**
 * The longest media_type, in characters (ASCII: bytes). RFC 6838 caps a type
 * and a subtype at 127 characters each, leaving room for parameters; AWS
 * takes request headers up to 8 KB in all, and the local test server
 * refused a Content-Type of 16,000 characters with a bare 400, halfway
 * through a run.
 */
export const MEDIA_TYPE_MAX = 1024;
const fileSchema = z.strictObject(
  {
    path: z.string({ error: "must be a string" }).superRefine((value, ctx) => {
      const problem = cleanPathProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
    size: z
      .number({
        // JSON.parse reads 1e400 as Infinity, which is a number, just no size.
        error: (issue) =>
          typeof issue.input === "number"
            ? "must be a whole number of bytes, at most 9007199254740991"
            : "must be a number",
      })
      .refine(Number.isSafeInteger, "must be a whole number of bytes")
      .refine((n) => n >= 0, "must be 0 or greater"),
    sha256: z
      .string({ error: "must be a string" })
      .regex(SHA256_DIGEST, 'must be "sha256:" followed by 64 lowercase hex digits'),
    media_type: z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(MEDIA_TYPE_MAX, `must be at most ${MEDIA_TYPE_MAX} characters`)
      // It becomes a Content-Type header on S3, where anything else fails
      // the write halfway through a run instead of here.
      .regex(
        MEDIA_TYPE_TEXT,
        'must be a media type in printable ASCII, like "text/html" or "text/csv; charset=utf-8"',
      )
      .optional(),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(", ")} (allowed: path, size, sha256, media_type)`
        : "must be an object with path, size, sha256 and optional media_type",
  },
);

// Unknown top-level fields are allowed (producers may add metadata); file entries
// are strict so that a misspelt field (e.g. "media-type") is reported, not ignored.
const manifestSchema = z.looseObject(
  {
    schema_version: z.literal(1, { error: "must be 1" }),
    id: z
      .string({ error: "must be a string" })
      .regex(ID_PATTERN, "must be 1-200 characters of A-Z, a-z, 0-9, '.', '_' or '-'"),
    created: z
      .string({ error: "must be a string" })
      .refine(isRfc3339, "must be an RFC3339 date-time such as 2026-06-04T11:55:00Z"),
    files: z.array(fileSchema, { error: "must be an array" }),
  },
  { error: "must be a JSON object" },
);

/** Source digest: `sha256:` + hex SHA-256 of the exact manifest.json bytes (BOM and whitespace included). */
export function sourceDigest(manifestBytes: Uint8Array): string {
  return sha256Digest(manifestBytes);
}

/** Render a zod issue path as `files[3].sha256`; the empty path is the document itself. */
export function formatLocation(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out === "" ? "(top level)" : out;
}

function invalid(where: string, problems: string[], cause?: unknown): DistributorError {
  return listedError(
    "source_invalid",
    {
      head: `${where} is not a valid source manifest:`,
      items: problems,
      advice: "Fix manifest.json (see docs/manifest.md) and run again.",
    },
    { paths: [MANIFEST_FILE], cause },
  );
}

function decodeJson(bytes: Uint8Array, where: string): unknown {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw invalid(where, ["the file is not valid UTF-8"], cause);
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw invalid(where, [`not valid JSON (${reason})`], cause);
  }
}

/** Paths listed twice; entries without a string path (reported by the schema) are passed over. */
function duplicatePaths(files: readonly unknown[]): string[] {
  const firstIndex = new Map<string, number>();
  const problems: string[] = [];
  files.forEach((file, index) => {
    const path = _isObject(file) ? file.path : undefined;
    if (typeof path !== "string") return;
    const first = firstIndex.get(path);
    if (first === undefined) firstIndex.set(path, index);
    else problems.push(`files[${index}].path: "${path}" is already listed at files[${first}]`);
  });
  return problems;
}

/**
 * Parse and validate manifest.json bytes (SPEC §2). Every problem is reported at
 * once, each with its location (`files[3].sha256: ...`).
 *
 * @param options.where how to name the manifest in messages (default `manifest.json`).
 * @throws DistributorError `source_invalid` for bytes that are not UTF-8 JSON or break a rule.
 */
export function parseManifest(bytes: Uint8Array, options: { where?: string } = {}): Manifest {
  const where = options.where ?? MANIFEST_FILE;
  const document = decodeJson(bytes, where);
  const { id, created, files } = _vouched(document) ?? _validated(document, where);
  const duplicates = duplicatePaths(files);
  if (duplicates.length > 0) throw invalid(where, duplicates);
  return { identity: { id, digest: sourceDigest(bytes), created }, files };
}

type ManifestFields = { id: string; created: string; files: ManifestFile[] };

/** The schema's verdict, with every problem named; throws `source_invalid` for any. */
function _validated(document: unknown, where: string): ManifestFields {
  const result = manifestSchema.safeParse(document);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${formatLocation(issue.path)}: ${issue.message}`,
    );
    // Every problem at once (docs/manifest.md), duplicates among the others.
    const files = _isObject(document) ? document.files : undefined;
    if (Array.isArray(files)) problems.push(...duplicatePaths(files));
    throw invalid(where, problems);
  }
  const { id, created } = result.data;
  const files = result.data.files.map((f) => _file(f.path, f.size, f.sha256, f.media_type));
  return { id, created, files };
}

const FILE_KEYS = new Set(["path", "size", "sha256", "media_type"]);

/**
 * The fields of a manifest that breaks none of manifestSchema's rules, checked
 * by hand; null means "not vouched for here", and the schema then names every
 * problem. Valid manifests are the rule, and zod copies each entry it checks:
 * on 100,000 files that was a tenth of a second plus garbage the rest of the
 * run paid to collect.
 */
function _vouched(document: unknown): ManifestFields | null {
  if (!_isObject(document)) return null;
  const { schema_version, id, created, files } = document;
  if (schema_version !== 1 || typeof id !== "string" || !ID_PATTERN.test(id)) return null;
  if (typeof created !== "string" || !isRfc3339(created) || !Array.isArray(files)) return null;
  const vouched: ManifestFile[] = [];
  for (const entry of files as unknown[]) {
    if (!_isObject(entry)) return null;
    for (const key in entry) if (!FILE_KEYS.has(key)) return null;
    const { path, size, sha256, media_type } = entry;
    if (typeof path !== "string" || cleanPathProblem(path) !== null) return null;
    if (!Number.isSafeInteger(size) || (size as number) < 0) return null;
    if (typeof sha256 !== "string" || !SHA256_DIGEST.test(sha256)) return null;
    if (
      media_type !== undefined &&
      (typeof media_type !== "string" ||
        media_type.length > MEDIA_TYPE_MAX ||
        !MEDIA_TYPE_TEXT.test(media_type))
    ) {
      return null;
    }
    vouched.push(_file(path, size as number, sha256, media_type));
  }
  return { id, created, files: vouched };
}

function _isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A fresh entry, so that nothing of the parsed document (unknown fields included) is kept. */
function _file(path: string, size: number, sha256: string, mediaType?: string): ManifestFile {
  return mediaType === undefined
    ? { path, size, sha256 }
    : { path, size, sha256, media_type: mediaType };
}
