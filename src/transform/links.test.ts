import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createLinkRewriter, derivedHtmlPath } from "./links.js";

describe("derivedHtmlPath", () => {
  test("replaces a final .md or .markdown extension, any case", () => {
    assert.equal(derivedHtmlPath("report.md"), "report.html");
    assert.equal(derivedHtmlPath("a/b/notes.markdown"), "a/b/notes.html");
    assert.equal(derivedHtmlPath("README.MD"), "README.html");
    assert.equal(derivedHtmlPath("x.Markdown"), "x.html");
    assert.equal(derivedHtmlPath("v1.md.md"), "v1.md.html");
  });

  test("appends .html to other names so the source path stays free", () => {
    assert.equal(derivedHtmlPath("notes.txt"), "notes.txt.html");
    assert.equal(derivedHtmlPath("mdfile"), "mdfile.html");
  });
});

describe("createLinkRewriter", () => {
  const transformed = new Map([
    ["report.md", "report.html"],
    ["docs/method.md", "docs/method.html"],
    ["docs/my notes.markdown", "docs/my notes.html"],
    ["notes.txt", "notes.txt.html"],
  ]);
  const fromTop = createLinkRewriter("report.md", transformed);
  const fromDocs = createLinkRewriter("docs/method.md", transformed);

  test("rewrites relative links to transformed files, keeping query and fragment", () => {
    assert.equal(fromTop("docs/method.md"), "docs/method.html");
    assert.equal(fromTop("./docs/method.md#data-sources"), "./docs/method.html#data-sources");
    assert.equal(fromTop("docs/method.md?v=2#x"), "docs/method.html?v=2#x");
    assert.equal(fromDocs("../report.md#top"), "../report.html#top");
    assert.equal(fromDocs("method.md"), "method.html");
    assert.equal(fromTop("report.md#self"), "report.html#self");
  });

  test("percent-encoded links are matched decoded and kept encoded", () => {
    assert.equal(fromDocs("my%20notes.markdown#a"), "my%20notes.html#a");
    assert.equal(fromTop("notes.txt"), "notes.txt.html");
  });

  test("a percent-encoded extension is rewritten too: the .md itself is not published", () => {
    assert.equal(fromTop("docs/method%2Emd"), "docs/method.html");
    assert.equal(fromTop("docs/method%2emd?v=2#top"), "docs/method.html?v=2#top");
    assert.equal(fromDocs("my%20notes%2Emarkdown"), "my%20notes.html");
  });

  test("leaves other links alone", () => {
    const untouched = [
      "https://example.com/report.md",
      "mailto:a@b.test",
      "/report.md",
      "//cdn.test/report.md",
      "#fragment",
      "?q=1",
      "other.md",
      "data/file.csv",
      "../report.md",
      "docs/../../report.md",
      "bad%zz.md",
    ];
    for (const href of untouched) assert.equal(fromTop(href), undefined, href);
  });

  test("a link resolving outside the bundle is left alone even if the name matches", () => {
    assert.equal(fromDocs("../../docs/method.md"), undefined);
  });
});
