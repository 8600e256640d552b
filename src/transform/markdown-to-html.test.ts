import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { seededBelow } from "../random.fixtures.js";
import {
  createRenderer,
  headingSlug,
  isSafeUrl,
  type RenderMarkdownOptions,
  renderMarkdownToHtml,
} from "./markdown-to-html.js";

function render(
  markdown: string | Uint8Array,
  options: Partial<RenderMarkdownOptions> = {},
): string {
  const input = typeof markdown === "string" ? Buffer.from(markdown, "utf8") : markdown;
  const bytes = renderMarkdownToHtml(input, {
    fileName: "docs/report.md",
    allowHtml: false,
    ...options,
  });
  return new TextDecoder().decode(bytes);
}

/** The rendered body only, without the document frame and stylesheet. */
function body(markdown: string, options: Partial<RenderMarkdownOptions> = {}): string {
  const html = render(markdown, options);
  const match = /<main>\n([\s\S]*)<\/main>/.exec(html);
  assert.ok(match, "document has a <main> element");
  return match[1] as string;
}

function title(html: string): string | undefined {
  return /<title>(.*)<\/title>/.exec(html)?.[1];
}

describe("renderMarkdownToHtml document", () => {
  test("is a complete HTML5 document with charset, viewport and inline style", () => {
    const html = render("# Report\n\nText.\n");
    assert.ok(html.startsWith('<!doctype html>\n<html lang="en">\n<head>\n'));
    assert.match(html, /<meta charset="utf-8">/);
    assert.match(html, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    assert.match(html, /<style>[^<]*img,video\{max-width:100%;height:auto\}/);
    assert.match(html, /prefers-color-scheme:dark/);
    assert.ok(html.endsWith("</html>\n"));
  });

  test("adds no scripts and no external requests", () => {
    const html = render("# T\n\n![local](a.png) [x](https://example.com)\n");
    assert.doesNotMatch(html, /<script/i);
    assert.doesNotMatch(html, /<link\b/i);
    assert.doesNotMatch(html, /@import|url\(/);
  });

  test("title is the text of the first level-1 heading, escaped", () => {
    const html = render("Intro\n\n## Sub\n\n# Q2 *report* `<x>` & more\n\n# Second\n");
    assert.equal(title(html), "Q2 report &lt;x&gt; &amp; more");
  });

  test("a setext level-1 heading counts", () => {
    assert.equal(title(render("Big Title\n=========\n")), "Big Title");
  });

  test("without a level-1 heading the title is the file name without extension", () => {
    assert.equal(title(render("## Only h2\n")), "report");
    assert.equal(title(render("text", { fileName: "a/b/notes.v2.markdown" })), "notes.v2");
    assert.equal(title(render("#\n", { fileName: "x.md" })), "x");
  });

  test("is deterministic byte for byte", () => {
    const input = Buffer.from("# A\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nhttps://example.com\n");
    const a = renderMarkdownToHtml(input, { fileName: "a.md", allowHtml: false });
    const b = renderMarkdownToHtml(input, { fileName: "a.md", allowHtml: false });
    assert.deepEqual(Buffer.from(a), Buffer.from(b));
  });

  test("a UTF-8 BOM is dropped", () => {
    const withBom = render(
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("# Héllo\n")]),
    );
    assert.equal(withBom, render("# Héllo\n"));
    assert.doesNotMatch(withBom, /\ufeff/);
  });

  test("invalid UTF-8 fails with transform_failed naming the file", () => {
    const latin1 = Buffer.from("# Caf\xe9\n", "latin1");
    assert.throws(
      () => render(latin1, { fileName: "docs/legacy.md" }),
      (error: unknown) =>
        error instanceof DistributorError &&
        error.code === "transform_failed" &&
        error.message.includes("docs/legacy.md is not valid UTF-8") &&
        error.paths[0] === "docs/legacy.md",
    );
  });

  test("lists nested as deep as the renderer follows keep every line after them", () => {
    // Ten levels: markdown-it's commonmark preset dropped the tenth item and
    // everything after it, without an error.
    const outline = (levels: number) =>
      Array.from({ length: levels }, (_, i) => `${"  ".repeat(i)}- item ${i + 1}`).join("\n");
    for (const levels of [10, 99]) {
      const html = body(`# Outline\n\n${outline(levels)}\n\n## Conclusion\n\nThe end.\n`);
      assert.match(html, new RegExp(`<li>item ${levels}</li>`), `${levels} levels`);
      assert.match(html, /<h2 id="conclusion">Conclusion<\/h2>\n<p>The end.<\/p>/);
    }
    const quotes = body(`${"> ".repeat(150)}deep\n\nafter\n`);
    assert.match(quotes, /deep/);
    assert.match(quotes, /<p>after<\/p>/);
  });

  test("nesting past what the renderer follows is transform_failed, never a document without its end", () => {
    for (const markdown of [
      `${Array.from({ length: 100 }, (_, i) => `${"  ".repeat(i)}- x`).join("\n")}\n\nafter\n`,
      `${"> ".repeat(200)}deep\n\nafter\n`,
    ]) {
      assert.throws(
        () => render(markdown, { fileName: "docs/outline.md" }),
        (error: unknown) =>
          error instanceof DistributorError &&
          error.code === "transform_failed" &&
          error.message.includes("docs/outline.md nests lists and block quotes deeper") &&
          error.paths[0] === "docs/outline.md",
      );
    }
  });

  test("a document too large for one string is said to be that, not bad UTF-8", () => {
    // One byte over what a JavaScript string holds on Node.js 20, all ASCII.
    const huge = Buffer.alloc(0x1fffffe8 + 1, 0x61);
    assert.throws(
      () => render(huge, { fileName: "huge.md" }),
      (error: unknown) =>
        error instanceof DistributorError &&
        error.code === "transform_failed" &&
        error.message.includes(`huge.md (${huge.byteLength} bytes) is too large to render`) &&
        error.paths[0] === "huge.md",
    );
  });

  test("a document cut inside a character fails alone; the next one starts afresh", () => {
    // One decoder serves every render: nothing of a failed input may carry over.
    const cut = Buffer.concat([Buffer.from("# Caf"), Buffer.from([0xc3])]);
    assert.throws(() => render(cut), DistributorError);
    assert.equal(title(render("# Next\n")), "Next");
  });
});

describe("renderMarkdownToHtml markdown", () => {
  test("renders GFM tables with alignment", () => {
    const html = body("| a | b |\n|:--|--:|\n| 1 | 2 |\n");
    assert.match(html, /<table>\n<thead>\n<tr>\n<th style="text-align:left">a<\/th>/);
    assert.match(html, /<td style="text-align:right">2<\/td>/);
  });

  test("renders strikethrough", () => {
    assert.equal(body("~~old~~ new\n"), "<p><s>old</s> new</p>\n");
  });

  test("autolinks URLs, www hosts and emails, but not file names", () => {
    const html = body("https://example.com/a www.example.org me@example.com and report.md\n");
    assert.match(html, /<a href="https:\/\/example.com\/a">https:\/\/example.com\/a<\/a>/);
    assert.match(html, /<a href="http:\/\/www.example.org">www.example.org<\/a>/);
    assert.match(html, /<a href="mailto:me@example.com">me@example.com<\/a>/);
    assert.match(html, / and report.md<\/p>/);
  });

  test("does not autolink protocol-relative //host paths, as GFM does not", () => {
    const html = body("Mirror at //cdn.example.com/lib and https://example.com/a\n");
    assert.match(
      html,
      /Mirror at \/\/cdn\.example\.com\/lib and <a href="https:\/\/example\.com\/a">/,
    );
  });

  test("the links-as-written shortcuts change no output", () => {
    // Pieces that make or almost make a link, in any case, escaped, encoded,
    // inside markup, or split across lines and table cells.
    const pieces = [
      "https://example.com/a",
      "https://example.com/a.",
      "http://x.test/p?q=(1)",
      "https://user:pw@host.test:8080/p#f",
      "https://",
      "http:x.test",
      "HTTP://EXAMPLE.ORG",
      "Ftp://files.test/x",
      "//cdn.test/lib",
      "mailto:me@example.com",
      "MAILTO:a@b.co",
      "www.example.org",
      "WwW.Example.Org/p?q=1",
      "www.",
      "me@example.com",
      "a@b",
      "@",
      ":",
      "//",
      "/",
      "report.md",
      "example.com",
      "localhost:8080",
      "1.2.3.4",
      "me&#64;example.com",
      "http&#58;//x.test",
      "me\\@x.test",
      "www\\.x.test",
      "<https://angle.test>",
      "[t](https://link.test)",
      "`www.code.test`",
      "*www.em.test*",
      "_me@em.test_",
      "javascript:alert(1)",
      "ｈｔｔｐ：／／wide.test",
      "me＠wide.test",
      "Note:",
      "word",
      "word.",
      "\n",
      "\n\n",
      " | ",
      "\n| a | b |\n|---|---|\n| ",
      "# ",
      "- ",
      "> ",
      "<b>www.html.test</b>",
      '<a href="x">a@b.test</a>',
    ];
    const next = seededBelow(20261130);
    for (const allowHtml of [false, true]) {
      const narrowed = createRenderer(allowHtml);
      const reference = createRenderer(allowHtml, false);
      const several = "see https://a.test/x and http://b.test, then https://a.test/x again";
      assert.equal(narrowed.render(several), reference.render(several));
      assert.equal(narrowed.render(several).match(/<a href/g)?.length, 3);
      let links = 0;
      for (let i = 0; i < 3000; i++) {
        let text = "";
        for (let k = 1 + next(8); k > 0; k--)
          text += `${pieces[next(pieces.length)]}${next(3) ? " " : ""}`;
        const html = narrowed.render(text);
        assert.equal(html, reference.render(text), `input: ${JSON.stringify(text)}`);
        if (html.includes("<a href")) links++;
      }
      assert.ok(links > 500, `the inputs make links (${links})`);
    }
  });

  test("the links-as-written shortcuts return what markdown-it's normalizeLink and normalizeLinkText return", () => {
    // URLs built from parts that keep or change under mdurl and punycode:
    // schemes in any case, user parts, hosts too long or with a label of 64,
    // punycode and non-ASCII hosts, empty and odd ports, kept and broken
    // escapes, characters that encoding changes, colons after the path.
    const schemes = ["", "", "http://", "https://", "HTTP://", "http:", "ftp://", "mailto:", "//"];
    const users = ["", "", "", "u@", "u:p@"];
    const hosts = [
      "",
      "example.com",
      "a-b.test",
      "EXAMPLE.org",
      "xn--bcher-kva.example",
      "sub.XN--p1ai",
      "bücher.example",
      `${"a".repeat(63)}.test`,
      `${"a".repeat(64)}.test`,
      `${"ab.".repeat(85)}test`,
      "host_x.test",
      "a+b.test",
      "[::1]",
      "1.2.3.4",
      "a..b",
      "-a.test",
      "page.md",
    ];
    const ports = ["", "", "", ":8080", ":", ":x"];
    const tails = [
      "",
      "/",
      "/a/b.md",
      "./x.md",
      "../y.md",
      "?q=1&r=(2)",
      "#frag",
      "#a:b",
      ":c",
      ";x",
      "'q'",
      "/a@b",
      "/%20",
      "/%2",
      "/%zz",
      "%",
      "/a b",
      "\\x",
      "/{x}|^`",
      "/ü",
      "/😀",
      " ",
      "\t",
      "!$*,~",
    ];
    const next = seededBelow(20261201);
    const pick = (list: readonly string[]) => list[next(list.length)] as string;
    const shortcut = createRenderer(false);
    const reference = createRenderer(false, false);
    let unchanged = 0;
    let textUnchanged = 0;
    const total = 20000;
    for (let i = 0; i < total; i++) {
      let url = pick(schemes) + pick(users) + pick(hosts) + pick(ports);
      for (let k = next(4); k > 0; k--) url += pick(tails);
      const expected = reference.normalizeLink(url);
      assert.equal(shortcut.normalizeLink(url), expected, `url: ${JSON.stringify(url)}`);
      if (expected === url) unchanged++;
      const text = reference.normalizeLinkText(url);
      assert.equal(shortcut.normalizeLinkText(url), text, `text of: ${JSON.stringify(url)}`);
      if (text === url) textUnchanged++;
    }
    // Both kinds are generated: links kept as written and links normalized.
    assert.ok(unchanged > total / 5 && unchanged < (total * 4) / 5, `${unchanged} kept`);
    assert.ok(
      textUnchanged > total / 5 && total - textUnchanged > total / 20,
      `${textUnchanged} texts kept`,
    );
  });

  test("raw HTML is escaped by default", () => {
    const html = body("<b>bold</b>\n\n<script>alert(1)</script>\n");
    assert.doesNotMatch(html, /<b>|<script>/);
    assert.match(html, /&lt;b&gt;bold&lt;\/b&gt;/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  });

  test("raw HTML passes through as written with allowHtml", () => {
    const html = body('<div class="note">hi <b>there</b></div>\n\ntext <kbd>K</kbd>\n', {
      allowHtml: true,
    });
    assert.match(html, /<div class="note">hi <b>there<\/b><\/div>/);
    assert.match(html, /text <kbd>K<\/kbd>/);
  });
});

describe("renderMarkdownToHtml heading ids", () => {
  test("headings get GitHub-style ids so fragment links land", () => {
    const html = body("# Report\n\n## Data sources & *methods*\n\n### Größe 2026\n");
    assert.match(html, /<h1 id="report">Report<\/h1>/);
    assert.match(html, /<h2 id="data-sources--methods">/);
    assert.match(html, /<h3 id="größe-2026">/);
  });

  test("repeated headings get numbered ids", () => {
    const html = body("## Notes\n\n## Notes\n\n## Notes\n");
    assert.deepEqual(
      [...html.matchAll(/id="([^"]+)"/g)].map((m) => m[1]),
      ["notes", "notes-1", "notes-2"],
    );
  });

  test("no two headings share an id: a repeat skips an id another heading took", () => {
    const html = body("## Example\n\n## Example\n\n## Example 1\n\n## Example 1\n");
    assert.deepEqual(
      [...html.matchAll(/id="([^"]+)"/g)].map((m) => m[1]),
      ["example", "example-1", "example-1-1", "example-1-2"],
    );
    const reversed = body("## Example 1\n\n## Example\n\n## Example\n");
    assert.deepEqual(
      [...reversed.matchAll(/id="([^"]+)"/g)].map((m) => m[1]),
      ["example-1", "example", "example-2"],
    );
  });

  test("ids do not carry over between documents", () => {
    body("## Notes\n");
    assert.match(body("## Notes\n"), /id="notes"/);
  });

  test("headingSlug drops punctuation and keeps letters of any script", () => {
    assert.equal(headingSlug("  Hello, World!  "), "hello-world");
    assert.equal(headingSlug("snake_case and-dash"), "snake_case-and-dash");
    // As GitHub's slugger: other numbers go, letter numbers and alphabetic symbols stay.
    assert.equal(headingSlug("Area in m²"), "area-in-m");
    assert.equal(headingSlug("½ cup"), "-cup");
    assert.equal(headingSlug("Ⅻ chapters"), "ⅻ-chapters");
    assert.equal(headingSlug("Ⓐ note"), "ⓐ-note");
    assert.equal(headingSlug("Größe 2026"), "größe-2026");
  });
});

describe("renderMarkdownToHtml dangerous URLs", () => {
  const cases = [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](VBScript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](data:image/png;base64,AAAA)",
    "![x](data:image/png;base64,AAAA)",
    "![x](javascript:alert(1))",
    "[x](&#x6A;avascript:alert(1))",
    "[x](java&#115;cript:alert(1))",
    "[x](javascript&colon;alert(1))",
    "[x](<java\tscript:alert(1)>)",
    "[x](<\u0001javascript:alert(1)>)",
    "<javascript:alert(1)>",
    "<DATA:text/html,hi>",
    "[x][ref]\n\n[ref]: javascript:alert(1)",
  ];
  for (const markdown of cases) {
    test(`not a live link: ${JSON.stringify(markdown)}`, () => {
      const html = body(`${markdown}\n`, { allowHtml: false });
      assert.doesNotMatch(html, /<a |<img /, html);
    });
  }

  test("safe URLs stay live", () => {
    const html = body(
      "[a](https://x.test/) [b](page.html) [c](#top) [d](mailto:a@b.test) ![i](i.png)\n",
    );
    assert.equal((html.match(/<a href=/g) ?? []).length, 4);
    assert.match(html, /<img src="i.png" alt="i">|<img src="i.png" alt="i" \/>/);
  });

  test("isSafeUrl sees through case, whitespace, controls and percent-encoding", () => {
    for (const url of [
      "JAVASCRIPT:x",
      " javascript:x",
      "java\nscript:x",
      "\u0000data:x",
      "%6Aavascript:x",
      "javascript%3Ax",
      "data%3atext/html,x",
      "file:///etc/passwd",
      "javascript:http://x.test",
    ]) {
      assert.equal(isSafeUrl(url), false, url);
    }
    for (const url of [
      "https://a.test",
      "a/b.html",
      "#x",
      "mailto:a@b.test",
      "./javascript.html",
      "%zz",
      "http:javascript:alert(1)",
      "https://x.test/%zz",
      " http:x",
    ]) {
      assert.equal(isSafeUrl(url), true, url);
    }
  });
});

describe("renderMarkdownToHtml link rewriting", () => {
  const rewriteLink = (href: string): string | undefined =>
    href.startsWith("other.md") ? `other.html${href.slice("other.md".length)}` : undefined;

  test("the rewriter replaces link hrefs it returns a value for", () => {
    const html = body("[a](other.md#part) [b](keep.md) ![c](other.md)\n", { rewriteLink });
    assert.match(html, /<a href="other.html#part">a<\/a>/);
    assert.match(html, /<a href="keep.md">b<\/a>/);
    // Images are never rewritten.
    assert.match(html, /<img src="other.md"/);
  });

  test("the rewriter state does not leak into a later render without one", () => {
    body("[a](other.md)\n", { rewriteLink });
    assert.match(body("[a](other.md)\n"), /<a href="other.md">/);
  });
});
