/**
 * The raw configuration file (SPEC §3) as a zod schema: what a user may write in
 * `distributor.yaml`, before paths are resolved and globs compiled. The field
 * descriptions double as the editor hover text of `schema/distributor.schema.json`,
 * so they are written for the person editing the file.
 */
import * as z from "zod";
import { cleanPathProblem } from "../paths.js";

/** Pipeline and destination ids: slug-like, 1–64 characters. */
const ID_PATTERN = /^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$/;
/** What a bad id's message asks for. */
export const ID_RULE =
  'use 1-64 lowercase letters, digits, "-" or "_", starting and ending with a letter or digit';
/** `max_age` values: a whole number and one unit (s, m, h, d, w). */
const DURATION_PATTERN = /^([0-9]+)([smhdw])$/;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
/**
 * Timestamps span the years 0000-9999: an output older than this does not
 * exist, and a larger number would print as 8.6e+27 in every report.
 */
const MAX_AGE_SECONDS = 10_000 * 365.25 * 86_400;

/** Seconds in a duration like "30d" (NaN for anything else). */
export function durationSeconds(duration: string): number {
  const match = DURATION_PATTERN.exec(duration);
  const unit = match?.[2];
  if (match === null || unit === undefined) return Number.NaN;
  return Number(match[1]) * (UNIT_SECONDS[unit] ?? Number.NaN);
}
const DEFAULT_INCLUDE = ["**"];
const DEFAULT_TRANSFORM_INCLUDE = ["**/*.md", "**/*.markdown"];
const DEFAULT_MAX_CONCURRENCY = 16;

function _idSchema(what: string) {
  return z.string().regex(ID_PATTERN, {
    error: (issue) => `${JSON.stringify(issue.input)} is not a valid ${what} id: ${ID_RULE}`,
  });
}

/**
 * Entries by id. The id rule is a check on the record rather than zod's key
 * schema: zod skips the value of a key that fails its key schema, so a bad id
 * hid every problem inside its entry. The check runs even when values have
 * problems (`when`), and the JSON Schema still gets the rule as `propertyNames`.
 */
function _idRecord<T extends z.ZodType>(what: string, value: T) {
  const id = _idSchema(what);
  return z
    .record(z.string(), value)
    .superRefine(
      (entries, ctx) => {
        if (typeof entries !== "object" || entries === null) return;
        for (const key of Object.keys(entries)) {
          const problem = id.safeParse(key).error?.issues[0];
          if (problem) ctx.addIssue({ code: "custom", path: [key], message: problem.message });
        }
      },
      { when: () => true },
    )
    .meta({ propertyNames: { type: "string", pattern: ID_PATTERN.source } });
}

/** A path on this machine: no operating system takes a NUL byte in one. */
function _localPath() {
  return z
    .string()
    .min(1, { error: "must not be empty" })
    .refine((value) => !value.includes("\u0000"), "must not contain a NUL character");
}

/** A clean relative path (SPEC §5) where "" means the root itself. */
function _cleanPathOrEmpty() {
  return z.string().superRefine((value, ctx) => {
    const problem = cleanPathProblem(value, { allowEmpty: true });
    if (problem !== null)
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(value)} ${problem}` });
  });
}

function _globList(what: string) {
  return z
    .array(z.string().min(1, { error: "a glob must not be empty" }))
    .describe(
      `${what} Globs match manifest paths; dotfiles match too ("**" includes ".well-known/x").`,
    );
}

const transformSchema = z
  .strictObject({
    transform: z
      .literal("markdown_to_html")
      .describe('The transform to apply. Only "markdown_to_html" exists.'),
    include: _globList(
      'Manifest paths this transform applies to. Default: ["**/*.md", "**/*.markdown"].',
    ).default(DEFAULT_TRANSFORM_INCLUDE),
    keep_source: z
      .boolean()
      .default(false)
      .describe("Also publish the matched Markdown file itself, next to the generated HTML."),
    allow_html: z
      .boolean()
      .default(false)
      .describe("Pass raw HTML written in the Markdown through as is. Default: escape it."),
  })
  .describe("A transform deriving outputs from matched source files.");

const pipelineSchema = z
  .strictObject({
    source: _localPath()
      .optional()
      .describe(
        "Source bundle directory (holding manifest.json). Relative paths resolve against the config file's directory. `run --source` overrides it.",
      ),
    destinations: z
      .array(_idSchema("destination"))
      .min(1, { error: "must name at least one destination id" })
      .describe("Ids of the destinations (keys of `destinations`) this pipeline publishes to."),
    include: _globList('Manifest paths to publish. Default: ["**"] (all).').default(
      DEFAULT_INCLUDE,
    ),
    exclude: _globList("Manifest paths not to publish, even when included. Default: none.").default(
      [],
    ),
    transforms: z
      .array(transformSchema)
      .default([])
      .describe("Transforms applied to selected files, e.g. markdown_to_html."),
  })
  .describe("A pipeline: which source bundle to publish, what to select from it, and where to.");

const filesystemSchema = z
  .strictObject({
    type: z
      .literal("filesystem")
      .default("filesystem")
      .describe('Storage type: "filesystem" (the default) or "s3".'),
    root: _localPath().describe(
      "Storage root directory. Relative paths resolve against the config file's directory.",
    ),
  })
  .describe("A directory tree on this machine, e.g. one served as a static site.");

const BUCKET_NAME = /^[A-Za-z0-9._-]{1,255}$/;

/**
 * An endpoint with no user name or password (credentials come from the AWS
 * chain only: a secret written into the URL would be ignored, yet kept in
 * the config for anyone who reads it), no query and no fragment (a request's
 * own are added to it). A
 * path is kept: the SDK puts it before the bucket and key, for a server
 * behind a proxy at that path.
 */
function _plainEndpoint(endpoint: string): boolean {
  const url = new URL(endpoint);
  return url.username === "" && url.password === "" && url.search === "" && url.hash === "";
}

const s3Schema = z
  .strictObject({
    type: z.literal("s3").describe('Storage type: "s3" for S3-compatible object storage.'),
    bucket: z
      .string()
      .min(1, { error: "must not be empty" })
      // AWS's rules are stricter (3-63 lowercase characters); S3-compatible
      // servers and old us-east-1 buckets allow more. What no server takes is
      // a "/" or a space: such a name failed at run time as a storage_error.
      .regex(BUCKET_NAME, {
        error: 'must be a bucket name: letters, digits, ".", "-" and "_", at most 255 characters',
      })
      .describe("Bucket name."),
    prefix: _cleanPathOrEmpty()
      .default("")
      .describe(
        'Key prefix inside the bucket (a clean relative path, no leading or trailing "/"). Default: "" (the bucket root).',
      ),
    region: z
      .string()
      .min(1, { error: "must not be empty" })
      .optional()
      .describe("AWS region. Default: from the AWS environment."),
    endpoint: z
      .url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" })
      .refine(_plainEndpoint, {
        error:
          "must be an http(s) URL without a user name, password, query or fragment, like https://s3.example.internal:9000",
      })
      .optional()
      .describe("Custom endpoint URL for S3-compatible servers (Ceph RGW, MinIO, R2)."),
    force_path_style: z
      .boolean()
      .default(false)
      .describe(
        "Address the bucket in the URL path instead of the host name (often needed with MinIO or Ceph).",
      ),
    max_concurrency: z
      .int({ error: "must be a whole number from 1 to 64" })
      .min(1, { error: "must be a whole number from 1 to 64" })
      .max(64, { error: "must be a whole number from 1 to 64" })
      .default(DEFAULT_MAX_CONCURRENCY)
      .describe("At most this many requests in flight. Default: 16."),
  })
  .describe(
    "S3-compatible object storage. Credentials come from the standard AWS chain, never from this file.",
  );

const pruneSchema = z.strictObject({
  max_age: z
    .string({
      error: (issue) =>
        issue.input === undefined
          ? 'required when prune is set (a duration like "30d")'
          : undefined,
    })
    .regex(DURATION_PATTERN, {
      error: (issue) =>
        `${JSON.stringify(issue.input)} is not a duration: write a whole number and a unit s, m, h, d or w, like "30d"`,
    })
    .refine((value) => !(durationSeconds(value) > MAX_AGE_SECONDS), {
      error: (issue) =>
        `${JSON.stringify(issue.input)} is longer than the 10,000 years timestamps span: nothing could ever be pruned; remove retention.prune to keep everything`,
      abort: true,
    })
    .describe(
      'Outputs not updated for longer than this are pruned, e.g. "30d". Units: s, m, h, d, w.',
    ),
  keep_latest: z
    .int({ error: "must be a whole number, 0 or more" })
    .min(0, { error: "must be a whole number, 0 or more" })
    .default(0)
    .describe("The N most recently updated outputs of the owner are never pruned. Default: 0."),
});

const destinationSchema = z
  .strictObject({
    storage: z
      .discriminatedUnion("type", [filesystemSchema, s3Schema])
      .describe("Where the destination lives: a filesystem directory or an S3 bucket."),
    path: _cleanPathOrEmpty()
      .default("")
      .describe(
        'Destination bundle path under the storage root (clean relative path). "" or absent: the root itself.',
      ),
    url: z
      .url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" })
      // Recorded as written in every output url: a space there is no URL.
      .refine((value) => !/\s/.test(value), "must not contain spaces (percent-encode them: %20)")
      // Output paths are appended to it: after a query or fragment they
      // would land inside it (https://x/a?b=1/report.html).
      .refine(
        (value) => !/[?#]/.test(value),
        "must not have a query (?) or fragment (#): output paths are appended to it",
      )
      .optional()
      .describe(
        "Base URL of the destination bundle path; output urls are this joined with the output path.",
      ),
    workflow: z
      .enum(["additive", "replacement"])
      .default("additive")
      .describe(
        "additive (default): write planned outputs, keep the others. replacement: also remove this pipeline's outputs that the run omits.",
      ),
    retention: z
      .strictObject({
        prune: pruneSchema
          .optional()
          .describe("Policy for `distributor prune`: which outputs of the owner to delete when."),
      })
      .optional()
      .describe("Retention policies of this destination."),
  })
  .describe("A destination: a storage location and how publishing to it behaves.");

function _nonEmpty(value: Record<string, unknown>): boolean {
  return Object.keys(value).length > 0;
}

/** The whole configuration file. Parse with `configSchema.safeParse(data)`. */
export const configSchema = z
  .strictObject({
    $schema: z
      .string()
      .optional()
      .describe("JSON Schema of this file, for editors. Ignored by distributor."),
    pipelines: _idRecord("pipeline", pipelineSchema)
      .refine(_nonEmpty, { error: "must define at least one pipeline" })
      .describe("Pipelines by id (slug-like: lowercase letters, digits, - and _)."),
    destinations: _idRecord("destination", destinationSchema)
      .refine(_nonEmpty, { error: "must define at least one destination" })
      .describe("Destinations by id (slug-like: lowercase letters, digits, - and _)."),
  })
  .meta({
    title: "distributor configuration",
    description:
      "Configuration of distributor (distributor.yaml): pipelines that publish source bundles to destinations.",
  });

/** The configuration after schema defaults, before normalization. */
export type RawConfig = z.output<typeof configSchema>;
export type RawPipeline = z.output<typeof pipelineSchema>;
export type RawDestination = z.output<typeof destinationSchema>;
