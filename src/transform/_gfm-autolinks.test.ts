import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededBelow } from "../random.fixtures.js";
import { findAutolinks } from "./_gfm-autolinks.js";
import { createRenderer } from "./markdown-to-html.js";

const md = createRenderer(false);

/** Each Markdown text renders inline as the HTML paired with it. */
function assertInline(cases: ReadonlyArray<readonly [string, string]>): void {
  for (const [markdown, html] of cases) {
    assert.equal(md.renderInline(markdown), html, `input: ${JSON.stringify(markdown)}`);
  }
}

/** The examples of GFM spec 0.29, "Autolinks (extension)": input, then the HTML it asks for. */
const SPEC_EXAMPLES: ReadonlyArray<readonly [string, string]> = [
  ["www.commonmark.org\n", '<p><a href="http://www.commonmark.org">www.commonmark.org</a></p>\n'],
  [
    "Visit www.commonmark.org/help for more information.\n",
    '<p>Visit <a href="http://www.commonmark.org/help">www.commonmark.org/help</a> for more information.</p>\n',
  ],
  [
    "Visit www.commonmark.org.\n\nVisit www.commonmark.org/a.b.\n",
    '<p>Visit <a href="http://www.commonmark.org">www.commonmark.org</a>.</p>\n' +
      '<p>Visit <a href="http://www.commonmark.org/a.b">www.commonmark.org/a.b</a>.</p>\n',
  ],
  [
    "www.google.com/search?q=Markup+(business)\n\nwww.google.com/search?q=Markup+(business)))\n\n" +
      "(www.google.com/search?q=Markup+(business))\n\n(www.google.com/search?q=Markup+(business)\n",
    '<p><a href="http://www.google.com/search?q=Markup+(business)">www.google.com/search?q=Markup+(business)</a></p>\n' +
      '<p><a href="http://www.google.com/search?q=Markup+(business)">www.google.com/search?q=Markup+(business)</a>))</p>\n' +
      '<p>(<a href="http://www.google.com/search?q=Markup+(business)">www.google.com/search?q=Markup+(business)</a>)</p>\n' +
      '<p>(<a href="http://www.google.com/search?q=Markup+(business)">www.google.com/search?q=Markup+(business)</a></p>\n',
  ],
  [
    "www.google.com/search?q=(business))+ok\n",
    '<p><a href="http://www.google.com/search?q=(business))+ok">www.google.com/search?q=(business))+ok</a></p>\n',
  ],
  [
    "www.google.com/search?q=commonmark&hl=en\n\nwww.google.com/search?q=commonmark&hl;\n",
    '<p><a href="http://www.google.com/search?q=commonmark&amp;hl=en">www.google.com/search?q=commonmark&amp;hl=en</a></p>\n' +
      '<p><a href="http://www.google.com/search?q=commonmark">www.google.com/search?q=commonmark</a>&amp;hl;</p>\n',
  ],
  [
    "www.commonmark.org/he<lp\n",
    '<p><a href="http://www.commonmark.org/he">www.commonmark.org/he</a>&lt;lp</p>\n',
  ],
  [
    "http://commonmark.org\n\n(Visit https://encrypted.google.com/search?q=Markup+(business))\n\n" +
      "Anonymous FTP is available at ftp://foo.bar.baz.\n",
    '<p><a href="http://commonmark.org">http://commonmark.org</a></p>\n' +
      '<p>(Visit <a href="https://encrypted.google.com/search?q=Markup+(business)">https://encrypted.google.com/search?q=Markup+(business)</a>)</p>\n' +
      '<p>Anonymous FTP is available at <a href="ftp://foo.bar.baz">ftp://foo.bar.baz</a>.</p>\n',
  ],
  ["foo@bar.baz\n", '<p><a href="mailto:foo@bar.baz">foo@bar.baz</a></p>\n'],
  [
    "hello@mail+xyz.example isn't valid, but hello+xyz@mail.example is.\n",
    '<p>hello@mail+xyz.example isn\'t valid, but <a href="mailto:hello+xyz@mail.example">hello+xyz@mail.example</a> is.</p>\n',
  ],
  [
    "a.b-c_d@a.b\n\na.b-c_d@a.b.\n\na.b-c_d@a.b-\n\na.b-c_d@a.b_\n",
    '<p><a href="mailto:a.b-c_d@a.b">a.b-c_d@a.b</a></p>\n' +
      '<p><a href="mailto:a.b-c_d@a.b">a.b-c_d@a.b</a>.</p>\n' +
      "<p>a.b-c_d@a.b-</p>\n<p>a.b-c_d@a.b_</p>\n",
  ],
  // The spec's note that autolinks do not interfere with regular links (#65).
  [
    "[a link](http://www.google.com/)stuff?\n",
    '<p><a href="http://www.google.com/">a link</a>stuff?</p>\n',
  ],
];

describe("GFM autolinks", () => {
  test("every example of the GFM spec's autolinks extension renders as the spec shows", () => {
    for (const [markdown, html] of SPEC_EXAMPLES) {
      assert.equal(md.render(markdown), html, `input: ${JSON.stringify(markdown)}`);
    }
  });

  test("where the spec is loose, links follow cmark-gfm, GitHub's implementation", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      // A URL's host needs no period.
      [
        "see http://localhost:8080/status",
        'see <a href="http://localhost:8080/status">http://localhost:8080/status</a>',
      ],
      // Trailing quotes and a lone semicolon are left out.
      [
        "'https://example.com/a';",
        "'<a href=\"https://example.com/a\">https://example.com/a</a>';",
      ],
      [
        '"https://example.com/b"',
        '&quot;<a href="https://example.com/b">https://example.com/b</a>&quot;',
      ],
      // `mailto:` before an address is part of its link.
      [
        "write to mailto:team@example.org.",
        'write to <a href="mailto:team@example.org">mailto:team@example.org</a>.',
      ],
      // Hosts in any script, sent as punycode.
      ["https://例え.jp/x", '<a href="https://xn--r8jz45g.jp/x">https://例え.jp/x</a>'],
      // Any top-level domain, listed or not.
      [
        "ops@corp.internal and ci@build.local",
        '<a href="mailto:ops@corp.internal">ops@corp.internal</a> and <a href="mailto:ci@build.local">ci@build.local</a>',
      ],
    ];
    assertInline(cases);
  });

  test("trailing emphasis and strikethrough marks close around the link, not inside it", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["~~https://example.com~~", '<s><a href="https://example.com">https://example.com</a></s>'],
      [
        "**https://example.com/a**",
        '<strong><a href="https://example.com/a">https://example.com/a</a></strong>',
      ],
      ["_www.example.org_", '<em><a href="http://www.example.org">www.example.org</a></em>'],
      ["*me@example.org*", '<em><a href="mailto:me@example.org">me@example.org</a></em>'],
      [
        "https://example.com/path_ end",
        '<a href="https://example.com/path">https://example.com/path</a>_ end',
      ],
    ];
    assertInline(cases);
  });

  test("no link where GFM makes none", () => {
    const texts = [
      "foohttp://example.com", // a scheme right after a letter
      "abcwww.example.org", // www. after a letter
      "x.www.example.org", // www. after a period
      '"www.example.org"', // or a quote (a URL may follow one)
      "www.exa_mple.org and http://a.exa_mple.org/x", // `_` in the last two labels
      "www. alone",
      "http:// nothing",
      "//cdn.example.com/lib", // protocol-relative
      "user@host", // an address's domain needs a period
      "user@host.example-", // nor may it end in `-`
      "path/user@example.org", // nor follow a slash
      "me\\@example.org and me&#64;example.org", // an escaped or encoded @
      "`https://example.com` in code",
      "report.md and example.com", // bare host names
    ];
    for (const text of texts) {
      assert.doesNotMatch(md.renderInline(text), /<a /, `input: ${JSON.stringify(text)}`);
    }
  });

  test("text already inside a link is not linked again", () => {
    assert.equal(
      md.renderInline("[https://a.example](https://b.example) <https://c.example>"),
      '<a href="https://b.example">https://a.example</a> <a href="https://c.example">https://c.example</a>',
    );
    assert.equal(
      md.renderInline("https://example.com/u@example.org"),
      '<a href="https://example.com/u@example.org">https://example.com/u@example.org</a>',
    );
  });

  test("an address never reaches back into the link before it", () => {
    assert.deepEqual(
      findAutolinks("a@b.example@c.example").map((link) => link.raw),
      ["a@b.example"],
    );
  });

  test("findAutolinks reports each link's place, text, URL and scheme", () => {
    const text = "a www.x.org, b@c.de; HTTPS://y.test/p.";
    assert.deepEqual(findAutolinks(text), [
      {
        schema: "",
        index: 2,
        lastIndex: 11,
        raw: "www.x.org",
        text: "www.x.org",
        url: "http://www.x.org",
      },
      {
        schema: "mailto:",
        index: 13,
        lastIndex: 19,
        raw: "b@c.de",
        text: "b@c.de",
        url: "mailto:b@c.de",
      },
      {
        schema: "https:",
        index: 21,
        lastIndex: 37,
        raw: "HTTPS://y.test/p",
        text: "HTTPS://y.test/p",
        url: "HTTPS://y.test/p",
      },
    ]);
  });

  // linkify-it, as set up before, took 12 s for 64 KB of "www." and grew
  // with the square of the length; every scan here moves forward. The
  // timeout only catches a hang: each input renders in well under a second.
  test("long runs of link-like text render in one pass", { timeout: 60_000 }, () => {
    const inputs: ReadonlyArray<readonly [string, number]> = [
      ["www.".repeat(100_000), 1],
      ["www.x ".repeat(50_000), 50_000],
      ["a@".repeat(100_000), 0],
      ["http://".repeat(50_000), 1],
      [`x@${"a.".repeat(100_000)}-`, 0],
      [`www.x.org/${")".repeat(100_000)}`, 1],
      [`www.x.org/${"&a;".repeat(50_000)}`, 1],
    ];
    for (const [text, links] of inputs) {
      const html = md.render(text);
      assert.equal(html.split("<a href").length - 1, links, `${text.slice(0, 20)}…`);
    }
  });

  test("on generated text, links are in order, apart, as written, and end as GFM ends them", () => {
    const pieces = [
      "https://",
      "http://",
      "ftp://",
      "www.",
      "WWW.",
      "mailto:",
      "@",
      "example",
      "a_b",
      "x-y",
      ".",
      ".org",
      "/",
      "?q=",
      "(",
      ")",
      "&amp;",
      "&",
      ";",
      "*",
      "_",
      "~",
      "'",
      '"',
      ",",
      ":",
      "!",
      "<",
      " ",
      "\t",
      "例",
      "9",
    ];
    const next = seededBelow(20261203);
    let found = 0;
    for (let i = 0; i < 20000; i++) {
      let text = "";
      for (let k = 1 + next(12); k > 0; k--) text += pieces[next(pieces.length)];
      let previousEnd = 0;
      for (const link of findAutolinks(text)) {
        found++;
        const where = `in ${JSON.stringify(text)}: ${JSON.stringify(link)}`;
        assert.ok(link.index >= previousEnd && link.lastIndex > link.index, where);
        assert.equal(link.raw, text.slice(link.index, link.lastIndex), where);
        assert.equal(link.text, link.raw, where);
        assert.doesNotMatch(link.raw, /[\s<]|[?!.,:*_~'"]$/, where);
        assert.match(link.url, /^(?:https?:\/\/|ftp:\/\/|mailto:)/i, where);
        previousEnd = link.lastIndex;
      }
    }
    assert.ok(found > 2000, `the texts hold links (${found})`);
  });
});
