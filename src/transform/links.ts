/**
 * Paths of `markdown_to_html` outputs and the rewriting of links between
 * Markdown files of one bundle, so that a published `report.html` links to
 * `methodology.html`, not to the Markdown file it came from.
 */
import path from "node:path";

const MARKDOWN_EXTENSION = /\.(md|markdown)$/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * The output path of `markdown_to_html` for a manifest path: a final `.md` or
 * `.markdown` extension (any case) becomes `.html`; any other name (a transform
 * whose include matches e.g. `*.txt`) gets `.html` appended, so it never lands on
 * its own source path.
 */
export function derivedHtmlPath(manifestPath: string): string {
  return MARKDOWN_EXTENSION.test(manifestPath)
    ? manifestPath.replace(MARKDOWN_EXTENSION, ".html")
    : `${manifestPath}.html`;
}

function decodePath(encoded: string): string | undefined {
  // Without a "%" there is nothing to decode (and nothing to fail on).
  if (!encoded.includes("%")) return encoded;
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

/**
 * The manifest path a relative link from a document in folder `fromDir`
 * points at, or undefined when it leaves the bundle. `path.posix.join`
 * normalizes what it joins.
 */
function resolveInBundle(fromDir: string, linkPath: string): string | undefined {
  const resolved = path.posix.join(fromDir, linkPath);
  if (resolved === ".." || resolved.startsWith("../") || resolved.startsWith("/")) return undefined;
  return resolved;
}

/**
 * A link rewriter for the document at manifest path `fromPath`. `transformed` maps
 * each manifest path that this pipeline transforms to its output path. Relative
 * links to those files are rewritten to the output, keeping the author's relative
 * form, `?query` and `#fragment`; absolute URLs, scheme links, root-relative
 * links, pure fragments, links to other files and links leaving the bundle are
 * left alone (the rewriter returns undefined).
 */
export function createLinkRewriter(
  fromPath: string,
  transformed: ReadonlyMap<string, string>,
): (href: string) => string | undefined {
  const fromDir = path.posix.dirname(fromPath);
  return (href) => {
    if (SCHEME.test(href) || href.startsWith("/")) return undefined;
    const cut = href.search(/[?#]/);
    const linkPath = cut < 0 ? href : href.slice(0, cut);
    const suffix = cut < 0 ? "" : href.slice(cut);
    const decoded = linkPath === "" ? undefined : decodePath(linkPath);
    if (decoded === undefined) return undefined;
    const target = resolveInBundle(fromDir, decoded);
    const output = target === undefined ? undefined : transformed.get(target);
    if (output === undefined) return undefined;
    const lands = (candidate: string) =>
      resolveInBundle(fromDir, decodePath(candidate) ?? "") === output;
    const rewritten = derivedHtmlPath(linkPath);
    if (lands(rewritten)) return rewritten + suffix;
    // The extension was percent-encoded in the href (`a%2Emd`), which the
    // mirrored edit misses: the last segment is written anew, encoded. Left
    // as it was, the link pointed at a Markdown file that is not published.
    const slash = linkPath.lastIndexOf("/");
    const renamed = linkPath.slice(0, slash + 1) + encodeURIComponent(path.posix.basename(output));
    return lands(renamed) ? renamed + suffix : undefined;
  };
}
