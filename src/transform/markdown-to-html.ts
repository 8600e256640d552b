/**
 * The `markdown_to_html` transform (SPEC §4): CommonMark + GFM tables,
 * strikethrough and autolinks, rendered by markdown-it into a complete,
 * self-contained HTML5 document. Pure and deterministic: the same bytes and
 * options always give the same output bytes.
 *
 * Safety: raw HTML is escaped unless `allowHtml`. Links and images whose URL uses
 * `javascript:`, `vbscript:`, `data:` (or `file:`) are never emitted as live links,
 * however they are spelt (case, entities, embedded whitespace or control
 * characters). With `allowHtml` the raw HTML of the author passes through as
 * written, by design — the tool adds no scripts, but it does not sanitize the
 * author's own markup.
 */
import { createRequire } from "node:module";
import type MarkdownIt from "markdown-it";
import type Token from "markdown-it/lib/token.mjs";
import { DistributorError } from "../errors.js";
import { createGfmLinkifier } from "./_gfm-autolinks.js";
import { DOCUMENT_STYLE } from "./style.js";

export interface RenderMarkdownOptions {
  /** Manifest path of the input; names it in errors and gives the fallback title. */
  fileName: string;
  /** Pass raw HTML through as written (default in config: false, escape it). */
  allowHtml: boolean;
  /**
   * Called with each link's href (already percent-encoded by markdown-it); a
   * returned string replaces it, `undefined` keeps it. Images are not rewritten.
   */
  rewriteLink?: (href: string) => string | undefined;
}

interface RenderEnv {
  rewriteLink?: (href: string) => string | undefined;
}

// ASCII whitespace and C0 controls: browsers ignore or strip them inside a scheme.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to strip them
const IGNORED_IN_SCHEME = /[\u0000-\u0020\u007f]+/g;
const FORBIDDEN_SCHEME = /^(javascript|vbscript|data|file):/;

/** False for URLs that would run code or embed content: javascript:, vbscript:, data:, file:. */
export function isSafeUrl(url: string): boolean {
  // A scheme needs a colon, written or percent-encoded: most links (relative
  // ones) have neither and need no further look. One that starts with
  // `http:` or `https:` as written has that scheme, however the rest is
  // spelt (nothing before its colon to strip or decode).
  if (!url.includes(":") && !url.includes("%")) return true;
  if (url.startsWith("https:") || url.startsWith("http:")) return true;
  const squeezed = url.replace(IGNORED_IN_SCHEME, "").toLowerCase();
  if (FORBIDDEN_SCHEME.test(squeezed)) return false;
  let decoded = squeezed;
  try {
    decoded = decodeURIComponent(squeezed).replace(IGNORED_IN_SCHEME, "").toLowerCase();
  } catch {
    // Malformed percent-encoding: the undecoded form was checked above.
  }
  return !FORBIDDEN_SCHEME.test(decoded);
}

/**
 * Characters that markdown-it's link encoding (mdurl's `encode` with its
 * default set) keeps as they are, and `%` only as the start of an escape
 * it keeps. No space, no `:` (see below) and no non-ASCII character.
 */
const KEPT = String.raw`(?:[A-Za-z0-9;/?@&=+$,\-_.!~*'()#]|%[0-9A-Fa-f]{2})`;
/**
 * A relative link (`page.md#part`, `../a/b.md?x=1`): no colon, so no
 * scheme, and not `//`, so no host. mdurl's parse then splits it into path,
 * search and fragment, and its format joins them back as they were.
 */
const RELATIVE_AS_WRITTEN = new RegExp(`^(?!//)${KEPT}*$`);
/**
 * An `http:` or `https:` link whose host mdurl's parse keeps whole (labels
 * of letters, digits and hyphens; an optional port of digits; then the end
 * or `/`, `?`, `#`) and the ASCII host that punycode's `toASCII` returns as
 * it is. The host pattern has no `@`, so there is no user part to split
 * off (mdurl looks for one only before the host's end). The host's lengths
 * are checked apart (hostLengthsKept).
 */
const HTTP_AS_WRITTEN = new RegExp(
  String.raw`^https?://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)(?::[0-9]+)?(?:[/?#]${KEPT}*)?$`,
);

/** mdurl drops a host longer than 255 characters; a label of 64 or more it splits off. */
function hostLengthsKept(host: string): boolean {
  return host.length <= 255 && host.split(".").every((label) => label.length <= 63);
}

/**
 * Links that markdown-it's `normalizeLink` (mdurl parse, punycode, format,
 * encode: 5 % of rendering the benchmark's 1,000 documents) returns exactly
 * as written are returned at once; every other link takes the full path.
 * Most links are relative cross-links or plain `https://host/path`.
 *
 * The same for `normalizeLinkText`, which gives an autolink its text (mdurl
 * parse, punycode to Unicode, format, decode: 4 % of the CPU of rendering
 * those documents, 2026-12-03): an `http:` or `https:` link kept whole by
 * parse and format, with no `%` to decode and no `xn--` label to turn into
 * Unicode, is its own text. The tests compare both with markdown-it's own on
 * generated links.
 */
function linksAsWrittenShortcut(md: MarkdownIt): void {
  const { normalizeLink, normalizeLinkText } = md;
  md.normalizeLink = (url) => {
    if (RELATIVE_AS_WRITTEN.test(url)) return url;
    const http = HTTP_AS_WRITTEN.exec(url);
    if (http !== null && hostLengthsKept(http[1] as string)) return url;
    return normalizeLink(url);
  };
  md.normalizeLinkText = (url) => {
    const http = HTTP_AS_WRITTEN.exec(url);
    if (http === null || url.includes("%")) return normalizeLinkText(url);
    const host = http[1] as string;
    return hostLengthsKept(host) && !PUNYCODE_LABEL.test(host) ? url : normalizeLinkText(url);
  };
}
const PUNYCODE_LABEL = /(?:^|\.)xn--/i;

/**
 * GitHub-style heading slug: lowercase, punctuation dropped, spaces become
 * hyphens. What is kept is what GitHub's slugger (github-slugger) keeps:
 * letters, marks, decimal and letter numbers, connector punctuation (`_`),
 * anything alphabetic (a circled letter), `-` and the space. Other numbers
 * (`²`, `½`), other punctuation and symbols go.
 */
export function headingSlug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\p{Alphabetic} -]/gu, "")
    .replace(/ /g, "-");
}

/**
 * How deep markdown-it's tokens may nest: a list item inside a list counts
 * two, a block quote one. Past it markdown-it drops the rest of the document
 * without a word; the commonmark preset's 20 (ten nested lists) lost a
 * review's ten-level outline and everything after it. CommonMark sets no
 * limit; a document that reaches this one is refused (reachesNestingLimit),
 * not published without its end.
 */
const MAX_NESTING = 200;

/** Give each heading an id (deduplicated with -1, -2, ...) so `page.html#section` links land. */
function headingIds(md: MarkdownIt): void {
  md.core.ruler.push("heading_ids", (state) => {
    // GitHub's slugger: a slug taken, by a repeat or by a heading whose own
    // text ends in "-1", gets the next free -N of its base, so that no two
    // headings share an id ("Example", "Example", "Example 1" give example,
    // example-1, example-1-1).
    const repeats = new Map<string, number>();
    state.tokens.forEach((token, index) => {
      if (token.type !== "heading_open" || token.attrGet("id") !== null) return;
      const base = headingSlug(inlineText(state.tokens[index + 1]?.children ?? []));
      if (base === "") return;
      let slug = base;
      while (repeats.has(slug)) {
        const count = (repeats.get(base) ?? 0) + 1;
        repeats.set(base, count);
        slug = `${base}-${count}`;
      }
      repeats.set(slug, 0);
      token.attrSet("id", slug);
    });
  });
}

/**
 * markdown-it, loaded on the first render: a rerun whose documents are all
 * in the render cache renders nothing, and loading it is a measurable part
 * of a run's start-up. It is pinned at 14.3.3: 15.0.3's published build
 * renders M's documents about a third slower, each class field an
 * `Object.defineProperty` call (docs/performance.md, the end of "Tried and
 * dropped", has the numbers and what the port needs). Its CommonJS build
 * (the same code, bundled in one file) loads in about a third of the time
 * of its ES modules (21 ms against 60 ms).
 */
let MarkdownItClass: typeof MarkdownIt | undefined;

/**
 * A markdown-it instance set up as this transform renders. Exported for the
 * test that compares it with one without the links-as-written shortcuts
 * (`shortcuts: false`: markdown-it's own `normalizeLink` and
 * `normalizeLinkText`).
 */
export function createRenderer(allowHtml: boolean, shortcuts = true): MarkdownIt {
  MarkdownItClass ??= createRequire(import.meta.url)("markdown-it") as typeof MarkdownIt;
  const md = new MarkdownItClass("commonmark", { html: allowHtml, linkify: true });
  // An option markdown-it reads (both parsers) that its types leave out.
  Object.assign(md.options, { maxNesting: MAX_NESTING });
  md.enable(["table", "strikethrough", "linkify"]);
  // The four methods markdown-it's linkify rules call find GFM's autolinks,
  // not linkify-it's (_gfm-autolinks.ts says why).
  Object.assign(md.linkify, createGfmLinkifier());
  if (shortcuts) linksAsWrittenShortcut(md);
  headingIds(md);
  md.validateLink = isSafeUrl;
  md.renderer.rules.link_open = (tokens, idx, options, env: RenderEnv, self) => {
    const token = tokens[idx] as Token;
    const href = token.attrGet("href");
    const rewritten = href === null ? undefined : env.rewriteLink?.(href);
    if (rewritten !== undefined) token.attrSet("href", rewritten);
    return self.renderToken(tokens, idx, options);
  };
  return md;
}

// One instance per setting: markdown-it instances are reusable and rendering is synchronous.
const renderers = new Map<boolean, MarkdownIt>();

function rendererFor(allowHtml: boolean): MarkdownIt {
  let md = renderers.get(allowHtml);
  if (!md) {
    md = createRenderer(allowHtml);
    renderers.set(allowHtml, md);
  }
  return md;
}

/**
 * Load markdown-it and set up the renderer for `allowHtml` now, rather than
 * in the first render: for a helper thread, which should take a document
 * only once it can render it at once (_render-job.ts).
 */
export function prepareRenderer(allowHtml: boolean): void {
  rendererFor(allowHtml);
}

function inlineText(children: readonly Token[]): string {
  let text = "";
  for (const child of children) {
    if (child.type === "text" || child.type === "code_inline") text += child.content;
    else if (child.type === "image") text += inlineText(child.children ?? []);
    else if (child.type === "softbreak" || child.type === "hardbreak") text += " ";
  }
  return text;
}

/** Text of the first level-1 heading, whitespace collapsed; undefined when there is none or it is empty. */
function firstH1Text(tokens: readonly Token[]): string | undefined {
  const index = tokens.findIndex((t) => t.type === "heading_open" && t.tag === "h1");
  if (index < 0) return undefined;
  const text = inlineText(tokens[index + 1]?.children ?? [])
    .replace(/\s+/g, " ")
    .trim();
  return text === "" ? undefined : text;
}

function fallbackTitle(fileName: string): string {
  const base = fileName.slice(fileName.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base;
}

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

// One of each for every render: decode() without `stream` starts afresh each call.
// The decoder drops a leading BOM by default (ignoreBOM: false).
const UTF8_DECODER = new TextDecoder("utf-8", { fatal: true });
const UTF8_ENCODER = new TextEncoder();

function decodeUtf8(input: Uint8Array, fileName: string): string {
  try {
    return UTF8_DECODER.decode(input);
  } catch (cause) {
    // Anything but bad bytes is a document too large for one JavaScript
    // string (about 512 MiB on Node.js 20), which no Markdown library renders.
    const badBytes = (cause as { code?: string }).code === "ERR_ENCODING_INVALID_ENCODED_DATA";
    throw new DistributorError(
      "transform_failed",
      badBytes
        ? `markdown_to_html: ${fileName} is not valid UTF-8 text. Save it as UTF-8, or exclude it from the transform's include.`
        : `markdown_to_html: ${fileName} (${input.byteLength} bytes) is too large to render as one document. Split it, or exclude it from the transform's include.`,
      { paths: [fileName], cause },
    );
  }
}

/**
 * Whether markdown-it dropped text at MAX_NESTING: it opened a container
 * (a block quote, a list or a list item) at the last level it allows, whose
 * blocks would be read one level deeper, where it reads nothing more of the
 * document. A paragraph or a heading holds inline text, read either way.
 */
function reachesNestingLimit(tokens: readonly Token[]): boolean {
  for (const token of tokens) {
    if (token.level < MAX_NESTING - 1 || token.nesting !== 1) continue;
    if (token.type !== "paragraph_open" && token.type !== "heading_open") return true;
  }
  return false;
}

/**
 * Render Markdown bytes into a complete HTML5 document (UTF-8 bytes): doctype,
 * `<html lang="en">`, charset and viewport meta, `<title>` from the first level-1
 * heading (else the file name without extension), an inline stylesheet for desktop
 * and phone; no external requests and no scripts added. Headings get GitHub-style
 * ids (`## Data sources` → `id="data-sources"`) so fragment links land. Deterministic.
 *
 * @throws DistributorError `transform_failed` when `input` is not valid UTF-8,
 *   or nests deeper than the renderer follows (MAX_NESTING).
 */
export function renderMarkdownToHtml(
  input: Uint8Array,
  options: RenderMarkdownOptions,
): Uint8Array {
  const source = decodeUtf8(input, options.fileName);
  const md = rendererFor(options.allowHtml);
  const env: RenderEnv = options.rewriteLink ? { rewriteLink: options.rewriteLink } : {};
  const tokens = md.parse(source, env);
  if (reachesNestingLimit(tokens)) {
    throw new DistributorError(
      "transform_failed",
      `markdown_to_html: ${options.fileName} nests lists and block quotes deeper than the renderer follows (about ${MAX_NESTING / 2} levels of lists, ${MAX_NESTING} of block quotes); the rest of the document would be lost. Nest less deeply, or exclude it from the transform's include.`,
      { paths: [options.fileName] },
    );
  }
  const title = firstH1Text(tokens) ?? fallbackTitle(options.fileName);
  const body = md.renderer.render(tokens, md.options, env);
  const html = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${DOCUMENT_STYLE}</style>`,
    "</head>",
    "<body>",
    "<main>",
    `${body}</main>`,
    "</body>",
    "</html>",
    "",
  ].join("\n");
  return UTF8_ENCODER.encode(html);
}
