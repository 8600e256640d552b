/**
 * The schema_version 4 rules of the seed contract, checked by hand so that every
 * broken rule is reported with its exact location, e.g.
 * `outputs[2].sha256: not a lowercase sha256:<64 hex> digest`.
 */

import { SHA256_DIGEST } from "../hashing.js";
import { TRANSFORM_IDS } from "../model.js";
import { cleanPathProblem } from "../paths.js";
import { isRfc3339 } from "../timestamps.js";

const SLUG = /^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$/;
/** SPEC §2: a manifest id is 1–200 characters of [A-Za-z0-9._-]. */
const SOURCE_ID = /^[A-Za-z0-9._-]{1,200}$/;

/** A rule for one value: the problem phrase, or null when the value is fine. */
type Check = (value: unknown) => string | null;

/** A leaf value with its check, or a nested strict object with its own fields. */
type Field = { optional?: boolean } & ({ check: Check } | { fields: Record<string, Field> });

const string: Check = (v) => (typeof v === "string" ? null : "must be a string");
const timestamp: Check = (v) =>
  typeof v === "string" && isRfc3339(v) ? null : "not an RFC 3339 timestamp";
const digest: Check = (v) =>
  typeof v === "string" && SHA256_DIGEST.test(v) ? null : "not a lowercase sha256:<64 hex> digest";
const slug: Check = (v) =>
  typeof v === "string" && SLUG.test(v)
    ? null
    : "not a slug-like id (lowercase letters, digits, - and _, 1-64 characters)";
const cleanPath: Check = (v) => {
  if (typeof v !== "string") return "must be a string";
  const problem = cleanPathProblem(v);
  return problem === null ? null : `not a clean path: ${problem}`;
};
const sourceId: Check = (v) =>
  typeof v === "string" && SOURCE_ID.test(v)
    ? null
    : "not a manifest id (1-200 characters of A-Z a-z 0-9 . _ -)";
const size: Check = (v) =>
  Number.isSafeInteger(v) && (v as number) >= 0 ? null : "not an integer zero or greater";
const kind: Check = (v) => (v === "source" || v === "generated" ? null : "not source or generated");
const transform: Check = (v) =>
  (TRANSFORM_IDS as readonly unknown[]).includes(v)
    ? null
    : `not a known transform (${TRANSFORM_IDS.join(", ")})`;
// An authority ("//host") is required: WHATWG parsing also accepts "http:a.txt".
const HTTP_URL_START = /^https?:\/\//i;
const httpUrl: Check = (v) => {
  if (typeof v !== "string") return "must be a string";
  const url = HTTP_URL_START.test(v) && URL.canParse(v) ? new URL(v) : null;
  return url !== null && (url.protocol === "http:" || url.protocol === "https:")
    ? null
    : "not an absolute http or https URL";
};

const TOP: Record<string, Field> = {
  schema_version: { check: (v) => (v === 4 ? null : "must be 4") },
  distributor_version: { check: string, optional: true },
  created_at: { check: timestamp },
  updated_at: { check: timestamp },
  state: { fields: { mode: { check: (v) => (v === "catalog" ? null : 'must be "catalog"') } } },
  outputs: { check: (v) => (Array.isArray(v) ? null : "must be an array") },
};
const SOURCE: Record<string, Field> = {
  id: { check: sourceId },
  digest: { check: digest },
  created: { check: timestamp },
};
const RECORD: Record<string, Field> = {
  path: { check: cleanPath },
  pipeline_id: { check: slug },
  destination_id: { check: slug },
  source: { fields: SOURCE },
  kind: { check: kind },
  source_path: { check: cleanPath, optional: true },
  transform: { check: transform, optional: true },
  url: { check: httpUrl, optional: true },
  sha256: { check: digest },
  size: { check: size },
  created_at: { check: timestamp },
  updated_at: { check: timestamp },
};

/**
 * Every broken rule of a parsed schema_version 4 document, each as
 * `<location>: <problem>`, in document order. Empty means `value` is a valid
 * CatalogState.
 */
export function catalogProblems(value: unknown): string[] {
  const problems = _fields(value, TOP, "");
  const outputs = (value as { outputs?: unknown } | null)?.outputs;
  if (!Array.isArray(outputs)) return problems;
  const seen = new Map<string, number>();
  outputs.forEach((record, index) => {
    // The quick check vouches for the common valid record without building
    // location strings; anything it does not vouch for gets the full report.
    if (!_quickRecord(record)) {
      const where = `outputs[${index}]`;
      const recordProblems = _fields(record, RECORD, where);
      if (recordProblems.length === 0) recordProblems.push(..._recordRules(record, where));
      problems.push(...recordProblems);
    }
    const path = (record as { path?: unknown } | null)?.path;
    if (typeof path !== "string") return;
    const first = seen.get(path);
    if (first === undefined) seen.set(path, index);
    else
      problems.push(
        `outputs[${index}].path: duplicate of outputs[${first}].path ${JSON.stringify(path)}`,
      );
  });
  return problems;
}

/**
 * `check`, remembering the last string it passed: the records of one
 * publication share their source and timestamps, and comparing with that
 * string is cheaper than checking it again (100k records: about 100 ms).
 */
function passingLast(check: Check): Check {
  let last: string | undefined;
  return (v) => {
    // Strings only: a missing field (undefined) must never match the unset `last`.
    if (typeof v === "string" && v === last) return null;
    const problem = check(v);
    if (problem === null && typeof v === "string") last = v;
    return problem;
  };
}
const quickSourceId = passingLast(sourceId);
const quickSourceDigest = passingLast(digest);
const quickCreated = passingLast(timestamp);
const quickUpdated = passingLast(timestamp);
const quickSourceCreated = passingLast(timestamp);
const quickPipelineId = passingLast(slug);
const quickDestinationId = passingLast(slug);

const RECORD_KEYS = new Set(Object.keys(RECORD));
const SOURCE_KEYS = new Set(Object.keys(SOURCE));

const _isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * No key outside `known`. `for...in` rather than Object.keys: no array per
 * record. JSON.parse makes plain objects, whose only enumerable keys are
 * their own.
 */
function _onlyKeys(object: Record<string, unknown>, known: ReadonlySet<string>): boolean {
  for (const key in object) if (!known.has(key)) return false;
  return true;
}

/**
 * True only when `record` breaks none of the rules {@link catalogProblems}
 * reports for it (duplicates aside); false means "report in full". Every field
 * is required present unless RECORD marks it optional, as in `_fields`.
 */
function _quickRecord(record: unknown): boolean {
  if (!_isObject(record) || !_onlyKeys(record, RECORD_KEYS)) return false;
  const r = record;
  const source = r.source;
  if (!_isObject(source) || !_onlyKeys(source, SOURCE_KEYS)) return false;
  if (quickSourceId(source.id) !== null || quickSourceDigest(source.digest) !== null) return false;
  if (quickSourceCreated(source.created) !== null) return false;
  const generated = r.kind === "generated";
  if (!generated && r.kind !== "source") return false;
  // Generated outputs need both fields, source outputs neither.
  if (generated !== (r.source_path !== undefined) || generated !== (r.transform !== undefined)) {
    return false;
  }
  if (generated && (cleanPath(r.source_path) !== null || transform(r.transform) !== null)) {
    return false;
  }
  if (r.url !== undefined && httpUrl(r.url) !== null) return false;
  return (
    cleanPath(r.path) === null &&
    quickPipelineId(r.pipeline_id) === null &&
    quickDestinationId(r.destination_id) === null &&
    digest(r.sha256) === null &&
    size(r.size) === null &&
    quickCreated(r.created_at) === null &&
    quickUpdated(r.updated_at) === null
  );
}

function _recordRules(record: unknown, where: string): string[] {
  const r = record as { kind: string; source_path?: unknown; transform?: unknown };
  const problems: string[] = [];
  for (const key of ["source_path", "transform"] as const) {
    if (r.kind === "generated" && r[key] === undefined) {
      problems.push(`${where}.${key}: missing (required for generated outputs)`);
    }
    if (r.kind === "source" && r[key] !== undefined) {
      problems.push(`${where}.${key}: not allowed for source outputs`);
    }
  }
  return problems;
}

function _fields(value: unknown, fields: Record<string, Field>, where: string): string[] {
  const at = (key: string) => (where === "" ? key : `${where}.${key}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return [`${where === "" ? "(top level)" : where}: must be a JSON object`];
  }
  const object = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const [key, field] of Object.entries(fields)) {
    const item = Object.hasOwn(object, key) ? object[key] : undefined;
    if (item === undefined) {
      if (!field.optional) problems.push(`${at(key)}: missing`);
    } else if ("fields" in field) {
      problems.push(..._fields(item, field.fields, at(key)));
    } else {
      const problem = field.check(item);
      if (problem !== null) problems.push(`${at(key)}: ${problem}`);
    }
  }
  for (const key of Object.keys(object)) {
    if (!Object.hasOwn(fields, key)) problems.push(`${at(key)}: unknown field`);
  }
  return problems;
}
