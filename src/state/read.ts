/**
 * Reading `.distributor.json` (SPEC §5 Reading): whatever sits there is
 * classified, never trusted. Only a `valid` state carries records; every other
 * class tells planning what it may do (legacy: publish over it; invalid and
 * unsupported: fail unless forced).
 */
import { catalogProblems } from "./_validate.js";
import type { CatalogState, ClassifiedState } from "./types.js";
import { STATE_SCHEMA_VERSION } from "./types.js";

/**
 * What the caller found at the state path: its bytes, a non-file (a symlink, a
 * directory, a fifo — never followed or read), or `null` when nothing is there.
 */
export type StateInput =
  | { bytes: Uint8Array }
  | { notAFile: true }
  /** A file this process may not read (EACCES): `invalid` too (SPEC §5: "unreadable"). */
  | { unreadable: string }
  | null;

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Classify the state file. `missing` for null; `legacy` for an integer
 * schema_version 1–3 and `unsupported` above 4, whatever else the file holds;
 * `valid` only for schema_version 4 with every seed rule holding and no unknown
 * field anywhere; `invalid` otherwise, with a reason naming the first broken
 * rule's location (e.g. `outputs[2].sha256: not a lowercase sha256:<64 hex> digest`).
 */
export function classifyState(input: StateInput): ClassifiedState {
  if (input === null) return { class: "missing" };
  if ("notAFile" in input) {
    return { class: "invalid", reason: "not a regular file (a symlink, directory or other entry)" };
  }
  if ("unreadable" in input)
    return { class: "invalid", reason: `unreadable (${input.unreadable})` };
  const parsed = _parse(input.bytes);
  if ("reason" in parsed) return { class: "invalid", reason: parsed.reason };
  const document = parsed.value;
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return { class: "invalid", reason: "(top level): must be a JSON object" };
  }
  const version = (document as { schema_version?: unknown }).schema_version;
  if (version === undefined) return { class: "invalid", reason: "schema_version: missing" };
  // Any whole number, not only the safe ones: SPEC §5 makes every integer
  // above 4 `unsupported`, and JSON.parse rounds 9007199254740993 to an even
  // neighbour that is still whole.
  if (!Number.isInteger(version) || (version as number) < 1) {
    return { class: "invalid", reason: "schema_version: not a positive integer" };
  }
  const schemaVersion = version as number;
  if (schemaVersion < STATE_SCHEMA_VERSION) return { class: "legacy", schemaVersion };
  if (schemaVersion > STATE_SCHEMA_VERSION) return { class: "unsupported", schemaVersion };
  const problems = catalogProblems(document);
  if (problems.length === 0) return { class: "valid", state: document as CatalogState };
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : "";
  return { class: "invalid", reason: `${problems[0]}${more}` };
}

/**
 * A one-line description of a class for reports and error messages, e.g.
 * `invalid (outputs[0].size: missing)` or `unsupported (schema_version 7)`.
 */
export function describeState(state: ClassifiedState): string {
  switch (state.class) {
    case "invalid":
      return `invalid (${state.reason})`;
    case "legacy":
    case "unsupported":
      return `${state.class} (schema_version ${state.schemaVersion})`;
    default:
      return state.class;
  }
}

function _parse(bytes: Uint8Array): { value: unknown } | { reason: string } {
  // The writer never emits a BOM; one means something else wrote the file.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { reason: "starts with a byte order mark (not written by distributor)" };
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { reason: "not UTF-8 text" };
  }
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { reason: `not JSON: ${(error as Error).message}` };
  }
}
