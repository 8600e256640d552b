/**
 * Planned outputs of a pipeline (SPEC §3), once the bundle verifies: the
 * layout (_layout.ts) with a digest for every output, rendering the Markdown
 * that the render cache does not already know. The result is what every
 * destination of the pipeline should hold; destination planning compares it
 * with each destination's state.
 */
import { FileChecker } from "../bundle/_file-checks.js";
import type { CheckOptions } from "../bundle/_parallel-checks.js";
import {
  type KeepBudget,
  keepOnly,
  keptBytes,
  newVerifiedBytesStore,
  usedBytes,
  type VerifiedBytesStore,
} from "../bundle/_verified-bytes.js";
import { verifyFiles } from "../bundle/verify.js";
import type { PipelineConfig, TransformConfig } from "../config/types.js";
import { DistributorError } from "../errors.js";
import type { ManifestFile, PlannedOutput, SourceBundle } from "../model.js";
import { compareUtf8 } from "../paths.js";
import { type Layout, layoutOf } from "./_layout.js";
import { pagesOf, type RenderedPage, renderDocument, renderShareInput } from "./_render-job.js";
import { HTML_MEDIA_TYPE } from "./media-types.js";
import { type CachedRender, type RenderCache, renderKeys } from "./render-cache.js";

export { mediaTypeFor } from "./media-types.js";

function generatedOutput(file: ManifestFile, layout: Layout, page: RenderedPage): PlannedOutput {
  const { bytes, sha256 } = page;
  return {
    path: layout.transformed.get(file.path) as string,
    kind: "generated",
    sourcePath: file.path,
    transform: (layout.transforms.get(file.path) as TransformConfig).transform,
    sha256,
    size: bytes.byteLength,
    mediaType: HTML_MEDIA_TYPE,
    content: { type: "bytes", bytes },
  };
}

const RENDER_JOB = new URL("./_render-job.js", import.meta.url);

/**
 * Documents of less Markdown than this in all are rendered on the calling
 * thread alone: about 0.3 s of rendering on one core. A helper's first
 * renders are slow (it loads markdown-it, 20-40 ms, and its code is cold),
 * and on a short list the calling thread waits for them. S's 100 documents
 * (1 MB) rendered with a helper took a fresh publish to S3 73 ms longer
 * (median of 12 alternating pairs, 10 slower) and 0.11 s more CPU; M's
 * 1,000 (10 MB) render in about half the time (docs/performance.md, item 64).
 */
const SHARED_RENDER_MIN_BYTES = 4 * 1024 * 1024;

/** How many documents helper threads rendered since the process started (for tests). */
export const sharedRenderCounts = { onHelpers: 0 };

export interface PlanOutputsOptions extends CheckOptions {
  /**
   * Digests of documents rendered before (see render-cache.ts). A document
   * found there is not rendered here: its output gets the cached digest and a
   * deferred content, rendered by `renderDeferred` if it has to be written.
   * Documents rendered here are added to it.
   */
  renderCache?: RenderCache;
  /**
   * Keep the bytes of small source files from verification, within this
   * budget (which is charged what is kept), and give them to their outputs
   * (`verifiedBytes`): for a run that will publish them.
   */
  keepBytes?: KeepBudget;
  /** The largest file kept (default KEEP_MAX_FILE_BYTES; see keepFileBytesFor in run.ts). */
  keepFileBytes?: number;
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
 * The layout is planned, and Markdown rendered on this thread from the very
 * bytes it verified, one file at a time, while helper threads verify the
 * bundle: the costs overlap instead of adding up. From 4 MiB of Markdown,
 * helpers done verifying render documents from the back of the list
 * (_render-job.ts). Nothing rendered is used unless the whole bundle
 * verifies. Documents in the render cache are
 * verified with the other files and not rendered.
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
  options: PlanOutputsOptions = {},
): Promise<PlannedOutput[]> {
  try {
    return await _planOutputs(bundle, pipeline, options);
  } catch (error) {
    throw _inPipeline(error, pipeline.id, bundle.dir);
  }
}

/**
 * An output_collision or transform_failed error that names the pipeline and
 * its bundle: its own message names files by their manifest paths only, and
 * with several pipelines (often with the same file names) the reader could
 * not tell which bundle to fix. (source_invalid names its bundle already.)
 */
function _inPipeline(error: unknown, pipelineId: string, dir: string): unknown {
  if (!(error instanceof DistributorError)) return error;
  if (error.code !== "output_collision" && error.code !== "transform_failed") return error;
  const where = `Pipeline ${JSON.stringify(pipelineId)} (bundle ${dir}): `;
  const lines = error.lines?.map((line, index) => (index === 0 ? `${where}${line}` : line));
  return new DistributorError(error.code, `${where}${error.message}`, {
    paths: error.paths,
    cause: error,
    ...(lines === undefined ? {} : { lines }),
  });
}

async function _planOutputs(
  bundle: SourceBundle,
  pipeline: PipelineConfig,
  options: PlanOutputsOptions,
): Promise<PlannedOutput[]> {
  let layout: Layout | undefined;
  let layoutError: unknown;
  let cache: CacheLookup | undefined;
  const { renderCache } = options;
  const generated: PlannedOutput[] = [];
  const renderFailures: DistributorError[] = [];
  const budget = options.keepBytes;
  const store =
    budget && budget.remaining > 0
      ? newVerifiedBytesStore(bundle.files, budget.remaining, options.keepFileBytes)
      : null;
  // Index in bundle.files of each of layout.sources, once the layout is known.
  let sourceIndexes: number[] = [];
  // The documents rendered on this thread or shared with the helpers, in order.
  let toRender: readonly ManifestFile[] = [];
  const renderedHere = new Set<string>();
  const keep = (file: ManifestFile, page: RenderedPage) => {
    cache?.record(file.path, page);
    generated.push(generatedOutput(file, layout as Layout, page));
  };
  const sharedAnswers = await verifyFiles(bundle, {
    ...options,
    store,
    // Planned while the helper threads verify (the documents to render here
    // depend on the layout and the render cache), and rendered meanwhile too.
    readHere: () => {
      try {
        layout = layoutOf(bundle, pipeline);
      } catch (error) {
        layoutError = error;
        return new Set();
      }
      if (store) {
        sourceIndexes = indexesOf(layout.sources, bundle.files);
        keepOnly(store, sourceIndexes);
      }
      cache = renderCache ? cacheLookup(bundle, pipeline.id, layout, renderCache) : undefined;
      const renderHere = new Set(layout.transforms.keys());
      for (const sourcePath of cache?.hits.keys() ?? []) renderHere.delete(sourcePath);
      return renderHere;
    },
    // Helpers done verifying render documents from the back of the list.
    shareHere: {
      job: RENDER_JOB,
      minBytes: SHARED_RENDER_MIN_BYTES,
      input: (files, claims) => {
        toRender = files;
        const { transforms, transformed } = layout as Layout;
        const allowHtmlOf = (file: ManifestFile) =>
          (transforms.get(file.path) as TransformConfig).allowHtml;
        return renderShareInput(bundle.dir, files, claims, allowHtmlOf, transformed);
      },
    },
    onContent: (file, content) => {
      renderedHere.add(file.path);
      let page: RenderedPage;
      try {
        page = render(file, content, layout as Layout);
      } catch (error) {
        // Every document that cannot be rendered is named at once, as every
        // bad source file is: fixing one should not only bring up the next.
        if (!(error instanceof DistributorError && error.code === "transform_failed")) throw error;
        renderFailures.push(error);
        return;
      }
      keep(file, page);
    },
  });
  if (!layout) throw layoutError;
  renderLeftovers(bundle, layout, toRender, renderedHere, sharedAnswers, keep, renderFailures);
  if (renderFailures.length > 0) throw transformFailures(renderFailures);
  if (store && budget) {
    budget.remaining -= usedBytes(store);
    attachKeptBytes(layout.sources, sourceIndexes, bundle.files, store);
  }
  // Every document is rendered here or deferred from the cache: verifyFiles
  // fails the bundle for any document it could not hand over.
  const missing = layout.transforms.size - generated.length - (cache?.hits.size ?? 0);
  if (missing !== 0)
    throw new Error(`${missing} document(s) verified but neither rendered nor cached`);
  // One checker (and its read buffer) for every deferred output rendered later.
  let checker: FileChecker | undefined;
  const checkerOf = () => {
    checker ??= new FileChecker(bundle.dir);
    return checker;
  };
  for (const { file, cached } of cache?.hits.values() ?? []) {
    generated.push(deferredOutput(file, cached, layout, cache as CacheLookup, checkerOf));
  }
  return [...layout.sources, ...generated].sort((a, b) => compareUtf8(a.path, b.path));
}

/** One `transform_failed` for every document that could not be rendered, by path. */
function transformFailures(unordered: readonly DistributorError[]): DistributorError {
  if (unordered.length === 1) return unordered[0] as DistributorError;
  const failures = [...unordered].sort((a, b) => compareUtf8(a.paths[0] ?? "", b.paths[0] ?? ""));
  const shown = failures
    .slice(0, 5)
    .map((failure) => failure.message.replace(/^markdown_to_html: /, ""));
  const more = failures.length > shown.length ? `; and ${failures.length - shown.length} more` : "";
  return new DistributorError(
    "transform_failed",
    `markdown_to_html: ${failures.length} documents cannot be rendered: ${shown.join("; ")}${more}`,
    { paths: failures.slice(0, 100).flatMap((failure) => failure.paths) },
  );
}

/**
 * The index in `files` of each of `sources`, which are in the order of
 * `files` (layoutOf): one walk over both. Should a source not be found that
 * way, the ones from it on get no index, and so no kept bytes: they read
 * their file when copied, which is always safe.
 */
function indexesOf(sources: readonly PlannedOutput[], files: readonly ManifestFile[]): number[] {
  const indexes: number[] = [];
  let index = 0;
  for (const { sourcePath } of sources) {
    while (index < files.length && (files[index] as ManifestFile).path !== sourcePath) index++;
    if (index === files.length) break;
    indexes.push(index);
  }
  return indexes;
}

/**
 * Give each source output the bytes verification kept of its file (see
 * _verified-bytes.ts), so that publishing writes them instead of reading
 * the file again. `indexes`: see indexesOf.
 */
function attachKeptBytes(
  sources: readonly PlannedOutput[],
  indexes: readonly number[],
  files: readonly ManifestFile[],
  store: VerifiedBytesStore,
): void {
  indexes.forEach((index, i) => {
    const { content } = sources[i] as PlannedOutput;
    const bytes = keptBytes(store, index, (files[index] as ManifestFile).size);
    if (bytes !== undefined && content.type === "file") content.verifiedBytes = bytes;
  });
}

function render(file: ManifestFile, content: Uint8Array, layout: Layout): RenderedPage {
  const config = layout.transforms.get(file.path) as TransformConfig;
  return renderDocument(file, content, config, layout.transformed);
}

/**
 * The shared documents (`toRender`) that this thread did not render: the
 * pages the helpers answered with are kept, and any document a helper took
 * but did not answer for (it failed a check there, could not be rendered or
 * the helper failed) is read, checked and rendered here, so that its
 * problem is reported as this thread reports it. Verification has passed by
 * now: a document that fails its check here changed during the run.
 */
function renderLeftovers(
  bundle: SourceBundle,
  layout: Layout,
  toRender: readonly ManifestFile[],
  renderedHere: ReadonlySet<string>,
  sharedAnswers: readonly unknown[],
  keep: (file: ManifestFile, page: RenderedPage) => void,
  renderFailures: DistributorError[],
): void {
  const pages = pagesOf(sharedAnswers, toRender.length);
  let checker: FileChecker | undefined;
  toRender.forEach((file, index) => {
    if (renderedHere.has(file.path)) return;
    const page = pages.get(index);
    if (page) {
      sharedRenderCounts.onHelpers++;
      keep(file, page);
      return;
    }
    checker ??= new FileChecker(bundle.dir);
    const read = checker.read(file);
    if ("problem" in read) throw changedDuringRun(checker.root, file, read.problem);
    try {
      keep(file, render(file, read.bytes, layout));
    } catch (error) {
      if (!(error instanceof DistributorError && error.code === "transform_failed")) throw error;
      renderFailures.push(error);
    }
  });
}

function changedDuringRun(root: string, file: ManifestFile, problem: string): DistributorError {
  return new DistributorError(
    "source_invalid",
    `Source bundle ${root} changed during the run: ${file.path}: ${problem}. No output or state was written; run again once the bundle is complete.`,
    { paths: [file.path] },
  );
}

/** The pipeline's documents found in the render cache, and how to record new renders. */
interface CacheLookup {
  /** Source path → its manifest entry and cached render. */
  hits: Map<string, { file: ManifestFile; cached: CachedRender }>;
  record: (sourcePath: string, page: RenderedPage) => void;
}

function cacheLookup(
  bundle: SourceBundle,
  pipelineId: string,
  layout: Layout,
  cache: RenderCache,
): CacheLookup {
  const files = bundle.files.filter((file) => layout.transforms.has(file.path));
  const documents = files.map((file) => {
    const config = layout.transforms.get(file.path) as TransformConfig;
    return { ...file, transform: config.transform, allowHtml: config.allowHtml };
  });
  const keys = renderKeys(layout.transformed, documents);
  const hits: CacheLookup["hits"] = new Map();
  for (const file of files) {
    const cached = cache.get(pipelineId, keys.get(file.path) as string);
    if (cached) hits.set(file.path, { file, cached });
  }
  return {
    hits,
    record: (sourcePath, { sha256, bytes }) =>
      cache.set(pipelineId, keys.get(sourcePath) as string, { sha256, size: bytes.byteLength }),
  };
}

/**
 * A generated output planned with the cached digest of its render. Rendering
 * it later re-reads the source with every verification check (it is used only
 * if it still matches the manifest) and records the result in the cache.
 */
function deferredOutput(
  file: ManifestFile,
  hit: CachedRender,
  layout: Layout,
  cache: CacheLookup,
  checkerOf: () => FileChecker,
): PlannedOutput {
  const sourcePath = file.path;
  const config = layout.transforms.get(sourcePath) as TransformConfig;
  const produce = () => {
    const checker = checkerOf();
    const read = checker.read(file);
    if ("problem" in read) throw changedDuringRun(checker.root, file, read.problem);
    const page = render(file, read.bytes, layout);
    cache.record(sourcePath, page);
    return page;
  };
  return {
    path: layout.transformed.get(sourcePath) as string,
    kind: "generated",
    sourcePath,
    transform: config.transform,
    sha256: hit.sha256,
    size: hit.size,
    mediaType: HTML_MEDIA_TYPE,
    content: { type: "deferred", produce },
  };
}

/**
 * Render `output` now if its content was deferred (planned from the render
 * cache), replacing its content with the bytes and its digest and size with
 * theirs. Returns true when they differ from what was planned: the cache was
 * wrong, and whatever was planned from that digest must be planned again.
 *
 * @throws DistributorError `source_invalid` when the source no longer matches
 *   its manifest entry.
 */
export function renderDeferred(output: PlannedOutput): boolean {
  if (output.content.type !== "deferred") return false;
  const { bytes, sha256 } = output.content.produce();
  const changed = sha256 !== output.sha256 || bytes.byteLength !== output.size;
  output.content = { type: "bytes", bytes };
  output.sha256 = sha256;
  output.size = bytes.byteLength;
  return changed;
}
