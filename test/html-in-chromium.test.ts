/**
 * markdown_to_html output checked in a real browser (SPEC §4): Debian's Chromium,
 * driven by playwright-core (no browser download). The example bundle is
 * published through the CLI, then opened from disk at phone and desktop widths.
 *
 * Uses /usr/bin/chromium (Debian's `chromium`, installed on demand when running
 * as root; see helpers/chromium.ts) or CHROMIUM_PATH; fails loudly without it.
 */
import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { ensureChromium } from "./helpers/chromium.js";
import { cleanupTempDirs, REPO_ROOT, runCli, tempDir, writeBundle } from "./helpers/fixtures.js";
import { writeConfigSpec } from "./helpers/scenario.js";

// The flags a closed-network machine needs: no background traffic, no first-run UI.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let browser: Browser;
let site: string;

before(async () => {
  browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
  site = await publishExample();
});

after(async () => {
  await browser?.close();
  await cleanupTempDirs();
});

/** Publish examples/bundle through the CLI into a temp root; returns the root. */
async function publishExample(): Promise<string> {
  const base = await tempDir("distributor-html-");
  await cp(path.join(REPO_ROOT, "examples", "bundle"), path.join(base, "bundle"), {
    recursive: true,
  });
  const root = path.join(base, "public");
  const config = await writeConfigSpec(base, {
    pipelines: { reports: { source: path.join(base, "bundle"), destinations: ["site"] } },
    destinations: { site: { root } },
  });
  const result = await runCli(["run", "--config", config]);
  assert.equal(result.code, 0, result.stderr);
  return root;
}

/** Open a published file and record every request the page makes. */
async function open(file: string, viewport: { width: number; height: number }) {
  const page = await browser.newPage({ viewport });
  const requests: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  const dialogs: string[] = [];
  page.on("dialog", async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
  return { page, requests, dialogs };
}

/**
 * Evaluate a browser-side expression. It is a string on purpose: the test is
 * compiled without the DOM library, which must not leak into the Node sources.
 */
function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

const SCRIPT_COUNT = "document.scripts.length";

describe("the example report in Chromium", () => {
  test("title from the first heading, no scripts, and only the bundle's own files requested", async () => {
    const { page, requests } = await open(path.join(site, "report.html"), {
      width: 1280,
      height: 900,
    });
    assert.equal(await page.title(), "Quarterly Service Report — Q2 2026");
    assert.equal(await inPage(page, SCRIPT_COUNT), 0);
    assert.ok(requests.length >= 2, `page and image requested: ${requests.join(", ")}`);
    for (const url of requests) assert.match(url, /^file:\/\//, `no network request: ${url}`);
    const image = await inPage(
      page,
      `(() => { const img = document.querySelector("img");
        return img ? { loaded: img.complete && img.naturalWidth > 0, alt: img.alt } : null; })()`,
    );
    assert.deepEqual(image, { loaded: true, alt: "Availability by month" });
    await page.close();
  });

  test("reads on a phone: no sideways scrolling of the page, wide tables scroll inside", async () => {
    const { page } = await open(path.join(site, "report.html"), { width: 390, height: 844 });
    const overflow = await inPage<number>(
      page,
      "document.documentElement.scrollWidth - window.innerWidth",
    );
    assert.ok(overflow <= 0, `the page itself does not overflow (${overflow}px)`);
    const fontSize = await inPage<number>(
      page,
      "Number.parseFloat(getComputedStyle(document.body).fontSize)",
    );
    assert.ok(fontSize >= 15, `readable body text on a phone (${fontSize}px)`);
    await page.close();
  });

  test("on a desktop the text column stays at a readable width", async () => {
    const { page } = await open(path.join(site, "report.html"), { width: 1600, height: 900 });
    const width = await inPage<number>(
      page,
      'document.querySelector("p")?.getBoundingClientRect().width ?? 0',
    );
    assert.ok(width > 400 && width <= 900, `paragraph width ${width}px`);
    await page.close();
  });

  test("a rewritten cross-link opens the other generated page at its fragment", async () => {
    const { page } = await open(path.join(site, "report.html"), { width: 1280, height: 900 });
    await page.click("text=Methodology");
    await page.waitForLoadState("load");
    assert.match(page.url(), /methodology\.html#data-sources$/);
    assert.equal(await page.title(), "Methodology");
    const target = await inPage(page, 'document.getElementById("data-sources")?.tagName');
    assert.equal(target, "H2");
    await page.close();
  });
});

describe("hostile Markdown in Chromium", () => {
  test("raw HTML and javascript: links run nothing: no dialog, no script, no live link", async () => {
    const base = await tempDir("distributor-html-hostile-");
    await writeBundle(path.join(base, "bundle"), {
      "evil.md": [
        "# Evil",
        "",
        "<script>alert('raw')</script>",
        "",
        '<img src="x" onerror="alert(\'img\')">',
        "",
        "[click me](javascript:alert('link'))",
        "",
        "[and me](JaVaScRiPt:alert('mixed'))",
        "",
        "![pixel](data:image/svg+xml;base64,PHN2Zy8+)",
        "",
      ].join("\n"),
    });
    const root = path.join(base, "public");
    const config = await writeConfigSpec(base, {
      pipelines: { p: { source: path.join(base, "bundle"), destinations: ["d"] } },
      destinations: { d: { root } },
    });
    assert.equal((await runCli(["run", "--config", config])).code, 0);
    const { page, dialogs, requests } = await open(path.join(root, "evil.html"), {
      width: 1280,
      height: 900,
    });
    for (const text of ["click me", "and me"]) await page.click(`text=${text}`);
    await page.waitForTimeout(200);
    assert.deepEqual(dialogs, []);
    assert.equal(await inPage(page, SCRIPT_COUNT), 0);
    const live = await inPage<number>(
      page,
      `[...document.querySelectorAll("a[href], img[src]")].filter((el) =>
        /^\\s*(javascript|vbscript|data):/i.test(el.getAttribute("href") ?? el.getAttribute("src") ?? "")).length`,
    );
    assert.equal(live, 0);
    assert.match(await inPage<string>(page, "document.body.textContent"), /<script>/);
    for (const url of requests) assert.match(url, /^file:\/\//);
    await page.close();
  });
});
