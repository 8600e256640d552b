#!/usr/bin/env node
// Rewrites a bundle's manifest.json from the files in it, the way a producer
// would: every file listed with its size and sha256. Keeps the manifest's `id`
// and media types; sets `created` to now unless --keep-created is given.
// Usage: node examples/write-manifest.js examples/bundle [--keep-created]
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node examples/write-manifest.js BUNDLE_DIR [--keep-created]\n");
  process.exit(2);
}
const manifestPath = path.join(dir, "manifest.json");
const previous = JSON.parse(readFileSync(manifestPath, "utf8"));
const mediaTypes = new Map(previous.files.map((file) => [file.path, file.media_type]));

const files = readdirSync(dir, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile())
  .map((entry) => path.relative(dir, path.join(entry.parentPath ?? entry.path, entry.name)))
  .map((relative) => relative.split(path.sep).join("/"))
  .filter((relative) => relative !== "manifest.json")
  .sort()
  .map((relative) => {
    const bytes = readFileSync(path.join(dir, relative));
    const entry = {
      path: relative,
      size: bytes.length,
      sha256: `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
    };
    const mediaType = mediaTypes.get(relative);
    return mediaType ? { ...entry, media_type: mediaType } : entry;
  });

const created = process.argv.includes("--keep-created")
  ? previous.created
  : new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
const manifest = { schema_version: 1, id: previous.id, created, files };
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`wrote ${manifestPath}: ${files.length} files\n`);
