import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import picomatch from "picomatch";
import { parseManifest } from "../bundle/manifest.js";
import { writeTestBundle } from "../bundle/testing.js";
import { loadBundle, openBundle } from "../bundle/verify.js";
import type { PipelineConfig, TransformConfig } from "../config/types.js";
import { DistributorError } from "../errors.js";
import { sha256Digest } from "../hashing.js";
import type { PlannedOutput } from "../model.js";
import {
  mediaTypeFor,
  planOutputs,
  renderDeferred,
  sharedRenderCounts,
} from "./planned-outputs.js";
import { RenderCache } from "./render-cache.js";

function globs(patterns: string[]): (p: string) => boolean {
  const matchers = patterns.map((glob) => picomatch(glob, { dot: true }));
  return (p) => matchers.some((m) => m(p));
}

function markdownTransform(options: Partial<TransformConfig> = {}): TransformConfig {
  const include = options.include ?? ["**/*.md", "**/*.markdown"];
  return {
    transform: "markdown_to_html",
    include,
    keepSource: options.keepSource ?? false,
    allowHtml: options.allowHtml ?? false,
    matches: globs(include),
  };
}

function pipeline(
  options: { include?: string[]; exclude?: string[]; transforms?: TransformConfig[] } = {},
): PipelineConfig {
  const include = options.include ?? ["**"];
  const exclude = options.exclude ?? [];
  const included = globs(include);
  const excluded = globs(exclude);
  return {
    id: "reports",
    destinations: ["site"],
    include,
    exclude,
    selects: (p) => included(p) && !excluded(p),
    transforms: options.transforms ?? [markdownTransform()],
  };
}

async function plan(
  files: Record<string, string>,
  config: PipelineConfig,
  mediaTypes?: Record<string, string>,
) {
  const bundle = await loadBundle(await writeTestBundle(files, mediaTypes ? { mediaTypes } : {}));
  return { bundle, outputs: await planOutputs(bundle, config) };
}

function text(output: PlannedOutput | undefined): string {
  assert.ok(output, "output exists");
  assert.equal(output.content.type, "bytes");
  return output.content.type === "bytes" ? new TextDecoder().decode(output.content.bytes) : "";
}

async function expectError(promise: Promise<unknown>, code: string): Promise<DistributorError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DistributorError, `expected DistributorError, got ${caught}`);
  assert.equal(caught.code, code);
  return caught;
}

describe("planOutputs", () => {
  test("source files are copied, Markdown becomes generated HTML; sorted by path", async () => {
    const { bundle, outputs } = await plan(
      { "report.md": "# Report\n", "b.css": "x{}", "a/img.png": "png" },
      pipeline(),
      { "a/img.png": "image/x-custom" },
    );
    assert.deepEqual(
      outputs.map((o) => [o.path, o.kind, o.sourcePath, o.transform]),
      [
        ["a/img.png", "source", "a/img.png", undefined],
        ["b.css", "source", "b.css", undefined],
        ["report.html", "generated", "report.md", "markdown_to_html"],
      ],
    );
    const png = outputs[0] as PlannedOutput;
    assert.deepEqual(png.content, {
      type: "file",
      absPath: path.join(bundle.dir, "a/img.png"),
      sourcePath: "a/img.png",
      size: 3,
      // What a driver checks the bytes it copies against.
      sha256: sha256Digest(Buffer.from("png")),
    });
    assert.equal(png.sha256, sha256Digest(Buffer.from("png")));
    assert.equal(png.size, 3);
    assert.equal(png.mediaType, "image/x-custom");
    assert.equal(outputs[1]?.mediaType, "text/css; charset=utf-8");
  });

  test("a generated output carries the digest and size of its rendered bytes", async () => {
    const { outputs } = await plan({ "report.md": "# Report\n" }, pipeline());
    const html = outputs[0] as PlannedOutput;
    assert.equal(html.mediaType, "text/html; charset=utf-8");
    assert.ok(html.content.type === "bytes");
    assert.equal(html.size, html.content.bytes.byteLength);
    assert.equal(html.sha256, sha256Digest(html.content.bytes));
    assert.match(text(html), /<title>Report<\/title>/);
  });

  test("include and exclude are respected", async () => {
    const config = pipeline({ include: ["docs/**", "index.md"], exclude: ["**/*.tmp"] });
    const { outputs } = await plan(
      { "index.md": "#", "docs/a.txt": "a", "docs/b.tmp": "b", "other.txt": "o" },
      config,
    );
    assert.deepEqual(
      outputs.map((o) => o.path),
      ["docs/a.txt", "index.html"],
    );
  });

  test("without transforms Markdown is published as a source file", async () => {
    const { outputs } = await plan({ "a.md": "# A" }, pipeline({ transforms: [] }));
    assert.deepEqual(
      outputs.map((o) => [o.path, o.kind, o.mediaType]),
      [["a.md", "source", "text/markdown; charset=utf-8"]],
    );
  });

  test("keep_source also publishes the Markdown file itself", async () => {
    const config = pipeline({ transforms: [markdownTransform({ keepSource: true })] });
    const { outputs } = await plan({ "a.md": "# A" }, config);
    assert.deepEqual(
      outputs.map((o) => [o.path, o.kind]),
      [
        ["a.html", "generated"],
        ["a.md", "source"],
      ],
    );
  });

  test(".markdown and upper-case extensions become .html", async () => {
    const config = pipeline({
      transforms: [markdownTransform({ include: ["**/*.markdown", "**/*.MD"] })],
    });
    const { outputs } = await plan({ "x/notes.markdown": "n", "README.MD": "r" }, config);
    assert.deepEqual(
      outputs.map((o) => o.path),
      ["README.html", "x/notes.html"],
    );
  });

  test("allow_html is passed to the renderer", async () => {
    const raw = "<b>raw</b>\n";
    const escaped = await plan({ "a.md": raw }, pipeline());
    const passed = await plan(
      { "a.md": raw },
      pipeline({ transforms: [markdownTransform({ allowHtml: true })] }),
    );
    assert.match(text(escaped.outputs[0]), /&lt;b&gt;raw/);
    assert.match(text(passed.outputs[0]), /<b>raw<\/b>/);
  });

  test("links to transformed Markdown are rewritten, others untouched", async () => {
    const config = pipeline({ exclude: ["drafts/**"] });
    const { outputs } = await plan(
      {
        "report.md":
          "[m](docs/method.md#src) [q](docs/method.md?x=1) [d](drafts/d.md) [c](data.csv) [u](https://e.test/a.md)\n",
        "docs/method.md": "[back](../report.md)\n",
        "drafts/d.md": "draft",
        "data.csv": "1",
      },
      config,
    );
    const report = text(outputs.find((o) => o.path === "report.html"));
    assert.match(report, /href="docs\/method.html#src"/);
    assert.match(report, /href="docs\/method.html\?x=1"/);
    assert.match(report, /href="drafts\/d.md"/);
    assert.match(report, /href="data.csv"/);
    assert.match(report, /href="https:\/\/e.test\/a.md"/);
    assert.match(
      text(outputs.find((o) => o.path === "docs/method.html")),
      /href="..\/report.html"/,
    );
  });

  test("the first matching transform wins", async () => {
    const first = markdownTransform({ include: ["a.md"], allowHtml: true });
    const second = markdownTransform({ allowHtml: false });
    const { outputs } = await plan(
      { "a.md": "<i>x</i>", "b.md": "<i>x</i>" },
      pipeline({ transforms: [first, second] }),
    );
    assert.match(text(outputs[0]), /<i>x<\/i>/);
    assert.match(text(outputs[1]), /&lt;i&gt;/);
  });

  test("a generated path equal to a source path is an output_collision naming both", async () => {
    const error = await expectError(
      plan({ "a.md": "# A", "a.html": "<p>" }, pipeline()),
      "output_collision",
    );
    assert.deepEqual(error.paths, ["a.html"]);
    assert.match(
      error.message,
      /a\.html: generated from a\.md by markdown_to_html and source file a\.html/,
    );
  });

  test("every collision is listed", async () => {
    const files = { "a.md": "a", "a.markdown": "a", "b.md": "b", "b.html": "b", "c.md": "c" };
    const error = await expectError(plan(files, pipeline()), "output_collision");
    assert.deepEqual(error.paths, ["a.html", "b.html"]);
  });

  test("paths with lone surrogates never reach the layout: the manifest refuses them", () => {
    // No UTF-8 encodes a lone surrogate: two such paths would both be written
    // as U+FFFD, one file for two entries.
    const manifest = {
      schema_version: 1,
      id: "x",
      created: "2026-06-04T11:55:00Z",
      files: ["a\ud800.md", "a\ud801.md"].map((p) => ({
        path: p,
        size: 1,
        sha256: `sha256:${"0".repeat(64)}`,
      })),
    };
    assert.throws(
      () => parseManifest(Buffer.from(JSON.stringify(manifest))),
      (error: unknown) => {
        assert.ok(error instanceof DistributorError);
        assert.equal(error.code, "source_invalid");
        assert.match(error.message, /files\[0\]\.path: must be valid Unicode/);
        assert.match(error.message, /files\[1\]\.path: must be valid Unicode/);
        return true;
      },
    );
  });

  test("a rendered file where another output needs a folder is an output_collision", async () => {
    const files = { "x.md": "# X", "x.html/y.txt": "y", "x.html/z/w.txt": "w", "ok.md": "ok" };
    const error = await expectError(plan(files, pipeline()), "output_collision");
    assert.deepEqual(error.paths, ["x.html"]);
    assert.match(
      error.message,
      /x\.html: generated from x\.md by markdown_to_html, but x\.html\/y\.txt \(source file x\.html\/y\.txt\) needs it as a folder/,
    );
  });

  test("a name that only starts like another output's folder is no collision", async () => {
    const { outputs } = await plan(
      { "x.md": "# X", "x.html2/y.txt": "y", "x.htm/y.txt": "y" },
      pipeline(),
    );
    assert.deepEqual(
      outputs.map((o) => o.path),
      ["x.htm/y.txt", "x.html", "x.html2/y.txt"],
    );
  });

  test("no collision when the colliding file is excluded", async () => {
    const { outputs } = await plan(
      { "a.md": "# A", "a.html": "<p>" },
      pipeline({ exclude: ["*.html"] }),
    );
    assert.deepEqual(
      outputs.map((o) => o.path),
      ["a.html"],
    );
  });

  test("invalid UTF-8 Markdown fails with transform_failed", async () => {
    const dir = await writeTestBundle({ "bad.md": Buffer.from([0x23, 0x20, 0xff, 0xfe]) });
    const error = await expectError(
      planOutputs(await loadBundle(dir), pipeline()),
      "transform_failed",
    );
    assert.deepEqual(error.paths, ["bad.md"]);
  });

  test("a Markdown file that no longer matches the manifest is source_invalid, not rendered", async () => {
    const dir = await writeTestBundle({ "a.md": "# A", "b.txt": "b" });
    const bundle = await loadBundle(dir);
    await writeFile(path.join(dir, "a.md"), "# B");
    const error = await expectError(planOutputs(bundle, pipeline()), "source_invalid");
    assert.deepEqual(error.paths, ["a.md"]);
    assert.match(error.message, /a\.md: sha256 mismatch/);
  });

  test("a bad bundle is reported before a document that cannot be rendered", async () => {
    const dir = await writeTestBundle({ "bad.md": Buffer.from([0xff]), "b.txt": "b" });
    await writeFile(path.join(dir, "b.txt"), "changed");
    const error = await expectError(
      planOutputs(await openBundle(dir), pipeline()),
      "source_invalid",
    );
    assert.deepEqual(error.paths, ["b.txt"]);
  });

  test("a bad bundle is reported before an output collision", async () => {
    const dir = await writeTestBundle({ "a.md": "# A", "a.html": "<p>", "c.txt": "c" });
    await rm(path.join(dir, "c.txt"));
    const error = await expectError(
      planOutputs(await openBundle(dir), pipeline()),
      "source_invalid",
    );
    assert.deepEqual(error.paths, ["c.txt"]);
  });

  for (const workers of [0, 2]) {
    test(`with ${workers} worker threads, outputs are the same`, async () => {
      const dir = await writeTestBundle({
        "a.md": "# A\n\n[b](b.md#x)",
        "b.md": "b",
        "c.txt": "c",
        "d/e.bin": Buffer.alloc(3000, 1),
      });
      const bundle = await openBundle(dir);
      const strip = (outputs: PlannedOutput[]) => outputs.map(({ content: _c, ...rest }) => rest);
      const inThread = strip(await planOutputs(bundle, pipeline(), { workers: 0 }));
      assert.deepEqual(strip(await planOutputs(bundle, pipeline(), { workers })), inThread);
      assert.deepEqual(
        inThread.map((o) => o.path),
        ["a.html", "b.html", "c.txt", "d/e.bin"],
      );
    });
  }

  test("planning the same bundle twice gives identical outputs", async () => {
    const dir = await writeTestBundle({ "a.md": "# A\n\n[b](b.md)", "b.md": "b", "c.txt": "c" });
    const bundle = await loadBundle(dir);
    const strip = (outputs: PlannedOutput[]) => outputs.map(({ content: _c, ...rest }) => rest);
    assert.deepEqual(
      strip(await planOutputs(bundle, pipeline())),
      strip(await planOutputs(bundle, pipeline())),
    );
  });

  test("with helper threads, every kept view holds its own file's bytes", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 700; i++) {
      files[`d${i % 9}/f${i}.${i % 4 === 0 ? "md" : "txt"}`] = `# ${i}\n\n${"x".repeat(i)}\n`;
    }
    const dir = await writeTestBundle(files);
    const outputs = await planOutputs(await openBundle(dir, { workers: 2 }), pipeline(), {
      workers: 2,
      keepBytes: { remaining: 1024 * 1024 },
    });
    let kept = 0;
    for (const output of outputs) {
      if (output.content.type !== "file" || output.content.verifiedBytes === undefined) continue;
      kept++;
      assert.equal(output.kind, "source");
      const onDisk = await readFile(path.join(dir, output.sourcePath));
      assert.ok(onDisk.equals(Buffer.from(output.content.verifiedBytes)), output.path);
    }
    assert.equal(kept, 525, "every .txt file is kept");
  });

  test("keepBytes gives each small source output the bytes verification read", async () => {
    const large = Buffer.alloc(300 * 1024, 1);
    const files = {
      "a.md": "# A",
      "b.md": "# B",
      "c.txt": "c",
      "d/e.txt": "e",
      "f.bin": large,
      "r.md": "# R",
    };
    const dir = await writeTestBundle(files);
    const bundle = await openBundle(dir);
    const transforms = [
      markdownTransform({ include: ["b.md"], keepSource: true }),
      markdownTransform({ include: ["r.md"] }),
    ];
    const budget = { remaining: 1024 * 1024 };
    const outputs = await planOutputs(bundle, pipeline({ exclude: ["c.txt"], transforms }), {
      keepBytes: budget,
    });
    // Charged for what was kept: a.md, b.md and d/e.txt, one byte more each.
    // c.txt is excluded and r.md only rendered: neither is kept (this bundle
    // is checked on this thread, after the layout is known).
    assert.equal(budget.remaining, 1024 * 1024 - (4 + 4 + 2));
    const kept = new Map<string, string | undefined>();
    for (const { path: at, content } of outputs) {
      const bytes = content.type === "file" ? content.verifiedBytes : undefined;
      kept.set(at, bytes && Buffer.from(bytes).toString());
    }
    // a.md is published as it is (the transform takes b.md only); b.md is
    // rendered and kept as a source; f.bin is too large to keep.
    assert.deepEqual(Object.fromEntries(kept), {
      "a.md": "# A",
      "b.html": undefined,
      "b.md": "# B",
      "d/e.txt": "e",
      "f.bin": undefined,
      "r.html": undefined,
    });
    // Changed after verification: the kept bytes are still the verified ones.
    await writeFile(path.join(dir, "d/e.txt"), "E");
    const e = outputs.find((o) => o.path === "d/e.txt") as PlannedOutput;
    assert.equal(
      e.content.type === "file" && Buffer.from(e.content.verifiedBytes ?? []).toString(),
      "e",
    );
    await writeFile(path.join(dir, "d/e.txt"), "e");
    const plain = await planOutputs(await openBundle(dir), pipeline());
    assert.ok(plain.some((o) => o.content.type === "file"));
    assert.ok(
      plain.every((o) => o.content.type !== "file" || o.content.verifiedBytes === undefined),
    );
  });
});

/**
 * `count` documents of about 6 KB each, linking to each other, with
 * autolinks, headings and a table: 1,000 of them are more Markdown than
 * the calling thread renders alone (4 MiB), and long enough to render that
 * it is still at it when a helper has checked its share.
 */
function manyDocuments(count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const next = `../d${(i + 1) % 7}/doc${(i + 1) % count}.md`;
    const section = [
      `## Part ${i}`,
      `See [the next one](${next}#part-${i + 1}) and https://example.org/${i}?q=(x).`,
      "| a | b |\n|---|---|\n| 1 | ~~2~~ |",
      "- item\n- www.example.com/path",
    ].join("\n\n");
    files[`d${i % 7}/doc${i}.md`] = `# Doc ${i}\n\n${`${section}\n\n`.repeat(32)}`;
  }
  files["data/x.bin"] = "x";
  return files;
}

describe("planOutputs renders on helper threads too", () => {
  test("helpers done checking render documents, with the same bytes as this thread", async () => {
    const dir = await writeTestBundle(manyDocuments(1000));
    const bundle = await openBundle(dir);
    const before = sharedRenderCounts.onHelpers;
    const shared = await planOutputs(bundle, pipeline(), { workers: 1 });
    const onHelpers = sharedRenderCounts.onHelpers - before;
    assert.ok(onHelpers > 0 && onHelpers < 1000, `a helper rendered ${onHelpers} of 1000`);
    const here = await planOutputs(bundle, pipeline(), { workers: 0 });
    assert.equal(sharedRenderCounts.onHelpers - before, onHelpers, "none without helpers");
    assert.equal(shared.length, 1001);
    assert.deepEqual(shared, here);
  });

  test("less Markdown than the threshold is all rendered here", async () => {
    const files = manyDocuments(600);
    const size = Object.values(files).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    assert.ok(size > 2 * 1024 * 1024 && size < 4 * 1024 * 1024, `${size} bytes`);
    const dir = await writeTestBundle(files);
    const before = sharedRenderCounts.onHelpers;
    const outputs = await planOutputs(await openBundle(dir), pipeline(), { workers: 1 });
    assert.equal(outputs.length, 601);
    assert.equal(sharedRenderCounts.onHelpers, before);
  });

  test("documents a helper cannot render are reported as this thread reports them", async () => {
    const files: Record<string, string | Uint8Array> = manyDocuments(1000);
    // The helpers take documents from the back of the list: the last ones are bad.
    const bad = Object.keys(files)
      .filter((p) => p.endsWith(".md"))
      .slice(-40);
    for (const p of bad) files[p] = Buffer.from([0x23, 0x20, 0xff]);
    const dir = await writeTestBundle(files);
    const bundle = await openBundle(dir);
    const shared = await expectError(
      planOutputs(bundle, pipeline(), { workers: 1 }),
      "transform_failed",
    );
    const here = await expectError(
      planOutputs(bundle, pipeline(), { workers: 0 }),
      "transform_failed",
    );
    assert.equal(shared.message, here.message);
    assert.deepEqual(shared.paths, here.paths);
    assert.deepEqual([...shared.paths].sort(), [...bad].sort());
  });
});

describe("planOutputs with a render cache", () => {
  const files = { "a.md": "# A\n\n[b](b.md)\n", "b.md": "# B\n", "c.txt": "c" };

  async function planTwice(config = pipeline()) {
    const renderCache = new RenderCache(mkdtempSync(path.join(tmpdir(), "distributor-cache-")));
    const bundle = await openBundle(await writeTestBundle(files));
    const rendered = await planOutputs(bundle, config, { renderCache });
    const cached = await planOutputs(bundle, config, { renderCache });
    return { bundle, rendered, cached, renderCache };
  }

  test("documents rendered before are planned with their cached digest and rendered only on demand", async () => {
    const { rendered, cached } = await planTwice();
    assert.deepEqual(
      cached.map((o) => [o.path, o.sha256, o.size]),
      rendered.map((o) => [o.path, o.sha256, o.size]),
    );
    assert.deepEqual(
      cached.map((o) => o.content.type),
      ["deferred", "deferred", "file"],
    );
    for (const [index, output] of cached.entries()) {
      if (output.kind !== "generated") continue;
      assert.equal(renderDeferred(output), false, "same digest as cached");
      assert.equal(text(output), text(rendered[index]));
      assert.equal(renderDeferred(output), false, "rendered once");
    }
  });

  test("a cached digest that is wrong is corrected when the output is rendered", async () => {
    const { cached } = await planTwice();
    const a = cached[0] as PlannedOutput;
    const truth = { sha256: a.sha256, size: a.size };
    a.sha256 = `sha256:${"0".repeat(64)}`;
    assert.equal(renderDeferred(a), true);
    assert.deepEqual({ sha256: a.sha256, size: a.size }, truth);
  });

  test("a cache entry does not outlive a change of allow_html", async () => {
    const { bundle, renderCache } = await planTwice();
    const other = pipeline({ transforms: [markdownTransform({ allowHtml: true })] });
    const outputs = await planOutputs(bundle, other, { renderCache });
    assert.deepEqual(
      outputs.map((o) => o.content.type),
      ["bytes", "bytes", "file"],
    );
  });

  test("a source that changes after planning is refused when the output is rendered", async () => {
    const { bundle, cached } = await planTwice();
    await writeFile(path.join(bundle.dir, "b.md"), "# B, changed\n");
    const b = cached[1] as PlannedOutput;
    const error = await expectError(
      Promise.resolve().then(() => renderDeferred(b)),
      "source_invalid",
    );
    assert.match(error.message, /b\.md: size 13 != 4/);
    assert.equal(b.content.type, "deferred", "nothing rendered from the changed file");
  });

  test("a bundle that fails verification fails with a warm cache too", async () => {
    const { bundle, renderCache } = await planTwice();
    await writeFile(path.join(bundle.dir, "a.md"), "# A\n\n[b](b.md)\n".toUpperCase());
    const error = await expectError(
      planOutputs(bundle, pipeline(), { renderCache }),
      "source_invalid",
    );
    assert.deepEqual(error.paths, ["a.md"]);
  });
});

describe("mediaTypeFor", () => {
  test("the declared media type wins", () => {
    assert.equal(mediaTypeFor("a.bin", "application/x-thing"), "application/x-thing");
  });

  test("falls back to the extension, case-insensitive", () => {
    const cases: [string, string][] = [
      ["index.html", "text/html; charset=utf-8"],
      ["a/style.CSS", "text/css; charset=utf-8"],
      ["app.js", "text/javascript; charset=utf-8"],
      ["d.json", "application/json"],
      ["i.png", "image/png"],
      ["i.JPG", "image/jpeg"],
      ["i.svg", "image/svg+xml"],
      ["i.webp", "image/webp"],
      ["f.woff2", "font/woff2"],
      ["favicon.ico", "image/vnd.microsoft.icon"],
      ["r.pdf", "application/pdf"],
      ["data.csv", "text/csv; charset=utf-8"],
    ];
    for (const [file, expected] of cases) assert.equal(mediaTypeFor(file), expected, file);
  });

  test("unknown or missing extensions are application/octet-stream", () => {
    assert.equal(mediaTypeFor("LICENSE"), "application/octet-stream");
    assert.equal(mediaTypeFor("a.unknownext"), "application/octet-stream");
    assert.equal(mediaTypeFor("dir.d/file"), "application/octet-stream");
  });
});
