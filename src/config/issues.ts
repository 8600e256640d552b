/**
 * Configuration problems: each names the exact key path it is about
 * (`pipelines.reports.transforms[0].transform`), and all problems of one load
 * become one `config_invalid` error, so a user fixes everything in one pass.
 */
import type { z } from "zod";
import { type DistributorError, linedError } from "../errors.js";

export type KeyPath = ReadonlyArray<PropertyKey>;

/** One thing wrong with the configuration, at one key path. */
export interface ConfigProblem {
  path: string;
  message: string;
}

const PLAIN_KEY = /^[A-Za-z0-9_$-]+$/;

/**
 * Render a key path as users write it: `a.b[0].c`; keys that would be ambiguous
 * in dotted form (dots, spaces) are quoted: `pipelines["my.id"]`.
 */
export function formatKeyPath(path: KeyPath): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (typeof segment === "string" && PLAIN_KEY.test(segment))
      out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === "" ? "(top level)" : out;
}

function _describeInput(input: unknown): string {
  if (input === null) return "null";
  if (Array.isArray(input)) return "a list";
  if (typeof input === "object") return "a mapping";
  if (typeof input === "string") return `string ${JSON.stringify(input)}`;
  return `${typeof input} ${String(input)}`;
}

function _describeExpected(expected: string): string {
  if (expected === "object" || expected === "record") return "a mapping";
  if (expected === "array") return "a list";
  if (expected === "int") return "a whole number";
  return `a ${expected}`;
}

function _alternatives(values: readonly unknown[]): string {
  const shown = values.filter((value) => value !== undefined).map((v) => JSON.stringify(v));
  return shown.length <= 1
    ? (shown[0] ?? "nothing")
    : `${shown.slice(0, -1).join(", ")} or ${shown.at(-1)}`;
}

/**
 * The per-parse zod error map: plain-language messages for the generic issue
 * kinds. Schema-level messages (ids, paths, durations) take precedence over it.
 */
export function zodErrorMap(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined
        ? "missing required key"
        : `expected ${_describeExpected(issue.expected)}, got ${_describeInput(issue.input)}`;
    case "invalid_value":
      return `expected ${_alternatives(issue.values)}`;
    case "invalid_union": {
      // Only the discriminated union (storage.type) carries the options it expected.
      const options = "options" in issue && Array.isArray(issue.options) ? issue.options : [];
      return issue.discriminator === undefined ? undefined : `expected ${_alternatives(options)}`;
    }
    default:
      return undefined;
  }
}

/** Flatten zod issues into problems, one per unknown key. */
export function problemsFromZod(issues: readonly z.core.$ZodIssue[]): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        out.push({ path: formatKeyPath([...issue.path, key]), message: "unknown key" });
      }
    } else {
      out.push({ path: formatKeyPath(issue.path), message: issue.message });
    }
  }
  return out;
}

/**
 * One `config_invalid` error listing every problem on its own line (its
 * `lines`, see DistributorErrorOptions); `paths` are the key paths.
 */
export function configError(file: string, problems: readonly ConfigProblem[]): DistributorError {
  const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
  const lines = [
    `Invalid configuration in ${file} (${count}):`,
    ...problems.map((problem) => `  ${problem.path}: ${problem.message}`),
    "Fix the keys above; docs/configuration.md describes every key.",
  ];
  return linedError("config_invalid", lines, {
    paths: [...new Set(problems.map((problem) => problem.path))],
  });
}
