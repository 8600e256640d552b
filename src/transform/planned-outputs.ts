/**
 * Planned outputs of a pipeline (SPEC §3): which bundle files are published as
 * they are, which are rendered, and at which paths, once the bundle verifies. The result is
 * what every destination of the pipeline should hold; destination planning
 * compares it with each destination's state.
 */
import path from "node:path";
import type { CheckOptions } from "../bundle/_parallel-checks.js";
import { verifyFiles } from "../bundle/verify.js";
import type { PipelineConfig, TransformConfig } from "../config/types.js";
import { DistributorError } from "../errors.js";
import { sha256Digest } from "../hashing.js";
import type { ManifestFile, PlannedOutput, SourceBundle } from "../model.js";
import { cleanPathProblem, compareUtf8 } from "../paths.js";
import { createLinkRewriter, derivedHtmlPath } from "./links.js";
import { renderMarkdownToHtml } from "./markdown-to-html.js";
import { HTML_MEDIA_TYPE, mediaTypeFor } from "./media-types.js";

export { mediaTypeFor } from "./media-types.js";

interface Assignment {
  file: ManifestFile;
  /** First transform whose include matches the file, if any. */
  transform?: TransformConfig;
}

function sourceOutput(bundle: SourceBundle, file: ManifestFile): PlannedOutput {
  return {
    path: file.path,
    kind: "source",
    sourcePath: file.path,
    sha256: file.sha256,
    size: file.size,
    mediaType: mediaTypeFor(file.path, file.media_type),
    content: { type: "file", absPath: path.join(bundle.dir, file.path) },
  };
}

function generatedOutput(
  file: ManifestFile,
  outputPath: string,
  transform: TransformConfig,
  bytes: Uint8Array,
): PlannedOutput {
  return {
    path: outputPath,
    kind: "generated",
    sourcePath: file.path,
    transform: transform.transform,
    sha256: sha256Digest(bytes),
    size: bytes.byteLength,
    mediaType: HTML_MEDIA_TYPE,
    content: { type: "bytes", bytes },
  };
}

function derivedPaths(assignments: readonly Assignment[]): Map<string, string> {
  const transformed = new Map<string, string>();
  for (const { file, transform } of assignments) {
    if (!transform) continue;
    const derived = derivedHtmlPath(file.path);
    const problem = cleanPathProblem(derived);
    if (problem) {
      throw new DistributorError(
        "transform_failed",
        `${transform.transform}: the output path "${derived}" for ${file.path} ${problem}. Rename the source file.`,
        { paths: [file.path] },
      );
    }
    transformed.set(file.path, derived);
  }
  return transformed;
}

/** Where a planned path comes from, for collision messages. */
interface Slot {
  path: string;
  origin: string;
}

function slotsOf(
  assignments: readonly Assignment[],
  transformed: ReadonlyMap<string, string>,
): Slot[] {
  return assignments.flatMap(({ file, transform }): Slot[] => {
    const source = { path: file.path, origin: `source file ${file.path}` };
    if (!transform) return [source];
    const generated = {
      path: transformed.get(file.path) as string,
      origin: `generated from ${file.path} by ${transform.transform}`,
    };
    return transform.keepSource ? [generated, source] : [generated];
  });
}

/** Fail with `output_collision` listing every path planned more than once and its origins. */
function assertNoCollisions(slots: readonly Slot[]): void {
  const byPath = new Map<string, string[]>();
  for (const slot of slots) {
    const origins = byPath.get(slot.path);
    if (origins) origins.push(slot.origin);
    else byPath.set(slot.path, [slot.origin]);
  }
  const collisions = [...byPath].filter(([, origins]) => origins.length > 1);
  if (collisions.length === 0) return;
  collisions.sort(([a], [b]) => compareUtf8(a, b));
  const lines = collisions.map(
    ([outputPath, origins]) => `\n  - ${outputPath}: ${origins.join(" and ")}`,
  );
  throw new DistributorError(
    "output_collision",
    `Several planned outputs have the same path:${lines.join("")}\nRename one of the files in the bundle, or narrow the pipeline's include/exclude or the transform's include.`,
    { paths: collisions.map(([outputPath]) => outputPath) },
  );
}

/** A pipeline's outputs known from paths alone, before any file is read. */
interface Layout {
  sources: PlannedOutput[];
  /** Source path → the transform that renders it. */
  transforms: Map<string, TransformConfig>;
  /** Source path → its derived output path, for every transformed file. */
  transformed: Map<string, string>;
}

function layoutOf(bundle: SourceBundle, pipeline: PipelineConfig): Layout {
  const assignments: Assignment[] = bundle.files
    .filter((file) => pipeline.selects(file.path))
    .map((file) => {
      const transform = pipeline.transforms.find((t) => t.matches(file.path));
      return transform ? { file, transform } : { file };
    });
  const transformed = derivedPaths(assignments);
  assertNoCollisions(slotsOf(assignments, transformed));
  const transforms = new Map<string, TransformConfig>();
  for (const { file, transform } of assignments)
    if (transform) transforms.set(file.path, transform);
  const sources = assignments
    .filter(({ transform }) => !transform || transform.keepSource)
    .map(({ file }) => sourceOutput(bundle, file));
  return { sources, transforms, transformed };
}

/**
 * Verify `bundle` (SPEC §2, see verifyFiles) and plan the outputs of `pipeline`
 * for it (SPEC §3). Each manifest file selected by the pipeline's
 * include/exclude becomes a `source` output at its path, unless a transform
 * matches it (the first matching transform wins): then a `generated` output at
 * the derived path, plus the `source` output when `keepSource`. Links between
 * transformed files are rewritten to their outputs. Sorted by the UTF-8 bytes
 * of path.
 *
 * Markdown is rendered on this thread from the very bytes that were verified,
 * one file at a time, while worker threads verify the other files: the two
 * costs overlap instead of adding up. Nothing rendered is used unless the
 * whole bundle verifies.
 *
 * @throws DistributorError `source_invalid` listing every bad file (first: a
 *   bad bundle is reported before anything planned from it);
 *   `output_collision` listing every path planned twice; `transform_failed`
 *   for an output path that is not clean or a document that cannot be
 *   rendered (not UTF-8).
 */
export async function planOutputs(
  bundle: SourceBundle,
  pipeline: PipelineConfig,
  options: CheckOptions = {},
): Promise<PlannedOutput[]> {
  let layout: Layout | undefined;
  let layoutError: unknown;
  try {
    layout = layoutOf(bundle, pipeline);
  } catch (error) {
    layoutError = error;
  }
  const generated: PlannedOutput[] = [];
  await verifyFiles(bundle, {
    ...options,
    readHere: new Set(layout?.transforms.keys()),
    onContent: (file, content) => {
      const { transforms, transformed } = layout as Layout;
      const config = transforms.get(file.path) as TransformConfig;
      const bytes = renderMarkdownToHtml(content, {
        fileName: file.path,
        allowHtml: config.allowHtml,
        rewriteLink: createLinkRewriter(file.path, transformed),
      });
      generated.push(generatedOutput(file, transformed.get(file.path) as string, config, bytes));
    },
  });
  if (!layout) throw layoutError;
  return [...layout.sources, ...generated].sort((a, b) => compareUtf8(a.path, b.path));
}
