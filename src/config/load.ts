/**
 * Loading the configuration (SPEC §3), changesets-style: read, parse YAML,
 * interpolate `${NAME}`, schema-check, normalize, cross-field rules. Every failure
 * is one `config_invalid` error naming each bad key path.
 */
import path from "node:path";
import { isScalar, LineCounter, parseDocument } from "yaml";
import { DistributorError, linedError } from "../errors.js";
import { type RegularFileRead, readRegularFile } from "../regular-file.js";
import { interpolateEnv } from "./interpolate.js";
import {
  type ConfigProblem,
  configError,
  formatKeyPath,
  problemsFromZod,
  zodErrorMap,
} from "./issues.js";
import { destinationRefProblems, normalizeConfig } from "./normalize.js";
import { configSchema, ID_RULE } from "./schema.js";
import type { Config } from "./types.js";

export { noSourceError, selectPairs } from "./select.js";

/** The file looked for when neither `file` nor DISTRIBUTOR_CONFIG names one. */
const DEFAULT_CONFIG_FILE = "distributor.yaml";
const CONFIG_ENV_VAR = "DISTRIBUTOR_CONFIG";

export interface LoadConfigOptions {
  /** Config file (the CLI's `--config`); relative to `cwd`. Wins over DISTRIBUTOR_CONFIG. */
  file?: string;
  /** Directory for the default file and relative `file`. Default: `process.cwd()`. */
  cwd?: string;
  /** Environment for DISTRIBUTOR_CONFIG and `${NAME}` interpolation. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Load and validate the configuration. The file is `options.file`, else
 * `$DISTRIBUTOR_CONFIG`, else `distributor.yaml` in `cwd`. YAML (JSON is YAML too).
 * Throws a DistributorError `config_invalid` listing every problem with its key
 * path (or the YAML line and column, or the missing file).
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<Config> {
  const env = options.env ?? process.env;
  const { file, origin } = _chooseFile(options, env);
  const text = await _readConfigFile(file, origin);
  const data = _parseYaml(text, file);
  return configFromData(data, { file, env });
}

export interface ConfigFromDataOptions {
  /** Absolute path the data came from: relative paths resolve against its directory. */
  file: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Validate already-parsed config data (as `loadConfig` does after reading the
 * file): interpolation, schema, normalization and cross-field rules, with all
 * problems in one `config_invalid` error.
 */
export function configFromData(data: unknown, options: ConfigFromDataOptions): Config {
  const { file } = options;
  if (data === null || data === undefined) {
    throw configError(file, [
      { path: "(top level)", message: "the file is empty: define pipelines and destinations" },
    ]);
  }
  const interpolated = interpolateEnv(data, options.env ?? process.env);
  const parsed = configSchema.safeParse(interpolated.value, { error: zodErrorMap });
  const problems = _mergeProblems([
    _protoKeyProblems(data, []),
    interpolated.problems,
    parsed.success ? [] : problemsFromZod(parsed.error.issues),
    destinationRefProblems(interpolated.value),
  ]);
  if (!parsed.success || problems.length > 0) throw configError(file, problems);
  const normalized = normalizeConfig(parsed.data, file);
  if (normalized.problems.length > 0) throw configError(file, normalized.problems);
  return normalized.config;
}

/**
 * Every `__proto__` key of the parsed file. The YAML parser keeps one as an
 * ordinary key, but the schema's records drop it without a word, so a
 * pipeline or destination named `__proto__` would vanish while `validate`
 * says ok.
 */
function _protoKeyProblems(node: unknown, at: PropertyKey[]): ConfigProblem[] {
  if (node === null || typeof node !== "object") return [];
  const problems: ConfigProblem[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === "__proto__") {
      const what =
        at.length === 1 && (at[0] === "pipelines" || at[0] === "destinations")
          ? `is not a valid ${at[0] === "pipelines" ? "pipeline" : "destination"} id: ${ID_RULE}`
          : "is not a key distributor knows";
      problems.push({ path: formatKeyPath([...at, key]), message: `"__proto__" ${what}` });
    } else {
      problems.push(..._protoKeyProblems(value, [...at, Array.isArray(node) ? Number(key) : key]));
    }
  }
  return problems;
}

/**
 * Concatenate problem lists, keeping only the first problem per key path: a
 * value left as "${UNSET}" would also fail its schema check, and a malformed id
 * is also an unknown reference; the first problem is the cause.
 */
function _mergeProblems(lists: ConfigProblem[][]): ConfigProblem[] {
  const seen = new Set<string>();
  return lists.flat().filter((problem) => {
    if (seen.has(problem.path)) return false;
    seen.add(problem.path);
    return true;
  });
}

type FileOrigin = "option" | "env" | "default";

function _chooseFile(
  options: LoadConfigOptions,
  env: NodeJS.ProcessEnv,
): { file: string; origin: FileOrigin } {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  if (options.file !== undefined && options.file !== "") {
    return { file: path.resolve(cwd, options.file), origin: "option" };
  }
  const fromEnv = env[CONFIG_ENV_VAR];
  if (fromEnv !== undefined && fromEnv !== "") {
    return { file: path.resolve(cwd, fromEnv), origin: "env" };
  }
  return { file: path.resolve(cwd, DEFAULT_CONFIG_FILE), origin: "default" };
}

const ORIGIN_TEXT: Record<FileOrigin, string> = {
  option: "given with --config",
  env: `named by ${CONFIG_ENV_VAR}`,
  default: "the default in the working directory",
};

async function _readConfigFile(file: string, origin: FileOrigin): Promise<string> {
  const unreadable = (reason: string, cause?: unknown) =>
    new DistributorError(
      "config_invalid",
      `Configuration file ${file} (${ORIGIN_TEXT[origin]}) ${reason}. Create it, or choose another file with --config FILE or the ${CONFIG_ENV_VAR} environment variable.`,
      { paths: [file], cause },
    );
  let read: RegularFileRead;
  try {
    read = readRegularFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw unreadable(
      code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? String(error)})`,
      error,
    );
  }
  if (read.kind === "directory") throw unreadable("is a directory, not a file");
  if (read.kind === "other") {
    throw unreadable("is not a regular file (a FIFO, a device or a socket)");
  }
  const bytes = read.bytes;
  try {
    // Fatal: a byte that is not UTF-8 would otherwise become U+FFFD, and a
    // root or source path holding it would name another directory.
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new DistributorError(
      "config_invalid",
      `Configuration file ${file} (${ORIGIN_TEXT[origin]}) is not valid UTF-8 text (line ${_firstBadLine(bytes)}). Save it as UTF-8.`,
      { paths: [file] },
    );
  }
}

/** The 1-based line of the first byte sequence that is not UTF-8. */
function _firstBadLine(bytes: Buffer): number {
  let start = 0;
  let line = 1;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (let end = bytes.indexOf(10); ; end = bytes.indexOf(10, start)) {
    const stop = end === -1 ? bytes.length : end;
    try {
      decoder.decode(bytes.subarray(start, stop));
    } catch {
      return line;
    }
    if (end === -1) return line;
    start = end + 1;
    line++;
  }
}

function _parseYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  // logLevel "error": the parser's own warnings go to the problems below, not
  // to stderr as a Node.js process warning.
  const doc = parseDocument(text, {
    lineCounter,
    prettyErrors: false,
    logLevel: "error",
    uniqueKeys: _sameKey,
  });
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  // Warnings too (an unknown tag such as !custom): a config is read strictly.
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length === 0) {
    let value: unknown;
    try {
      value = doc.toJS();
    } catch (error) {
      // An alias to no anchor, or one expanding beyond the yaml package's
      // limit (a "billion laughs" file): found only when values are built.
      const reason = error instanceof Error ? error.message : String(error);
      const alias = /Unresolved alias.*: (\S+)$/.exec(reason)?.[1];
      const where = alias === undefined ? -1 : text.indexOf(`*${alias}`);
      throw new DistributorError(
        "config_invalid",
        `Invalid YAML in ${where >= 0 ? at(where) : file}: ${reason}. Fix the file: define each &anchor before its *alias, and keep aliases few.`,
        { paths: [file], cause: error },
      );
    }
    const loop = _circularKeyPath(value, new Set(), "");
    if (loop !== null) {
      throw new DistributorError(
        "config_invalid",
        `Invalid YAML in ${file}: the value at ${loop || "the top"} is an alias of a node that holds it, so the config would never end. Fix the file: an *alias may only repeat a node outside itself.`,
        { paths: [file] },
      );
    }
    return value;
  }
  const lines = [
    `Invalid YAML in ${file}:`,
    ...problems.map((problem) => `  ${at(problem.pos[0])}: ${_yamlProblem(problem, text)}`),
    "Fix the syntax at the line and column shown.",
  ];
  throw linedError("config_invalid", lines, { paths: [file] });
}

/**
 * Two keys of one mapping that become one key of the config: a JavaScript
 * object's keys are strings, so `2026:` and `"2026":` (or `true:` and
 * `"true":`) are the same key, and the yaml package, which compares values
 * with their types, let the second silently replace the first.
 */
function _sameKey(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isScalar(a) || !isScalar(b)) return false;
  return String(a.value) === String(b.value);
}

/**
 * The key path ("" for the top) of a value that holds itself, reached
 * through an alias of a node from inside that node (`pipelines: &a [*a]`):
 * the yaml package builds such a value, and every walk over it would never
 * end. Null when there is none.
 */
function _circularKeyPath(value: unknown, holders: Set<object>, at: string): string | null {
  if (typeof value !== "object" || value === null) return null;
  if (holders.has(value)) return at;
  holders.add(value);
  for (const [key, item] of Object.entries(value)) {
    const found = _circularKeyPath(item, holders, at === "" ? key : `${at}.${key}`);
    if (found !== null) return found;
  }
  holders.delete(value);
  return null;
}

/** The parser's message, in terms of the file rather than of the parser's API. */
function _yamlProblem(
  problem: { code: string; message: string; pos: [number, number] },
  text: string,
): string {
  switch (problem.code) {
    case "MULTIPLE_DOCS":
      return "a second YAML document starts here (after ---); a config file holds one";
    case "DUPLICATE_KEY": {
      // The position marks where the key starts: a plain or quoted scalar up to its colon.
      const key = /^("(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|[^:\n#]*?)\s*:/.exec(
        text.slice(problem.pos[0]),
      )?.[1];
      return key
        ? `the key ${key.startsWith('"') || key.startsWith("'") ? key : JSON.stringify(key)} is given twice in one mapping`
        : "a key is given twice in one mapping";
    }
    default:
      return problem.message;
  }
}
