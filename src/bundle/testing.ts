/**
 * Test support: write a source bundle to a fresh temporary directory. Used by the
 * bundle and transform tests and by suites under test/ that need a real bundle.
 */
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sha256Digest } from "../hashing.js";

export interface TestBundleOptions {
  /** Manifest id (default `test.bundle`). */
  id?: string;
  /** Manifest created (default `2026-06-04T11:55:00Z`). */
  created?: string;
  /** Declared media types by path. */
  mediaTypes?: Record<string, string>;
  /** Directory to create the bundle in (default: a new temp dir). */
  dir?: string;
}

/**
 * Write `files` (path → content) and a correct manifest.json listing all of them.
 * Returns the bundle directory. Tamper with files afterwards to test verification.
 */
export async function writeTestBundle(
  files: Record<string, string | Uint8Array>,
  options: TestBundleOptions = {},
): Promise<string> {
  const dir = options.dir ?? (await mkdtemp(path.join(tmpdir(), "distributor-bundle-")));
  const entries = [];
  for (const [relative, content] of Object.entries(files)) {
    const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
    await mkdir(path.dirname(path.join(dir, relative)), { recursive: true });
    await writeFile(path.join(dir, relative), bytes);
    const mediaType = options.mediaTypes?.[relative];
    entries.push({
      path: relative,
      size: bytes.byteLength,
      sha256: sha256Digest(bytes),
      ...(mediaType === undefined ? {} : { media_type: mediaType }),
    });
  }
  const manifest = {
    schema_version: 1,
    id: options.id ?? "test.bundle",
    created: options.created ?? "2026-06-04T11:55:00Z",
    files: entries,
  };
  await writeFile(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return dir;
}
