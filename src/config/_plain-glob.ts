/**
 * Matching for the globs most configs hold, in time linear in the glob times
 * the path: literal characters, `*` and `?`, after a leading `**` segment or
 * none. picomatch turns each `*` into a lazy `[^/]*?` that the regex engine
 * backtracks through: a glob with several `*` in one segment
 * (`*-*-*-*-*-*.csv`) took 17 s on one 205-character file name a producer
 * chose (a review, 2026-12-04), and minutes with one `*` more, in one
 * synchronous call that not even SIGTERM cuts short. Every other glob
 * (classes, braces, extglobs, escapes, negation) stays picomatch's; the
 * differential test in _plain-glob.test.ts holds the two to the same answers
 * on clean paths.
 */

/** Characters that give a glob more than literal text, `*`, `?` and `/`. */
const NOT_PLAIN = /[\\[\]{}()!+@|]/;

/**
 * A matcher for `glob` with picomatch's `dot: true` meaning on clean
 * manifest paths, or null when picomatch decides it: a glob with more than
 * literal text, `*` and `?` in its segments, or with a `**` segment other
 * than a leading one. (picomatch reads a later `**` in ways that depend on
 * the segment before it: `a/**` matches `a`; with `*` in place of `a` it does not.)
 */
export function plainGlobMatcher(glob: string): ((path: string) => boolean) | null {
  if (glob === "" || NOT_PLAIN.test(glob)) return null;
  const all = glob.split("/");
  // A leading "**/": any number of segments (none too) before the rest.
  const anyDepth = all.length > 1 && all[0] === "**";
  const segments = anyDepth ? all.slice(1) : all;
  // "./x", "x/", "a//b" and later "**" segments: picomatch reads them its own way.
  if (segments.some((s) => s === "" || s === "." || s === ".." || s === "**")) return null;
  return (path) => {
    const parts = path.split("/");
    const skip = parts.length - segments.length;
    if (skip < 0 || (skip > 0 && !anyDepth)) return false;
    for (let i = 0; i < segments.length; i++) {
      if (!matchSegment(segments[i] as string, parts[skip + i] as string)) return false;
    }
    return true;
  };
}

/**
 * How many lazy loops picomatch's regex for `glob` nests: one per `**`
 * segment and one per run of `*` in any other segment. A path the regex
 * does not match costs it about length^wildcards steps: at two (a `**`
 * segment and `*.md`, or `*-*.csv`) that stays small, since a `*` cannot
 * leave its segment; from three on it can take minutes, and the plain
 * matcher decides instead.
 */
export function wildcardLoops(glob: string): number {
  let loops = 0;
  for (const segment of glob.split("/")) {
    loops += segment === "**" ? 1 : (segment.match(/\*+/g)?.length ?? 0);
  }
  return loops;
}

/**
 * Whether one segment pattern (literal characters, `*` for any run, `?` for
 * one UTF-16 unit, as picomatch's regex without the `u` flag) matches one
 * path segment. The classic wildcard walk: on a mismatch it retries only
 * from the last `*`, so it takes at most pattern × text steps.
 */
function matchSegment(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const c = pattern[p];
    if (c === "*") {
      star = p++;
      resume = t;
    } else if (c !== undefined && (c === "?" || c === text[t])) {
      p++;
      t++;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
