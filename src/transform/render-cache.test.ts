import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { cacheDirFrom, RenderCache, type RenderedDocument, renderKeys } from "./render-cache.js";

const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;

function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), "distributor-cache-"));
}

function cacheFile(dir: string, pipelineId = "docs"): string {
  return path.join(dir, `render-${pipelineId}.json`);
}

describe("cacheDirFrom", () => {
  test("DISTRIBUTOR_CACHE_DIR wins, then XDG_CACHE_HOME, then ~/.cache", () => {
    assert.equal(
      cacheDirFrom({ DISTRIBUTOR_CACHE_DIR: "/x/cache", XDG_CACHE_HOME: "/xdg" }),
      "/x/cache",
    );
    assert.equal(cacheDirFrom({ XDG_CACHE_HOME: "/xdg" }), "/xdg/distributor");
    // A relative XDG_CACHE_HOME is invalid by the XDG spec and ignored.
    assert.equal(
      cacheDirFrom({ XDG_CACHE_HOME: "rel" }),
      path.join(homedir(), ".cache", "distributor"),
    );
  });

  test("DISTRIBUTOR_CACHE=off (or 0, false, no) turns the cache off", () => {
    for (const value of ["off", "OFF", "0", "false", "no"]) {
      assert.equal(
        cacheDirFrom({ DISTRIBUTOR_CACHE: value, DISTRIBUTOR_CACHE_DIR: "/x" }),
        undefined,
      );
      assert.equal(RenderCache.fromEnv({ DISTRIBUTOR_CACHE: value }), undefined);
    }
    assert.equal(cacheDirFrom({ DISTRIBUTOR_CACHE: "on", DISTRIBUTOR_CACHE_DIR: "/x" }), "/x");
  });
});

describe("RenderCache", () => {
  test("what one run records, the next one finds; other pipelines have their own file", () => {
    const dir = tempDir();
    const first = new RenderCache(dir);
    assert.equal(first.get("docs", "k1"), undefined);
    first.set("docs", "k1", { sha256: DIGEST_A, size: 12 });
    first.set("site", "k1", { sha256: DIGEST_B, size: 7 });
    first.save();
    assert.deepEqual(readdirSync(dir).sort(), ["render-docs.json", "render-site.json"]);

    const second = new RenderCache(dir);
    assert.deepEqual(second.get("docs", "k1"), { sha256: DIGEST_A, size: 12 });
    assert.deepEqual(second.get("site", "k1"), { sha256: DIGEST_B, size: 7 });
    assert.equal(second.get("docs", "k2"), undefined);
  });

  test("a run that only finds what it needs does not rewrite the file", () => {
    const dir = tempDir();
    const first = new RenderCache(dir);
    first.set("docs", "k1", { sha256: DIGEST_A, size: 12 });
    first.save();
    const before = readFileSync(cacheFile(dir), "utf8");
    writeFileSync(cacheFile(dir), before.replace("{", "{ "));
    const second = new RenderCache(dir);
    assert.ok(second.get("docs", "k1"));
    second.set("docs", "k1", { sha256: DIGEST_A, size: 12 });
    second.save();
    assert.equal(readFileSync(cacheFile(dir), "utf8"), before.replace("{", "{ "));
  });

  test("two runs saving one after the other keep both their entries", () => {
    const dir = tempDir();
    const one = new RenderCache(dir);
    const two = new RenderCache(dir);
    one.set("docs", "k1", { sha256: DIGEST_A, size: 1 });
    two.set("docs", "k2", { sha256: DIGEST_B, size: 2 });
    one.save();
    two.save();
    const after = new RenderCache(dir);
    assert.deepEqual(after.get("docs", "k1"), { sha256: DIGEST_A, size: 1 });
    assert.deepEqual(after.get("docs", "k2"), { sha256: DIGEST_B, size: 2 });
  });

  test("entries unused for more than 30 days are dropped when the file is rewritten", () => {
    const dir = tempDir();
    const today = Math.floor(Date.now() / 86_400_000);
    const entries = { old: [DIGEST_A, 1, today - 31], recent: [DIGEST_B, 2, today - 29] };
    writeFileSync(
      cacheFile(dir),
      JSON.stringify({ format: "distributor-render-cache", version: 1, entries }),
    );
    const cache = new RenderCache(dir);
    cache.set("docs", "new", { sha256: DIGEST_A, size: 3 });
    cache.save();
    const saved = JSON.parse(readFileSync(cacheFile(dir), "utf8")).entries;
    assert.deepEqual(Object.keys(saved).sort(), ["new", "recent"]);
  });

  test("a FIFO or a device at the cache file's name is an empty cache, read at once", () => {
    const fifo = tempDir();
    execFileSync("mkfifo", [cacheFile(fifo)]);
    const device = tempDir();
    symlinkSync("/dev/zero", cacheFile(device));
    // In a child process with a time limit: a blocking open() of the FIFO
    // would hang this one past any test timeout.
    const module = new URL("./render-cache.js", import.meta.url).href;
    const script = `import { RenderCache } from ${JSON.stringify(module)};
      for (const dir of ${JSON.stringify([fifo, device])}) {
        if (new RenderCache(dir).get("docs", "k1") !== undefined) process.exit(3);
      }`;
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      timeout: 10_000,
      encoding: "utf8",
    });
    assert.equal(result.signal, null, "read at once, not waited on (killed at the time limit)");
    assert.equal(result.status, 0, result.stderr);
  });

  test("a malformed file is an empty cache, and a malformed entry is skipped", () => {
    const dir = tempDir();
    writeFileSync(cacheFile(dir), "{ not json");
    assert.equal(new RenderCache(dir).get("docs", "k1"), undefined);
    const entries = {
      good: [DIGEST_A, 5, 20_000],
      badDigest: ["sha256:xyz", 5, 20_000],
      negativeSize: [DIGEST_A, -1, 20_000],
      short: [DIGEST_A, 5],
    };
    writeFileSync(
      cacheFile(dir),
      JSON.stringify({ format: "distributor-render-cache", version: 1, entries }),
    );
    const cache = new RenderCache(dir);
    assert.deepEqual(cache.get("docs", "good"), { sha256: DIGEST_A, size: 5 });
    for (const key of ["badDigest", "negativeSize", "short"]) {
      assert.equal(cache.get("docs", key), undefined, key);
    }
    writeFileSync(
      cacheFile(dir),
      JSON.stringify({ format: "distributor-render-cache", version: 2, entries }),
    );
    assert.equal(new RenderCache(dir).get("docs", "good"), undefined, "another version");
  });

  test("a cache that cannot be written is left alone without an error", () => {
    const parent = tempDir();
    const notADirectory = path.join(parent, "file");
    writeFileSync(notADirectory, "x");
    const cache = new RenderCache(path.join(notADirectory, "cache"));
    cache.set("docs", "k1", { sha256: DIGEST_A, size: 1 });
    assert.doesNotThrow(() => cache.save());
    assert.deepEqual(readdirSync(parent), ["file"]);
  });

  test("a cache directory that cannot be made under /proc is given up, not retried forever", () => {
    // Node.js 20's mkdirSync(…, { recursive: true }) spins there without end.
    const cache = new RenderCache("/proc/distributor-no-such-dir/cache");
    cache.set("docs", "k1", { sha256: DIGEST_A, size: 1 });
    assert.doesNotThrow(() => cache.save());
    assert.equal(existsSync("/proc/distributor-no-such-dir"), false);
  });

  test("a missing cache directory is made, parents included, readable by its user only", () => {
    const dir = path.join(tempDir(), "a", "b", "cache");
    const cache = new RenderCache(dir);
    cache.set("docs", "k1", { sha256: DIGEST_A, size: 1 });
    cache.save();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(path.dirname(dir)).mode & 0o777, 0o700);
    assert.ok(new RenderCache(dir).get("docs", "k1"));
  });
});

describe("renderKeys", () => {
  const transformed = new Map([
    ["a.md", "a.html"],
    ["b/c.md", "b/c.html"],
  ]);
  const doc: RenderedDocument = {
    path: "a.md",
    sha256: DIGEST_A,
    transform: "markdown_to_html",
    allowHtml: false,
  };
  const keyOf = (document: RenderedDocument, links = transformed) =>
    renderKeys(links, [document]).get(document.path);

  test("the same inputs give the same key, in any manifest order", () => {
    const reordered = new Map([...transformed].reverse());
    assert.equal(keyOf(doc), keyOf({ ...doc }, reordered));
    assert.match(keyOf(doc) ?? "", /^[0-9a-f]{64}$/);
  });

  test("every input of the render changes the key", () => {
    const key = keyOf(doc);
    const variants: [string, string | undefined][] = [
      ["content", keyOf({ ...doc, sha256: DIGEST_B })],
      ["allow_html", keyOf({ ...doc, allowHtml: true })],
      ["path", keyOf({ ...doc, path: "z.md" })],
      ["a link target", keyOf(doc, new Map([...transformed, ["d.md", "d.html"]]))],
    ];
    for (const [what, other] of variants) {
      assert.ok(other);
      assert.notEqual(other, key, what);
    }
  });
});
