import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { loadConfig } from "./load.js";

const tempDirs: string[] = [];
after(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Load `text` as distributor.yaml and return the config_invalid error it must raise. */
async function configErrorOf(text: string): Promise<DistributorError> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-config-"));
  tempDirs.push(dir);
  await writeFile(path.join(dir, "distributor.yaml"), text);
  try {
    await loadConfig({ cwd: dir, env: {} });
  } catch (error) {
    assert.ok(error instanceof DistributorError, `not a DistributorError: ${String(error)}`);
    assert.equal(error.code, "config_invalid");
    return error;
  }
  assert.fail("the config loaded, but an error was expected");
}

/** The problem lines of a config error: "  <key path>: <message>". */
function problemLines(error: DistributorError): string[] {
  return error.message
    .split("\n")
    .filter((line) => line.startsWith("  "))
    .map((line) => line.trim());
}

/** A valid config whose `site` destination gets `extra` appended (indented 4). */
function siteWith(extra: string): string {
  return `
pipelines:
  reports:
    destinations: [site]
destinations:
  site:
    storage: { root: ./public }
${extra}`;
}

describe("config errors name the exact key path", () => {
  test("unknown keys at several depths, all reported at once", async () => {
    const error = await configErrorOf(`
pipelinez: {}
pipelines:
  reports:
    destinations: [site]
    includes: ["**"]
    transforms:
      - { transform: markdown_to_html, keepsource: true }
destinations:
  site:
    storage: { root: ./public, bucket: x }
    workflw: additive
    retention: { prune: { max_age: 1d, keep: 2 }, archive: {} }
`);
    assert.deepEqual(
      problemLines(error).sort(),
      [
        "pipelinez: unknown key",
        "destinations.site.retention.archive: unknown key",
        "destinations.site.retention.prune.keep: unknown key",
        "destinations.site.storage.bucket: unknown key",
        "destinations.site.workflw: unknown key",
        "pipelines.reports.includes: unknown key",
        "pipelines.reports.transforms[0].keepsource: unknown key",
      ].sort(),
    );
    assert.ok(error.paths.includes("destinations.site.workflw"));
    assert.ok(error.paths.includes("pipelines.reports.transforms[0].keepsource"));
  });

  test("wrong types and values", async () => {
    const error = await configErrorOf(`
pipelines:
  reports:
    source: 42
    destinations: site
    transforms:
      - transform: markdown_to_pdf
        keep_source: "yes"
destinations:
  site:
    storage: { type: ftp, root: ./public }
    workflow: replace
  other:
    storage: { type: s3, bucket: b, max_concurrency: 65, force_path_style: 1 }
    retention: { prune: { max_age: 30, keep_latest: 1.5 } }
`);
    const lines = problemLines(error);
    const expected = [
      "pipelines.reports.source: expected a string, got number 42",
      'pipelines.reports.destinations: expected a list, got string "site"',
      'pipelines.reports.transforms[0].transform: expected "markdown_to_html"',
      'pipelines.reports.transforms[0].keep_source: expected a boolean, got string "yes"',
      'destinations.site.storage.type: expected "filesystem" or "s3"',
      'destinations.site.workflow: expected "additive" or "replacement"',
      "destinations.other.storage.max_concurrency: must be a whole number from 1 to 64",
      "destinations.other.storage.force_path_style: expected a boolean, got number 1",
      "destinations.other.retention.prune.max_age: expected a string, got number 30",
      "destinations.other.retention.prune.keep_latest: must be a whole number, 0 or more",
    ];
    assert.deepEqual([...lines].sort(), [...expected].sort());
  });

  test("missing required keys", async () => {
    const error = await configErrorOf(`
pipelines:
  reports: { source: ./b }
destinations:
  site: { path: x }
  bucket: { storage: { type: s3 } }
  disk: { storage: { type: filesystem } }
`);
    assert.deepEqual(problemLines(error).sort(), [
      "destinations.bucket.storage.bucket: missing required key",
      "destinations.disk.storage.root: missing required key",
      "destinations.site.storage: missing required key",
      "pipelines.reports.destinations: missing required key",
    ]);
  });

  test("an empty file, a list, and empty maps", async () => {
    assert.match((await configErrorOf("")).message, /the file is empty/);
    assert.deepEqual(problemLines(await configErrorOf("- a\n")), [
      "(top level): expected a mapping, got a list",
    ]);
    assert.deepEqual(problemLines(await configErrorOf("pipelines: {}\ndestinations: {}\n")), [
      "pipelines: must define at least one pipeline",
      "destinations: must define at least one destination",
    ]);
  });

  test("bad ids: map keys and destination references", async () => {
    const error = await configErrorOf(`
pipelines:
  Reports: { destinations: [site] }
  ok: { destinations: [Site_, site] }
destinations:
  site: { storage: { root: a } }
  -bad: { storage: { root: b } }
  ${"x".repeat(65)}: { storage: { root: c } }
`);
    const paths = error.paths;
    assert.deepEqual(paths.sort(), [
      "destinations.-bad",
      `destinations.${"x".repeat(65)}`,
      "pipelines.Reports",
      "pipelines.ok.destinations[0]",
    ]);
    assert.match(error.message, /pipelines\.Reports: "Reports" is not a valid pipeline id/);
    assert.match(error.message, /destinations\.-bad: "-bad" is not a valid destination id/);
  });

  test("a bad id does not hide the problems inside its entry", async () => {
    const error = await configErrorOf(`
pipelines:
  Reports: { destinatons: [site], include: "**" }
destinations:
  site: { storage: { type: ftp, root: a } }
  -bad: { storage: { root: b }, workflw: additive }
`);
    assert.deepEqual(problemLines(error).sort(), [
      "destinations.-bad.workflw: unknown key",
      'destinations.-bad: "-bad" is not a valid destination id: use 1-64 lowercase letters, digits, "-" or "_", starting and ending with a letter or digit',
      'destinations.site.storage.type: expected "filesystem" or "s3"',
      "pipelines.Reports.destinations: missing required key",
      "pipelines.Reports.destinatons: unknown key",
      'pipelines.Reports.include: expected a list, got string "**"',
      'pipelines.Reports: "Reports" is not a valid pipeline id: use 1-64 lowercase letters, digits, "-" or "_", starting and ending with a letter or digit',
    ]);
  });

  test("a key with a dot is quoted in the key path", async () => {
    const error = await configErrorOf(siteWith("").replace("reports:", "my.reports:"));
    assert.deepEqual(error.paths, ['pipelines["my.reports"]']);
  });

  test("bad destination path and s3 prefix", async () => {
    const cases: Array<[string, RegExp]> = [
      ["/abs", /must be relative/],
      ["a/", /must not end with \//],
      ["a//b", /empty segment/],
      ["a/../b", /'\.\.' segment/],
      ["a\\\\b", /backslash/],
      ["x/.distributor.tmp", /reserved/],
    ];
    for (const [value, reason] of cases) {
      const error = await configErrorOf(siteWith(`    path: "${value}"\n`));
      assert.deepEqual(error.paths, ["destinations.site.path"], value);
      assert.match(error.message, reason);
    }
    const error = await configErrorOf(
      siteWith("  bucket: { storage: { type: s3, bucket: b, prefix: /sites } }\n"),
    );
    assert.deepEqual(error.paths, ["destinations.bucket.storage.prefix"]);
  });

  test("a NUL in a local path: a config error at its key, not a failed read", async () => {
    const error = await configErrorOf(
      'pipelines:\n  reports:\n    source: "./bun\\0dle"\n    destinations: [site]\ndestinations:\n  site:\n    storage: { root: "./pub\\0lic" }\n',
    );
    assert.deepEqual(problemLines(error), [
      "pipelines.reports.source: must not contain a NUL character",
      "destinations.site.storage.root: must not contain a NUL character",
    ]);
  });

  test("an empty region and a list of pipelines, in plain words", async () => {
    const region = await configErrorOf(
      siteWith("  bucket: { storage: { type: s3, bucket: b, region: '' } }\n"),
    );
    assert.deepEqual(problemLines(region), [
      "destinations.bucket.storage.region: must not be empty",
    ]);
    const list = await configErrorOf(
      "pipelines: []\ndestinations:\n  site: { storage: { root: ./p } }\n",
    );
    assert.deepEqual(problemLines(list), ["pipelines: expected a mapping, got a list"]);
  });

  test("bad urls", async () => {
    for (const url of ["ftp://example.com/", "reports.example.com/archive", "not a url"]) {
      const error = await configErrorOf(siteWith(`    url: "${url}"\n`));
      assert.deepEqual(problemLines(error), [
        "destinations.site.url: must be an absolute http(s) URL",
      ]);
    }
    const spaced = await configErrorOf(siteWith(`    url: "https://x.test/a b"\n`));
    assert.deepEqual(problemLines(spaced), [
      "destinations.site.url: must not contain spaces (percent-encode them: %20)",
    ]);
    for (const url of ["https://x.test/a?b=1", "https://x.test/a/#top", "https://x.test/?"]) {
      const error = await configErrorOf(siteWith(`    url: "${url}"\n`));
      assert.deepEqual(problemLines(error), [
        "destinations.site.url: must not have a query (?) or fragment (#): output paths are appended to it",
      ]);
    }
    const error = await configErrorOf(
      siteWith("  bucket: { storage: { type: s3, bucket: b, endpoint: 'localhost:7480' } }\n"),
    );
    assert.deepEqual(error.paths, ["destinations.bucket.storage.endpoint"]);
  });

  test("an S3 bucket name no server takes, and an endpoint with credentials, a query or a fragment", async () => {
    const s3 = (fields: string) => siteWith(`  bucket: { storage: { type: s3, ${fields} } }\n`);
    for (const bucket of ["b/x", "my bucket", "b\\tx", "x".repeat(256)]) {
      const error = await configErrorOf(s3(`bucket: "${bucket}"`));
      assert.deepEqual(
        problemLines(error),
        [
          'destinations.bucket.storage.bucket: must be a bucket name: letters, digits, ".", "-" and "_", at most 255 characters',
        ],
        bucket,
      );
    }
    for (const endpoint of [
      "http://key:secret@127.0.0.1:7480",
      "http://key@127.0.0.1:7480",
      "http://127.0.0.1:7480/?x=1",
      "http://127.0.0.1:7480/#top",
    ]) {
      const error = await configErrorOf(s3(`bucket: b, endpoint: "${endpoint}"`));
      assert.deepEqual(error.paths, ["destinations.bucket.storage.endpoint"], endpoint);
      assert.match(error.message, /without a user name, password, query or fragment/);
      assert.equal(error.message.includes("secret"), false, "the password is not repeated");
    }
    // A path stays: requests go below it (a server behind a proxy at that path).
    const dir = await mkdtemp(path.join(os.tmpdir(), "distributor-config-"));
    tempDirs.push(dir);
    const text = s3('bucket: My_old.bucket-1, endpoint: "https://gw.test:9000/s3"');
    await writeFile(path.join(dir, "distributor.yaml"), text);
    const config = await loadConfig({ cwd: dir, env: {} });
    const storage = config.destinations.get("bucket")?.storage;
    assert.equal(storage?.type === "s3" && storage.endpoint, "https://gw.test:9000/s3");
  });

  test("bad durations and a prune without max_age", async () => {
    for (const maxAge of ["30", "30x", "1.5d", "-1d", "d", "30 d", "30D"]) {
      const error = await configErrorOf(
        siteWith(`    retention: { prune: { max_age: "${maxAge}" } }\n`),
      );
      assert.deepEqual(error.paths, ["destinations.site.retention.prune.max_age"], maxAge);
      assert.match(error.message, /is not a duration/);
    }
    const error = await configErrorOf(siteWith("    retention: { prune: { keep_latest: 2 } }\n"));
    assert.deepEqual(problemLines(error), [
      'destinations.site.retention.prune.max_age: required when prune is set (a duration like "30d")',
    ]);
    for (const maxAge of ["99999999999999999999999d", "521900w"]) {
      const tooLong = await configErrorOf(
        siteWith(`    retention: { prune: { max_age: "${maxAge}" } }\n`),
      );
      assert.deepEqual(problemLines(tooLong), [
        `destinations.site.retention.prune.max_age: "${maxAge}" is longer than the 10,000 years timestamps span: nothing could ever be pruned; remove retention.prune to keep everything`,
      ]);
    }
  });

  test("unknown and repeated destination references", async () => {
    const error = await configErrorOf(`
pipelines:
  reports: { destinations: [site, static-site, site] }
destinations:
  site: { storage: { root: a }, workflow: nope }
`);
    assert.deepEqual(problemLines(error), [
      'destinations.site.workflow: expected "additive" or "replacement"',
      'pipelines.reports.destinations[1]: unknown destination "static-site" (defined: site)',
      'pipelines.reports.destinations[2]: destination "site" is listed twice',
    ]);
  });

  test("YAML syntax errors give the line and column", async () => {
    const error = await configErrorOf("pipelines:\n  reports: [a\ndestinations: {}\n");
    assert.match(error.message, /^Invalid YAML in .*distributor\.yaml/);
    assert.match(error.message, /distributor\.yaml:\d+:\d+: /);
    const duplicate = await configErrorOf("pipelines: {}\npipelines: {}\n");
    assert.match(
      duplicate.message,
      /distributor\.yaml:2:1: the key "pipelines" is given twice in one mapping$/m,
    );
  });

  test("YAML the parser accepts but a config must not hold: where, and in the file's terms", async () => {
    const twoDocuments = await configErrorOf("pipelines: {}\n---\ndestinations: {}\n");
    assert.match(
      twoDocuments.message,
      /distributor\.yaml:2:1: a second YAML document starts here \(after ---\); a config file holds one$/m,
    );
    assert.doesNotMatch(twoDocuments.message, /parseAllDocuments/);
    const alias = await configErrorOf("pipelines:\n  reports: *nope\n");
    assert.match(alias.message, /distributor\.yaml:2:12: Unresolved alias .*: nope\. Fix the file/);
    const tag = await configErrorOf("pipelines: !custom {}\n");
    assert.match(tag.message, /distributor\.yaml:1:12: Unresolved tag: !custom$/m);
  });

  test("a key given once as a number and once as a string is one key given twice", async () => {
    for (const [first, second] of [
      ["2026", '"2026"'],
      ["true", "'true'"],
      ['"7"', "7"],
    ]) {
      const error = await configErrorOf(
        `pipelines: {}\ndestinations:\n  ${first}: { storage: { root: ./a } }\n  ${second}: { storage: { root: ./b } }\n`,
      );
      assert.match(
        error.message,
        /distributor\.yaml:4:3: the key .* is given twice in one mapping$/m,
        second,
      );
    }
  });

  test("an alias of a node from inside it is config_invalid, not a stack overflow", async () => {
    for (const [text, at] of [
      ["pipelines: &a [*a]\ndestinations: {}\n", "pipelines.0"],
      ["x: &a {y: *a}\n", "x.y"],
      ["&top {pipelines: *top}\n", "pipelines"],
    ] as const) {
      const error = await configErrorOf(text);
      assert.match(
        error.message,
        new RegExp(`the value at ${at.replace(".", "\\.")} is an alias of a node that holds it`),
        text,
      );
    }
    // One node repeated in two places is not a loop.
    const shared = await configErrorOf("x: &a {k: 1}\ny: *a\n");
    assert.doesNotMatch(shared.message, /holds it/);
  });

  test("the message lists one problem per line and says what to do next", async () => {
    const error = await configErrorOf(siteWith("    workflw: x\n    pth: y\n"));
    const lines = error.message.split("\n");
    assert.match(lines[0] ?? "", /^Invalid configuration in .*distributor\.yaml \(2 problems\):$/);
    assert.deepEqual(lines.slice(1, 3), [
      "  destinations.site.workflw: unknown key",
      "  destinations.site.pth: unknown key",
    ]);
    assert.match(lines[3] ?? "", /configuration\.md/);
    // The same lines, marked as the message's own for the human output.
    assert.deepEqual(error.lines, lines);
    const yaml = await configErrorOf(
      "pipelines: {}\npipelines: {}\ndestinations: {}\ndestinations: {}\n",
    );
    assert.equal(yaml.lines?.length, 4, "a head, two problems and the advice");
    assert.deepEqual(yaml.lines, yaml.message.split("\n"));
  });
});
