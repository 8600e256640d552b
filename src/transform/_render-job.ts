/**
 * Rendering one Markdown document of a pipeline, on the calling thread
 * (planned-outputs.ts) or on a helper thread that has checked its share of
 * the bundle and takes documents the calling thread has not reached yet
 * (`runJob`, a follow-up of the verification job: threads.ts, FollowUp).
 *
 * Why: a bundle of mostly Markdown (a documentation build) used to render
 * on one core while the helper, done verifying, sat idle. The calling
 * thread takes documents from the front of the list and the helpers from
 * the back, so both cores render until the list is done, and no document
 * waits for a helper that is busy verifying (docs/performance.md, item 64).
 */

import { FileChecker } from "../bundle/_file-checks.js";
import { type PackedFiles, packedCount, packedFile, packFiles } from "../bundle/_packed-files.js";
import type { TransformConfig } from "../config/types.js";
import { DistributorError } from "../errors.js";
import { sha256Digest } from "../hashing.js";
import type { ManifestFile } from "../model.js";
import { hasWork, type JobResult, takeBack, type WorkClaims } from "../threads.js";
import { createLinkRewriter } from "./links.js";
import { prepareRenderer, renderMarkdownToHtml } from "./markdown-to-html.js";

/** A rendered document: the page's bytes and their digest. */
export interface RenderedPage {
  bytes: Uint8Array;
  /** `sha256:<64 hex>` of `bytes`. */
  sha256: string;
}

/**
 * Render the verified bytes of `file` as `config` asks, rewriting its links
 * to the outputs in `transformed` (source path → output path).
 *
 * @throws DistributorError `transform_failed` (see renderMarkdownToHtml).
 */
export function renderDocument(
  file: ManifestFile,
  content: Uint8Array,
  config: Pick<TransformConfig, "allowHtml">,
  transformed: ReadonlyMap<string, string>,
): RenderedPage {
  const bytes = renderMarkdownToHtml(content, {
    fileName: file.path,
    allowHtml: config.allowHtml,
    rewriteLink: createLinkRewriter(file.path, transformed),
  });
  return { bytes, sha256: sha256Digest(bytes) };
}

/** What a helper is sent: the documents to render, in the calling thread's order. */
export interface RenderShareInput {
  root: string;
  files: PackedFiles;
  /** Shared with the calling thread, which takes from the front; the helpers take from the back. */
  claims: WorkClaims;
  /** 1 where that document's transform passes raw HTML through. */
  allowHtml: Uint8Array;
  /** Every source → output path of the pipeline, for link rewriting. */
  transformed: [string, string][];
}

/** A helper's answer: for each document it rendered, its index in the list and the page. */
export type RenderShareAnswer = { index: number; page: RenderedPage }[];

export function renderShareInput(
  root: string,
  files: readonly ManifestFile[],
  claims: WorkClaims,
  allowHtmlOf: (file: ManifestFile) => boolean,
  transformed: ReadonlyMap<string, string>,
): RenderShareInput {
  return {
    root,
    files: packFiles(files),
    claims,
    allowHtml: Uint8Array.from(files, (file) => (allowHtmlOf(file) ? 1 : 0)),
    transformed: [...transformed],
  };
}

/**
 * The helper's side: take documents from the back until the list is done,
 * reading each with every verification check and rendering it. A document
 * that fails a check or cannot be rendered is left out of the answer: the
 * calling thread does it again and reports why.
 */
export function runJob(input: unknown): JobResult {
  const { root, files, claims, allowHtml, transformed } = input as RenderShareInput;
  const count = packedCount(files);
  if (count < 0 || allowHtml.length !== count) throw new Error("not a render share");
  // Ready to render before taking a document: loading markdown-it takes
  // 20-40 ms, and a document taken meanwhile would keep the calling thread
  // waiting for it once it has rendered all the others.
  if (!hasWork(claims)) return { value: [], transfer: [] };
  for (const flag of new Set(allowHtml)) prepareRenderer(flag === 1);
  const links = new Map(transformed);
  const checker = new FileChecker(root);
  const answer: RenderShareAnswer = [];
  for (let index = takeBack(claims); index !== undefined; index = takeBack(claims)) {
    if (index >= count) continue;
    const file = packedFile(files, index);
    const read = checker.read(file);
    if ("problem" in read) continue;
    try {
      const page = renderDocument(file, read.bytes, { allowHtml: allowHtml[index] === 1 }, links);
      answer.push({ index, page });
    } catch (error) {
      if (!(error instanceof DistributorError)) throw error;
    }
  }
  return { value: answer, transfer: answer.map(({ page }) => ownBuffer(page)) };
}

/** The page's buffer, to move to the caller: a copy when the page shares it (never, with TextEncoder). */
function ownBuffer(page: RenderedPage): ArrayBuffer {
  const { bytes } = page;
  if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) {
    page.bytes = bytes.slice();
  }
  return page.bytes.buffer as ArrayBuffer;
}

/**
 * The pages in helpers' answers, by index in the list of `count` documents;
 * anything malformed is ignored (that document is then rendered here).
 */
export function pagesOf(answers: readonly unknown[], count: number): Map<number, RenderedPage> {
  const pages = new Map<number, RenderedPage>();
  for (const answer of answers) {
    if (!Array.isArray(answer)) continue;
    for (const item of answer as unknown[]) {
      const { index, page } = (item ?? {}) as { index?: unknown; page?: Partial<RenderedPage> };
      if (
        Number.isInteger(index) &&
        (index as number) >= 0 &&
        (index as number) < count &&
        page?.bytes instanceof Uint8Array &&
        typeof page.sha256 === "string"
      ) {
        pages.set(index as number, { bytes: page.bytes, sha256: page.sha256 });
      }
    }
  }
  return pages;
}
