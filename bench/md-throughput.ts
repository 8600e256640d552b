/**
 * Case 7 child process: Markdown throughput over the `.md` files of a bundle,
 * printed as `<MB/s>` of Markdown input on stdout.
 *
 *   --mode distributor  the whole markdown_to_html transform as `run` does it
 *                       (planOutputs: read and verify each file, render the full
 *                       document with rewritten links, hash the output);
 *   --mode bare         readFileSync + markdown-it's own `render`, nothing else;
 *   --mode gfm          the same with markdown-it set up for the syntax SPEC §4
 *                       asks for (CommonMark, GFM tables, strikethrough and
 *                       autolinks), through its own options only: what the
 *                       library costs before distributor adds anything. Its
 *                       autolinks are linkify-it's, close to GFM's but not
 *                       the same (the transform has its own since item 66).
 *
 * Both read the same files from the page cache, `--passes` times.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import MarkdownIt from "markdown-it";
import type { PipelineConfig } from "../src/config/types.js";
import type { SourceBundle } from "../src/model.js";
import { planOutputs } from "../src/transform/planned-outputs.js";

interface Manifest {
  id: string;
  created: string;
  files: { path: string; size: number; sha256: string }[];
}

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] ?? fallback) : fallback;
}

function pipeline(): PipelineConfig {
  const isMarkdown = (p: string) => p.endsWith(".md");
  return {
    id: "bench",
    destinations: ["out"],
    include: ["**"],
    exclude: [],
    selects: () => true,
    transforms: [
      {
        transform: "markdown_to_html",
        include: ["**/*.md"],
        keepSource: false,
        allowHtml: false,
        matches: isMarkdown,
      },
    ],
  };
}

/**
 * The syntax of SPEC §4 with markdown-it's own switches. Autolinks are
 * linkify-it's scheme, `//` and e-mail links; fuzzy links (any `name.tld`)
 * are off, since GFM does not link `report.md`. GFM's `www.` links are not
 * here: the library has no switch for them. The transform finds GFM's
 * autolinks with its own scanner instead (src/transform/_gfm-autolinks.ts).
 */
function gfmMarkdownIt(): MarkdownIt {
  const md = new MarkdownIt("commonmark", { html: false, linkify: true });
  md.enable(["table", "strikethrough", "linkify"]);
  md.linkify.set({ fuzzyLink: false });
  return md;
}

async function main(): Promise<void> {
  const dir = path.resolve(option("dir", "."));
  const mode = option("mode", "distributor");
  const passes = Number(option("passes", "3"));
  const manifest = JSON.parse(await readFile(path.join(dir, "manifest.json"), "utf8")) as Manifest;
  const files = manifest.files.filter((file) => file.path.endsWith(".md"));
  const bytes = files.reduce((sum, file) => sum + file.size, 0);
  const bundle: SourceBundle = {
    dir,
    identity: { id: manifest.id, digest: `sha256:${"0".repeat(64)}`, created: manifest.created },
    files,
  };
  const md = mode === "gfm" ? gfmMarkdownIt() : new MarkdownIt();
  const started = process.hrtime.bigint();
  for (let pass = 0; pass < passes; pass++) {
    if (mode === "bare" || mode === "gfm") {
      // Read synchronously: awaiting fs/promises' readFile file by file cost
      // this loop 0.3 s a pass (several thread-pool round trips a file,
      // against 20 ms in all for readFileSync), time the library never spends.
      for (const file of files) md.render(readFileSync(path.join(dir, file.path), "utf8"));
    } else {
      await planOutputs(bundle, pipeline());
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(((bytes * passes) / 1024 / 1024 / seconds).toFixed(2));
}

await main();
