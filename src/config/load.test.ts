import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import picomatch from "picomatch";
import { DistributorError } from "../errors.js";
import { loadConfig } from "./load.js";

const tempDirs: string[] = [];
after(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A fresh temp dir holding `name` with `text`; returns the dir. */
async function withConfig(text: string, name = "distributor.yaml"): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-config-"));
  tempDirs.push(dir);
  await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
  await writeFile(path.join(dir, name), text);
  return dir;
}

const MINIMAL = `
pipelines:
  reports:
    destinations: [site]
destinations:
  site:
    storage: { root: ./public }
`;

const FULL = `
# yaml-language-server: $schema=../schema/distributor.schema.json
pipelines:
  reports:
    source: ./bundles/latest
    destinations: [static-site, bucket]
    include: ["docs/**", "index.md"]
    exclude: ["docs/drafts/**"]
    transforms:
      - transform: markdown_to_html
        include: ["**/*.md"]
        keep_source: true
        allow_html: true
destinations:
  static-site:
    storage:
      type: filesystem
      root: /srv/www
    path: archive/2026
    url: https://reports.example.com/archive/
    workflow: replacement
    retention:
      prune:
        max_age: 2w
        keep_latest: 3
  bucket:
    storage:
      type: s3
      bucket: my-bucket
      prefix: sites/reports
      region: us-east-1
      endpoint: "http://127.0.0.1:7480"
      force_path_style: true
      max_concurrency: 4
`;

describe("loadConfig: happy paths", () => {
  test("reads every field of a full config", async () => {
    const dir = await withConfig(FULL);
    const config = await loadConfig({ cwd: dir, env: {} });
    assert.equal(config.file, path.join(dir, "distributor.yaml"));
    const reports = config.pipelines.get("reports");
    assert.ok(reports);
    assert.equal(reports.id, "reports");
    assert.equal(reports.source, path.join(dir, "bundles", "latest"));
    assert.deepEqual(reports.destinations, ["static-site", "bucket"]);
    assert.deepEqual(reports.include, ["docs/**", "index.md"]);
    assert.deepEqual(reports.exclude, ["docs/drafts/**"]);
    const [transform] = reports.transforms;
    assert.ok(transform);
    assert.equal(transform.transform, "markdown_to_html");
    assert.deepEqual(transform.include, ["**/*.md"]);
    assert.equal(transform.keepSource, true);
    assert.equal(transform.allowHtml, true);

    const site = config.destinations.get("static-site");
    assert.deepEqual(
      { ...site },
      {
        id: "static-site",
        storage: { type: "filesystem", root: path.resolve("/srv/www") },
        path: "archive/2026",
        url: "https://reports.example.com/archive/",
        workflow: "replacement",
        retention: { prune: { maxAgeSeconds: 14 * 86_400, keepLatest: 3 } },
      },
    );
    assert.deepEqual(config.destinations.get("bucket")?.storage, {
      type: "s3",
      bucket: "my-bucket",
      prefix: "sites/reports",
      region: "us-east-1",
      endpoint: "http://127.0.0.1:7480",
      forcePathStyle: true,
      maxConcurrency: 4,
    });
  });

  test("fills in the documented defaults", async () => {
    const dir = await withConfig(`
pipelines:
  reports:
    destinations: [site, bucket]
    transforms: [{ transform: markdown_to_html }]
destinations:
  site:
    storage: { root: ./public }
    retention: { prune: { max_age: 30d } }
  bucket:
    storage: { type: s3, bucket: b }
`);
    const config = await loadConfig({ cwd: dir, env: {} });
    const reports = config.pipelines.get("reports");
    assert.ok(reports);
    assert.equal(reports.source, undefined);
    assert.deepEqual(reports.include, ["**"]);
    assert.deepEqual(reports.exclude, []);
    const [transform] = reports.transforms;
    assert.deepEqual(transform?.include, ["**/*.md", "**/*.markdown"]);
    assert.equal(transform?.keepSource, false);
    assert.equal(transform?.allowHtml, false);
    const site = config.destinations.get("site");
    assert.deepEqual(site?.storage, { type: "filesystem", root: path.join(dir, "public") });
    assert.equal(site?.path, "");
    assert.equal(site?.url, undefined);
    assert.equal(site?.workflow, "additive");
    assert.deepEqual(site?.retention, { prune: { maxAgeSeconds: 30 * 86_400, keepLatest: 0 } });
    assert.deepEqual(config.destinations.get("bucket")?.storage, {
      type: "s3",
      bucket: "b",
      prefix: "",
      forcePathStyle: false,
      maxConcurrency: 16,
    });
    assert.equal(config.destinations.get("bucket")?.retention, undefined);
  });

  test("converts every duration unit to seconds", async () => {
    const cases: Array<[string, number]> = [
      ["45s", 45],
      ["10m", 600],
      ["12h", 43_200],
      ["1d", 86_400],
      ["2w", 1_209_600],
      ["0d", 0],
    ];
    for (const [maxAge, seconds] of cases) {
      const dir = await withConfig(`${MINIMAL}    retention: { prune: { max_age: ${maxAge} } }\n`);
      const config = await loadConfig({ cwd: dir, env: {} });
      assert.equal(config.destinations.get("site")?.retention?.prune?.maxAgeSeconds, seconds);
    }
  });

  test("reads a JSON config file", async () => {
    const json = {
      $schema: "./schema/distributor.schema.json",
      pipelines: { reports: { source: "in", destinations: ["site"] } },
      destinations: {
        site: { storage: { type: "filesystem", root: "out" }, workflow: "replacement" },
      },
    };
    const dir = await withConfig(JSON.stringify(json, null, 2), "distributor.json");
    const config = await loadConfig({ file: "distributor.json", cwd: dir, env: {} });
    assert.equal(config.pipelines.get("reports")?.source, path.join(dir, "in"));
    assert.equal(config.destinations.get("site")?.workflow, "replacement");
  });

  test("resolves relative paths against the config file's directory, not cwd", async () => {
    const dir = await withConfig(
      `
pipelines:
  reports: { source: ../bundles/b1, destinations: [site] }
destinations:
  site: { storage: { root: public/www } }
`,
      "conf/distributor.yaml",
    );
    const config = await loadConfig({ file: "conf/distributor.yaml", cwd: dir, env: {} });
    assert.equal(config.file, path.join(dir, "conf", "distributor.yaml"));
    assert.equal(config.pipelines.get("reports")?.source, path.join(dir, "bundles", "b1"));
    assert.deepEqual(config.destinations.get("site")?.storage, {
      type: "filesystem",
      root: path.join(dir, "conf", "public", "www"),
    });
  });

  test("keeps pipelines and destinations in file order", async () => {
    const dir = await withConfig(`
pipelines:
  zeta: { destinations: [b] }
  alpha: { destinations: [a] }
destinations:
  b: { storage: { root: b } }
  a: { storage: { root: a } }
`);
    const config = await loadConfig({ cwd: dir, env: {} });
    assert.deepEqual([...config.pipelines.keys()], ["zeta", "alpha"]);
    assert.deepEqual([...config.destinations.keys()], ["b", "a"]);
  });
});

describe("loadConfig: which file", () => {
  test("an explicit file wins over DISTRIBUTOR_CONFIG, which wins over the default", async () => {
    const dir = await withConfig(MINIMAL);
    await writeFile(path.join(dir, "other.yaml"), MINIMAL.replace("reports", "other"));
    await writeFile(path.join(dir, "third.yaml"), MINIMAL.replace("reports", "third"));
    const env = { DISTRIBUTOR_CONFIG: "other.yaml" };
    const fromDefault = await loadConfig({ cwd: dir, env: {} });
    const fromEnv = await loadConfig({ cwd: dir, env });
    const fromFile = await loadConfig({ cwd: dir, env, file: path.join(dir, "third.yaml") });
    assert.deepEqual([...fromDefault.pipelines.keys()], ["reports"]);
    assert.deepEqual([...fromEnv.pipelines.keys()], ["other"]);
    assert.deepEqual([...fromFile.pipelines.keys()], ["third"]);
  });

  test("a missing file says which file was looked for and how to choose another", async () => {
    const dir = await withConfig(MINIMAL, "elsewhere.yaml");
    await assert.rejects(loadConfig({ cwd: path.join(dir, "nope"), env: {} }), (error) => {
      assert.ok(error instanceof DistributorError);
      assert.equal(error.code, "config_invalid");
      assert.match(error.message, /nope[/\\]distributor\.yaml/);
      assert.match(error.message, /does not exist/);
      assert.match(error.message, /--config/);
      assert.match(error.message, /DISTRIBUTOR_CONFIG/);
      return true;
    });
    await assert.rejects(
      loadConfig({ cwd: dir, env: { DISTRIBUTOR_CONFIG: "gone.yaml" } }),
      /gone\.yaml \(named by DISTRIBUTOR_CONFIG\) does not exist/,
    );
    await assert.rejects(
      loadConfig({ cwd: dir, env: {}, file: "." }),
      /\(given with --config\) is a directory/,
    );
  });

  // The timeout only catches a hang: refused, each takes milliseconds.
  test("a FIFO or a device is refused at once, never waited on or read without end", {
    timeout: 20_000,
  }, async () => {
    const dir = await withConfig(MINIMAL);
    const fifo = path.join(dir, "config.fifo");
    execFileSync("mkfifo", [fifo]);
    for (const [file, env] of [
      [fifo, {}],
      ["/dev/zero", {}],
      [undefined, { DISTRIBUTOR_CONFIG: fifo }],
    ] as const) {
      await assert.rejects(loadConfig({ cwd: dir, env, file }), (error) => {
        assert.ok(error instanceof DistributorError);
        assert.equal(error.code, "config_invalid");
        assert.match(error.message, /is not a regular file \(a FIFO, a device or a socket\)/);
        return true;
      });
    }
  });
});

describe("loadConfig: environment interpolation", () => {
  test("substitutes set variables in any string value, and $${ escapes", async () => {
    const dir = await withConfig(`
pipelines:
  reports:
    source: \${BUNDLES}/latest
    destinations: [site]
    include: ["\${TOP}/**"]
destinations:
  site:
    storage: { type: s3, bucket: "\${BUCKET}", endpoint: "http://\${HOST}:7480" }
    url: https://x.example/$\${literal}/
`);
    const env = { BUNDLES: "/data/b", TOP: "docs", BUCKET: "bkt", HOST: "127.0.0.1" };
    const config = await loadConfig({ cwd: dir, env });
    const reports = config.pipelines.get("reports");
    assert.equal(reports?.source, path.resolve("/data/b/latest"));
    assert.deepEqual(reports?.include, ["docs/**"]);
    const site = config.destinations.get("site");
    assert.equal(site?.storage.type === "s3" && site.storage.bucket, "bkt");
    assert.equal(site?.storage.type === "s3" && site.storage.endpoint, "http://127.0.0.1:7480");
    assert.equal(site?.url, `https://x.example/$\{literal}/`);
  });

  test("an unset variable is a config error naming the key path and the variable", async () => {
    const dir = await withConfig(`
pipelines:
  reports: { source: "\${MISSING_DIR}", destinations: [site] }
destinations:
  site:
    storage: { root: ./public }
    url: "\${BASE_URL}"
`);
    await assert.rejects(loadConfig({ cwd: dir, env: { OTHER: "1" } }), (error) => {
      assert.ok(error instanceof DistributorError);
      assert.equal(error.code, "config_invalid");
      assert.match(
        error.message,
        /^ {2}pipelines\.reports\.source: environment variable MISSING_DIR is not set/m,
      );
      // Only the cause: the literal "${BASE_URL}" is not also reported as a bad URL.
      assert.match(error.message, /^ {2}destinations\.site\.url: environment variable BASE_URL/m);
      assert.doesNotMatch(error.message, /absolute http/);
      assert.deepEqual(error.paths, ["pipelines.reports.source", "destinations.site.url"]);
      return true;
    });
  });

  test("every unset variable of one value is named at once", async () => {
    const dir = await withConfig(
      MINIMAL.replace("./public", `"\${ROOT_A}/\${UNSET_B}/\${ROOT_A}"`),
    );
    await assert.rejects(loadConfig({ cwd: dir, env: {} }), (error) => {
      assert.ok(error instanceof DistributorError);
      assert.ok(
        error.message.includes(
          `destinations.site.storage.root: environment variable ROOT_A is not set (used as \${ROOT_A}); environment variable UNSET_B is not set (used as \${UNSET_B})\n`,
        ),
        error.message,
      );
      return true;
    });
  });

  test("a malformed ${ is a config error", async () => {
    const dir = await withConfig(`${MINIMAL}    path: "a/\${oops"\n`);
    await assert.rejects(loadConfig({ cwd: dir, env: {} }), /destinations\.site\.path: malformed/);
  });
});

describe("loadConfig: glob predicates", () => {
  test("selects applies include then exclude, and ** matches dotfiles", async () => {
    const dir = await withConfig(`
pipelines:
  all: { destinations: [site] }
  some:
    destinations: [site]
    include: ["docs/**", "*.txt"]
    exclude: ["docs/private/**", "**/*.tmp"]
    transforms: [{ transform: markdown_to_html }]
destinations:
  site: { storage: { root: out } }
`);
    const config = await loadConfig({ cwd: dir, env: {} });
    const all = config.pipelines.get("all");
    const some = config.pipelines.get("some");
    assert.ok(all && some);
    for (const p of ["a", "deep/er/file.bin", ".well-known/security.txt", "d/.hidden"]) {
      assert.equal(all.selects(p), true, p);
    }
    const expected: Record<string, boolean> = {
      "docs/a.md": true,
      "docs/.hidden/x.md": true,
      "docs/private/secret.md": false,
      "docs/x.tmp": false,
      "notes.txt": true,
      "sub/notes.txt": false,
      "other/a.md": false,
    };
    for (const [manifestPath, selected] of Object.entries(expected)) {
      assert.equal(some.selects(manifestPath), selected, manifestPath);
    }
    const matches = some.transforms[0]?.matches;
    assert.ok(matches);
    assert.equal(matches("a.md"), true);
    assert.equal(matches("x/y/b.markdown"), true);
    assert.equal(matches(".github/README.md"), true);
    assert.equal(matches("a.md.txt"), false);
    assert.equal(matches("a.MD"), false);
  });

  test('"**" anywhere in a list selects what picomatch would, and exclude still applies', async () => {
    const dir = await withConfig(`
pipelines:
  listed:
    destinations: [site]
    include: ["docs/**", "**"]
    exclude: ["**/*.tmp"]
destinations:
  site: { storage: { root: out } }
`);
    const config = await loadConfig({ cwd: dir, env: {} });
    const listed = config.pipelines.get("listed");
    assert.ok(listed);
    const starStar = picomatch("**", { dot: true });
    const clean = ["a", "a.tmp.md", ".x", "d/.hidden/y", "é/ü.txt", "a b/c"];
    for (const p of clean) assert.equal(listed.selects(p), starStar(p), p);
    assert.equal(listed.selects("deep/x.tmp"), false);
  });

  test("compiled globs decide as picomatch does, literal matches included", async () => {
    // "(a|b).md" matches its own text only because picomatch compares the glob
    // with the path before trying its regex.
    const globs = ["(a|b).md", "a[b].md", "docs/*.{md,txt}", "x/**/y?.md", "!(z).md", "[", "***"];
    const pipelines = globs.map(
      (glob, i) => `  g${i}: { destinations: [site], include: [${JSON.stringify(glob)}] }`,
    );
    const dir = await withConfig(
      `pipelines:\n${pipelines.join("\n")}\ndestinations:\n  site: { storage: { root: out } }\n`,
    );
    const config = await loadConfig({ cwd: dir, env: {} });
    const paths = [
      "(a|b).md",
      "a.md",
      "a[b].md",
      "ab.md",
      "docs/a.md",
      "docs/a.txt",
      "docs/d/a.md",
    ];
    for (const [i, glob] of globs.entries()) {
      const selects = config.pipelines.get(`g${i}`)?.selects;
      assert.ok(selects);
      for (const p of [...paths, "x/y1.md", "x/q/r/y2.md", "z.md", "[", "a", ".h/y.md"]) {
        assert.equal(selects(p), picomatch(glob, { dot: true })(p), `${glob} on ${p}`);
      }
    }
  });

  test("a glob picomatch cannot compile is a config error naming it", async () => {
    const long = "a".repeat(70_000);
    const dir = await withConfig(
      MINIMAL.replace("destinations: [site]", `destinations: [site]\n    include: ["${long}"]`),
    );
    await assert.rejects(loadConfig({ cwd: dir, env: {} }), (error) => {
      assert.ok(error instanceof DistributorError);
      assert.equal(error.code, "config_invalid");
      assert.match(error.message, /pipelines\.reports\.include\[0\]: invalid glob/);
      return true;
    });
  });

  test("a mistyped glob is a config error, never a pattern that matches nothing", async () => {
    // picomatch alone turns these into a regex that never matches: an exclude
    // would then keep nothing out.
    const cases = [
      ["drafts/{a,b", "a `{` or `(` is not closed"],
      ["*.{md", "a `{` or `(` is not closed"],
      ["[z-a]*", "a `[...]` range runs backwards"],
    ];
    for (const [glob, reason] of cases) {
      const dir = await withConfig(
        MINIMAL.replace(
          "destinations: [site]",
          `destinations: [site]\n    exclude: ["ok/**", ${JSON.stringify(glob)}]`,
        ),
      );
      await assert.rejects(loadConfig({ cwd: dir, env: {} }), (error) => {
        assert.ok(error instanceof DistributorError);
        assert.equal(error.code, "config_invalid");
        assert.ok(
          error.message.includes(
            `pipelines.reports.exclude[1]: invalid glob ${JSON.stringify(glob)}: ${reason}`,
          ),
          error.message,
        );
        return true;
      });
    }
  });

  test("a key __proto__ is a config error wherever it is, never silently dropped", async () => {
    const cases: [string, string][] = [
      [
        `${MINIMAL}  __proto__: { storage: { root: /etc } }\n`,
        'destinations.__proto__: "__proto__" is not a valid destination id',
      ],
      [
        MINIMAL.replace("  reports:", "  __proto__:"),
        'pipelines.__proto__: "__proto__" is not a valid pipeline id',
      ],
      [
        MINIMAL.replace("{ root: ./public }", "{ root: ./public, __proto__: { root: /etc } }"),
        'destinations.site.storage.__proto__: "__proto__" is not a key distributor knows',
      ],
    ];
    for (const [text, expected] of cases) {
      const dir = await withConfig(text);
      await assert.rejects(loadConfig({ cwd: dir, env: {} }), (error) => {
        assert.ok(error instanceof DistributorError);
        assert.equal(error.code, "config_invalid");
        assert.ok(error.message.includes(expected), error.message);
        return true;
      });
    }
  });

  test("a config file that is not UTF-8 is refused, naming the line", async () => {
    // root: ./publé, saved as Latin-1 (é is the one byte 0xe9).
    const [before, after] = MINIMAL.split("./public");
    const latin1 = Buffer.concat([
      Buffer.from(`${before}./publ`),
      Buffer.from([0xe9]),
      Buffer.from(after ?? ""),
    ]);
    const dir = await withConfig("");
    await writeFile(path.join(dir, "distributor.yaml"), latin1);
    await assert.rejects(loadConfig({ cwd: dir, env: {} }), (error) => {
      assert.ok(error instanceof DistributorError);
      assert.equal(error.code, "config_invalid");
      assert.match(error.message, /is not valid UTF-8 text \(line 7\)\. Save it as UTF-8\./);
      return true;
    });
  });

  test("an empty include selects nothing", async () => {
    const dir = await withConfig(
      MINIMAL.replace("destinations: [site]", "destinations: [site]\n    include: []"),
    );
    const config = await loadConfig({ cwd: dir, env: {} });
    assert.equal(config.pipelines.get("reports")?.selects("a.md"), false);
  });
});
