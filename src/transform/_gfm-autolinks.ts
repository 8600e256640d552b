/**
 * GFM's extended autolinks (GFM spec 0.29, "Autolinks (extension)"), which
 * SPEC §4 asks for, for markdown-it's two linkify rules in place of
 * linkify-it.
 *
 * Why not linkify-it: it finds links by its own, looser grammar, not GFM's.
 * It linked `me@corp.internal` only when the last label was on its list of
 * top-level domains; it kept a trailing `_` or `~` in a URL, so
 * `~~https://example.com~~` came out as a link to `https://example.com~~`
 * and no strikethrough; it cut `www.x.org/a?q=(b))+c` at the first
 * unbalanced parenthesis. Set up for GFM, its scan of `www.` took time
 * growing with the square of a run's length (64 KB of "www." took 12 s).
 * And it cost about a fifth of rendering (docs/performance.md, case 7). No maintained markdown-it plugin does GFM's
 * autolinks; the grammar is small and exactly specified, so it is here.
 *
 * Where the spec is silent or loose, this follows cmark-gfm, GitHub's own
 * implementation: a URL's host needs no period (`http://localhost:8080/`),
 * `ftp://` links, a trailing `'`, `"` or `;` is dropped, letters of any
 * script count as alphanumeric in a host, and `mailto:` before an address
 * is part of its link.
 *
 * One difference: markdown-it finds `www.` and e-mail links in the text
 * between other inline markup, after it is parsed, so a `www.` right after
 * a link, code span or HTML tag counts as at the start of a line, where
 * cmark-gfm looks at the character before it.
 */

/** A link found in a text, in the shape of linkify-it's `Match`, which markdown-it reads. */
export interface Autolink {
  /** `http:`, `https:`, `ftp:`, `mailto:` for addresses, `""` for `www.` links. */
  schema: string;
  index: number;
  lastIndex: number;
  raw: string;
  text: string;
  url: string;
}

/**
 * The four methods of linkify-it that markdown-it 14's linkify rules call
 * (rules_core/linkify and rules_inline/linkify): `pretest` on a whole
 * paragraph, heading or table cell, `test` and then `match` on each text
 * in it, and `matchAtStart` where the inline rule has found `://`.
 */
export interface Linkifier {
  pretest(text: string): boolean;
  test(text: string): boolean;
  match(text: string): Autolink[] | null;
  matchAtStart(text: string): Autolink | null;
}

/** Where a link may start: a URL's scheme, `www.`, or an address's `@` (then scanned back). */
const TRIGGER = /(?:https?|ftp):\/\/|www\.|@/gi;
const URL_AT_START = /^(?:https?|ftp):\/\//i;
/** A host: labels of letters (any script), digits, `_` and `-`, joined by single periods. */
const DOMAIN = /[\p{L}\p{N}\p{M}_-]+(?:\.[\p{L}\p{N}\p{M}_-]+)*/uy;
/** An address's domain: ASCII labels as above, at least two. */
const EMAIL_DOMAIN = /[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+/y;
/** What may follow a host: anything up to whitespace or `<`. */
const PATH = /[^\s<]*/y;
/** Characters of an address's local part. */
const LOCAL = /[A-Za-z0-9.+_-]/;
/** Left out at a link's end, one at a time (the spec's list, and cmark-gfm's quotes). */
const TRAILING = new Set(["?", "!", ".", ",", ":", "*", "_", "~", "'", '"']);
/** Where a `www.` link may start after: whitespace, or `*`, `_`, `~`, `(`. */
const BEFORE_WWW = /[\s*_~(]/;
const ASCII_LETTER = /[A-Za-z]/;
const ALPHANUMERIC = /[A-Za-z0-9]/;
const MAILTO = "mailto:";

/** How many characters of `text`, from `at`, `pattern` (sticky) matches. */
function spanAt(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.exec(text)?.[0].length ?? 0;
}

/** GFM: no `_` in the last two labels of a host. */
function underscoresAllowed(host: string): boolean {
  const labels = host.split(".");
  return !labels.slice(-2).some((label) => label.includes("_"));
}

/**
 * GFM's "extended autolink path validation": where a link found from
 * `start` to `end` really ends. Trailing punctuation goes; a trailing `)`
 * goes while the link has more `)` than `(`; a trailing entity-like
 * `&name;` goes whole.
 */
function trimmedEnd(text: string, start: number, end: number): number {
  let opening = 0;
  let closing = 0;
  for (let i = start; i < end; i++) {
    const c = text[i];
    if (c === "(") opening++;
    else if (c === ")") closing++;
  }
  while (end > start) {
    const c = text[end - 1] as string;
    if (c === ")") {
      if (closing <= opening) break;
      closing--;
      end--;
    } else if (TRAILING.has(c)) {
      end--;
    } else if (c === ";") {
      let k = end - 2;
      while (k > start && ALPHANUMERIC.test(text[k] as string)) k--;
      end = k < end - 2 && text[k] === "&" ? k : end - 1;
    } else {
      break;
    }
  }
  return end;
}

/** A `www.` or URL link whose host starts at `hostStart`, or undefined. */
function hostLink(
  text: string,
  start: number,
  hostStart: number,
  schema: string,
): Autolink | undefined {
  const hostEnd = hostStart + spanAt(DOMAIN, text, hostStart);
  if (hostEnd === hostStart) return undefined;
  // A `www.` link's host is the whole of `www.example.org`.
  const host = text.slice(schema === "" ? start : hostStart, hostEnd);
  if (!underscoresAllowed(host)) return undefined;
  const end = trimmedEnd(text, start, hostEnd + spanAt(PATH, text, hostEnd));
  if (end <= hostStart) return undefined;
  const raw = text.slice(start, end);
  const url = schema === "" ? `http://${raw}` : raw;
  return { schema, index: start, lastIndex: end, raw, text: raw, url };
}

/** A URL link at `at` (its scheme is `schemeLength` long, `://` included). */
function urlAt(text: string, at: number, schemeLength: number): Autolink | undefined {
  // `foohttp://` is no link: a scheme must not follow a letter.
  if (at > 0 && ASCII_LETTER.test(text[at - 1] as string)) return undefined;
  const schema = text.slice(at, at + schemeLength - 2).toLowerCase();
  return hostLink(text, at, at + schemeLength, schema);
}

function wwwAt(text: string, at: number): Autolink | undefined {
  if (at > 0 && !BEFORE_WWW.test(text[at - 1] as string)) return undefined;
  return hostLink(text, at, at + 4, "");
}

/** An e-mail link around the `@` at `at`, whose local part starts no earlier than `floor`. */
function emailAt(text: string, at: number, floor: number): Autolink | undefined {
  let start = at;
  while (start > floor && LOCAL.test(text[start - 1] as string)) start--;
  if (start === at) return undefined;
  // cmark-gfm: not right after a slash (`http://a@b.co` is no address).
  if (start > floor && text[start - 1] === "/") return undefined;
  const domainLength = spanAt(EMAIL_DOMAIN, text, at + 1);
  if (domainLength === 0) return undefined;
  const end = at + 1 + domainLength;
  const last = text[end - 1];
  if (last === "-" || last === "_") return undefined;
  const prefixed =
    start - floor >= MAILTO.length &&
    text.slice(start - MAILTO.length, start).toLowerCase() === MAILTO;
  if (prefixed) start -= MAILTO.length;
  const raw = text.slice(start, end);
  const url = prefixed ? raw : `${MAILTO}${raw}`;
  return { schema: MAILTO, index: start, lastIndex: end, raw, text: raw, url };
}

/** Every GFM autolink in `text`, in order, none overlapping. */
export function findAutolinks(text: string): Autolink[] {
  const links: Autolink[] = [];
  let floor = 0;
  TRIGGER.lastIndex = 0;
  for (let found = TRIGGER.exec(text); found !== null; found = TRIGGER.exec(text)) {
    const at = found.index;
    const first = text[at];
    const link =
      first === "@"
        ? emailAt(text, at, floor)
        : first === "w" || first === "W"
          ? wwwAt(text, at)
          : urlAt(text, at, found[0].length);
    if (link === undefined) {
      TRIGGER.lastIndex = at + 1;
      continue;
    }
    links.push(link);
    floor = link.lastIndex;
    TRIGGER.lastIndex = link.lastIndex;
  }
  return links;
}

/**
 * Whether a link may be in `text` at all: every kind needs `://`, `www.`
 * (any case) or `@`. Most prose has none, and markdown-it asks this of
 * every paragraph before it looks at the texts in it.
 */
function mayHoldLink(text: string): boolean {
  return text.includes("://") || text.includes("@") || WWW.test(text);
}
const WWW = /www\./i;

/**
 * The linkifier markdown-it's rules call. markdown-it asks `test` and then
 * `match` of the same text, so the links `test` found are kept for it.
 */
export function createGfmLinkifier(): Linkifier {
  let lastText: string | undefined;
  let lastLinks: Autolink[] = [];
  const linksIn = (text: string): Autolink[] => {
    if (text !== lastText) {
      lastLinks = mayHoldLink(text) ? findAutolinks(text) : [];
      lastText = text;
    }
    return lastLinks;
  };
  return {
    pretest: mayHoldLink,
    test: (text) => linksIn(text).length > 0,
    match: (text) => {
      const links = linksIn(text);
      return links.length > 0 ? links : null;
    },
    matchAtStart: (text) => {
      const scheme = URL_AT_START.exec(text);
      return scheme === null ? null : (urlAt(text, 0, scheme[0].length) ?? null);
    },
  };
}
