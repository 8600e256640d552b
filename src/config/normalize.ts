/**
 * From the schema-checked raw config to the normalized {@link Config}: relative
 * paths resolved against the config file's directory, durations in seconds, globs
 * compiled once (hugo deployconfig); plus the cross-field rules.
 */
import path from "node:path";
import picomatch from "picomatch";
import { plainGlobMatcher, wildcardLoops } from "./_plain-glob.js";
import { type ConfigProblem, formatKeyPath } from "./issues.js";
import {
  durationSeconds,
  type RawConfig,
  type RawDestination,
  type RawPipeline,
} from "./schema.js";
import type {
  Config,
  DestinationConfig,
  PipelineConfig,
  StorageConfig,
  TransformConfig,
} from "./types.js";

export interface NormalizeResult {
  config: Config;
  problems: ConfigProblem[];
}

/** Normalize a schema-valid config read from the absolute path `file`. */
export function normalizeConfig(raw: RawConfig, file: string): NormalizeResult {
  const baseDir = path.dirname(file);
  const problems: ConfigProblem[] = [];
  const destinations = new Map<string, DestinationConfig>();
  for (const [id, destination] of Object.entries(raw.destinations)) {
    destinations.set(id, _destination(id, destination, baseDir));
  }
  const pipelines = new Map<string, PipelineConfig>();
  for (const [id, pipeline] of Object.entries(raw.pipelines)) {
    pipelines.set(id, _pipeline(id, pipeline, { baseDir, problems }));
  }
  return { config: { file, pipelines, destinations }, problems };
}

function _destination(id: string, raw: RawDestination, baseDir: string): DestinationConfig {
  const storage: StorageConfig =
    raw.storage.type === "filesystem"
      ? { type: "filesystem", root: path.resolve(baseDir, raw.storage.root) }
      : {
          type: "s3",
          bucket: raw.storage.bucket,
          prefix: raw.storage.prefix,
          forcePathStyle: raw.storage.force_path_style,
          maxConcurrency: raw.storage.max_concurrency,
          ...(raw.storage.region === undefined ? {} : { region: raw.storage.region }),
          ...(raw.storage.endpoint === undefined ? {} : { endpoint: raw.storage.endpoint }),
        };
  const destination: DestinationConfig = { id, storage, path: raw.path, workflow: raw.workflow };
  if (raw.url !== undefined) destination.url = raw.url;
  const prune = raw.retention?.prune;
  if (raw.retention !== undefined) {
    destination.retention =
      prune === undefined
        ? {}
        : {
            prune: { maxAgeSeconds: durationSeconds(prune.max_age), keepLatest: prune.keep_latest },
          };
  }
  return destination;
}

interface PipelineContext {
  baseDir: string;
  problems: ConfigProblem[];
}

function _pipeline(id: string, raw: RawPipeline, context: PipelineContext): PipelineConfig {
  const at = (...rest: PropertyKey[]) => ["pipelines", id, ...rest];
  const included = _compile(raw.include, { path: at("include"), problems: context.problems });
  const excluded = _compile(raw.exclude, { path: at("exclude"), problems: context.problems });
  const transforms = raw.transforms.map(
    (transform, index): TransformConfig => ({
      transform: transform.transform,
      include: transform.include,
      keepSource: transform.keep_source,
      allowHtml: transform.allow_html,
      matches: _compile(transform.include, {
        path: at("transforms", index, "include"),
        problems: context.problems,
      }),
    }),
  );
  const pipeline: PipelineConfig = {
    id,
    destinations: raw.destinations,
    include: raw.include,
    exclude: raw.exclude,
    selects: (manifestPath) => included(manifestPath) && !excluded(manifestPath),
    transforms,
  };
  if (raw.source !== undefined) pipeline.source = path.resolve(context.baseDir, raw.source);
  return pipeline;
}

interface CompileContext {
  path: PropertyKey[];
  problems: ConfigProblem[];
}

/** One predicate for a glob list; `dot` so that "**" also matches hidden files. */
function _compile(globs: string[], context: CompileContext): (manifestPath: string) => boolean {
  const matchers = globs.flatMap((glob, index) => {
    try {
      // What picomatch(glob)(path) decides, without the result object it builds
      // per call: the exact glob text, or its regex (clean paths need no
      // slash conversion).
      // makeRe skips picomatch()'s platform default: pass it, so that a glob
      // reads the same as before on Windows too. `debug` makes a glob whose
      // regex does not compile (`{a,b`, `[z-a]`) throw: without it picomatch
      // returns a regex that matches nothing, and a mistyped `exclude` would
      // silently publish what it was meant to keep out.
      const regex = picomatch.makeRe(glob, {
        dot: true,
        windows: process.platform === "win32",
        debug: true,
      });
      // A glob whose regex could backtrack for minutes on a producer's file
      // name is matched without it (_plain-glob.ts); the usual ones keep the
      // regex, which V8 runs faster.
      const plain = wildcardLoops(glob) >= 3 ? plainGlobMatcher(glob) : null;
      const matches = plain ?? ((manifestPath: string) => regex.test(manifestPath));
      return [(manifestPath: string) => manifestPath === glob || matches(manifestPath)];
    } catch (error) {
      context.problems.push({
        path: formatKeyPath([...context.path, index]),
        message: `invalid glob ${JSON.stringify(glob)}: ${_globFailure(error)}`,
      });
      return [];
    }
  });
  // "**" with `dot` matches every path without a "." or ".." segment, and
  // manifest paths are clean: the default include needs no regex per file.
  if (globs.includes("**")) return () => true;
  return (manifestPath) => matchers.some((matches) => matches(manifestPath));
}

/**
 * Why a glob did not compile, in the glob's terms: the regex engine's own
 * message names the regex picomatch built, which the user never wrote.
 */
function _globFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof SyntaxError)) return message;
  const engine = message.slice(message.lastIndexOf(": ") + 2);
  if (/unterminated group/i.test(engine)) return "a `{` or `(` is not closed";
  if (/range out of order/i.test(engine)) return "a `[...]` range runs backwards, as in `[z-a]`";
  return `it does not compile (${engine}); check its brackets and braces`;
}

function _isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Cross-field rule: every `pipelines.<id>.destinations[i]` names a defined
 * destination, once. Works on the unvalidated data (skipping what is malformed)
 * so these problems are reported together with the schema's.
 */
export function destinationRefProblems(data: unknown): ConfigProblem[] {
  if (!_isRecord(data) || !_isRecord(data.pipelines)) return [];
  const defined = _isRecord(data.destinations) ? Object.keys(data.destinations) : [];
  const problems: ConfigProblem[] = [];
  for (const [id, pipeline] of Object.entries(data.pipelines)) {
    if (!_isRecord(pipeline) || !Array.isArray(pipeline.destinations)) continue;
    const seen = new Set<unknown>();
    pipeline.destinations.forEach((destinationId: unknown, index) => {
      if (typeof destinationId !== "string") return;
      const where = formatKeyPath(["pipelines", id, "destinations", index]);
      const name = JSON.stringify(destinationId);
      if (!defined.includes(destinationId)) {
        const known = defined.length > 0 ? defined.join(", ") : "none";
        problems.push({ path: where, message: `unknown destination ${name} (defined: ${known})` });
      } else if (seen.has(destinationId)) {
        problems.push({ path: where, message: `destination ${name} is listed twice` });
      }
      seen.add(destinationId);
    });
  }
  return problems;
}
