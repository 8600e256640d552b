import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test } from "node:test";
import { classifyState, describeState } from "./read.js";

const D1 = `sha256:${"0123456789abcdef".repeat(4)}`;
const D2 = `sha256:${"abcdef".repeat(10)}abcd`;

/** The seed's example state, as a fresh mutable object. */
function seedExample(): Record<string, unknown> {
  return {
    schema_version: 4,
    distributor_version: "dev",
    created_at: "2026-06-04T12:00:00Z",
    updated_at: "2026-06-04T12:10:00Z",
    state: { mode: "catalog" },
    outputs: [
      {
        path: "report.html",
        pipeline_id: "reports",
        destination_id: "static-site",
        source: { id: "reports.example.2026-06-04", digest: D1, created: "2026-06-04T11:55:00Z" },
        kind: "generated",
        source_path: "report.md",
        transform: "markdown_to_html",
        url: "https://reports.example.com/archive/report.html",
        sha256: D2,
        size: 2345,
        created_at: "2026-06-04T12:00:00Z",
        updated_at: "2026-06-04T12:10:00Z",
      },
      {
        path: "data/table.csv",
        pipeline_id: "reports",
        destination_id: "static-site",
        source: {
          id: "reports.example.2026-06-04",
          digest: D1,
          created: "2026-06-04T11:55:00+02:00",
        },
        kind: "source",
        sha256: D1,
        size: 0,
        created_at: "2026-06-04T12:00:00Z",
        updated_at: "2026-06-04T12:10:00.25Z",
      },
    ],
  };
}

const bytes = (value: unknown) => ({ bytes: new TextEncoder().encode(JSON.stringify(value)) });
const text = (value: string) => ({ bytes: new TextEncoder().encode(value) });

/** Marks a field to delete in {@link edited}. */
const DELETE = Symbol("delete");

/** The seed example with the value at a dotted path (`outputs.0.size`) set or deleted. */
function edited(edits: Record<string, unknown>): Record<string, unknown> {
  const doc = seedExample();
  for (const [dotted, value] of Object.entries(edits)) {
    const keys = dotted.split(".");
    const last = keys.pop() as string;
    let target = doc as Record<string, unknown>;
    for (const key of keys) target = target[key] as Record<string, unknown>;
    if (value === DELETE) delete target[last];
    else target[last] = value;
  }
  return doc;
}

describe("classifyState: classes", () => {
  test("nothing there is missing", () => {
    assert.deepEqual(classifyState(null), { class: "missing" });
  });

  test("the seed example is valid and carried as parsed", () => {
    const result = classifyState(bytes(seedExample()));
    assert.equal(result.class, "valid");
    assert.deepEqual(result.class === "valid" && result.state, seedExample());
  });

  test("an empty outputs array is valid, distributor_version optional", () => {
    const result = classifyState(bytes(edited({ outputs: [], distributor_version: DELETE })));
    assert.equal(result.class, "valid");
  });

  for (const version of [1, 2, 3]) {
    test(`schema_version ${version} is legacy whatever else it holds`, () => {
      assert.deepEqual(classifyState(bytes({ schema_version: version, anything: [1] })), {
        class: "legacy",
        schemaVersion: version,
      });
    });
  }

  for (const version of [5, 12]) {
    test(`schema_version ${version} is unsupported`, () => {
      assert.deepEqual(classifyState(bytes({ schema_version: version })), {
        class: "unsupported",
        schemaVersion: version,
      });
    });
  }

  // Past 2^53 JSON.parse rounds, but to whole numbers still above 4 (SPEC §5).
  for (const written of ["9007199254740993", "1e300"]) {
    test(`schema_version ${written} is unsupported`, () => {
      assert.deepEqual(classifyState(text(`{"schema_version": ${written}}`)), {
        class: "unsupported",
        schemaVersion: JSON.parse(written) as number,
      });
    });
  }

  test("a symlink or directory at the state path is invalid", () => {
    const result = classifyState({ notAFile: true });
    assert.equal(result.class, "invalid");
    assert.match(describeState(result), /not a regular file/);
  });
});

describe("classifyState: unreadable files are invalid", () => {
  const cases: Array<[string, { bytes: Uint8Array }, RegExp]> = [
    ["not UTF-8", { bytes: new Uint8Array([0x7b, 0xff, 0x7d]) }, /not UTF-8/],
    [
      "a byte order mark",
      { bytes: new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) },
      /byte order mark/,
    ],
    ["not JSON", text("{schema_version: 4}"), /^not JSON/],
    ["empty", text(""), /^not JSON/],
    ["an array", text("[4]"), /must be a JSON object/],
    ["null", text("null"), /must be a JSON object/],
    ["no schema_version", text('{"outputs": []}'), /^schema_version: missing/],
    [
      "a string schema_version",
      text('{"schema_version": "4"}'),
      /^schema_version: not a positive integer/,
    ],
    ["a fractional schema_version", text('{"schema_version": 3.5}'), /not a positive integer/],
    ["schema_version 0", text('{"schema_version": 0}'), /not a positive integer/],
    ["a negative schema_version", text('{"schema_version": -4}'), /not a positive integer/],
  ];
  for (const [name, input, reason] of cases) {
    test(name, () => {
      const result = classifyState(input);
      assert.equal(result.class, "invalid");
      assert.match(result.class === "invalid" ? result.reason : "", reason);
    });
  }
});

describe("classifyState: each broken rule of schema 4 names its location", () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["unknown top-level field", { serial: 1 }, "serial: unknown field"],
    [
      "distributor_version not a string",
      { distributor_version: 1 },
      "distributor_version: must be a string",
    ],
    ["created_at missing", { created_at: DELETE }, "created_at: missing"],
    [
      "updated_at not RFC 3339",
      { updated_at: "2026-06-04" },
      "updated_at: not an RFC 3339 timestamp",
    ],
    ["state missing", { state: DELETE }, "state: missing"],
    ["state.mode wrong", { "state.mode": "files" }, 'state.mode: must be "catalog"'],
    ["state extra key", { "state.serial": 2 }, "state.serial: unknown field"],
    ["state not an object", { state: "catalog" }, "state: must be a JSON object"],
    ["outputs not an array", { outputs: {} }, "outputs: must be an array"],
    ["outputs missing", { outputs: DELETE }, "outputs: missing"],
    ["record not an object", { "outputs.1": "x" }, "outputs[1]: must be a JSON object"],
    [
      "record unknown field",
      { "outputs.0.workflow": "additive" },
      "outputs[0].workflow: unknown field",
    ],
    ["path missing", { "outputs.0.path": DELETE }, "outputs[0].path: missing"],
    [
      "path absolute",
      { "outputs.0.path": "/etc/passwd" },
      "outputs[0].path: not a clean path: must be relative (no leading /)",
    ],
    [
      "path with ..",
      { "outputs.1.path": "a/../b" },
      "outputs[1].path: not a clean path: must not contain a '..' segment",
    ],
    [
      "path reserved",
      { "outputs.1.path": ".distributor.json" },
      "outputs[1].path: not a clean path: must not contain a segment starting with '.distributor.'",
    ],
    [
      "path duplicated",
      { "outputs.1.path": "report.html" },
      'outputs[1].path: duplicate of outputs[0].path "report.html"',
    ],
    [
      "pipeline_id uppercase",
      { "outputs.0.pipeline_id": "Reports" },
      "outputs[0].pipeline_id: not a slug-like id",
    ],
    [
      "destination_id ends with -",
      { "outputs.0.destination_id": "site-" },
      "outputs[0].destination_id: not a slug-like id",
    ],
    [
      "destination_id too long",
      { "outputs.0.destination_id": "a".repeat(65) },
      "outputs[0].destination_id: not a slug-like id",
    ],
    ["source missing", { "outputs.0.source": DELETE }, "outputs[0].source: missing"],
    [
      "source extra key",
      { "outputs.0.source.files": [] },
      "outputs[0].source.files: unknown field",
    ],
    ["source.id empty", { "outputs.0.source.id": "" }, "outputs[0].source.id: not a manifest id"],
    [
      "source.digest uppercase",
      { "outputs.0.source.digest": D1.toUpperCase() },
      "outputs[0].source.digest: not a lowercase sha256:<64 hex> digest",
    ],
    [
      "source.created bad",
      { "outputs.0.source.created": "June 4" },
      "outputs[0].source.created: not an RFC 3339 timestamp",
    ],
    ["kind unknown", { "outputs.0.kind": "copy" }, "outputs[0].kind: not source or generated"],
    [
      "generated without source_path",
      { "outputs.0.source_path": DELETE },
      "outputs[0].source_path: missing (required for generated outputs)",
    ],
    [
      "generated without transform",
      { "outputs.0.transform": DELETE },
      "outputs[0].transform: missing (required for generated outputs)",
    ],
    [
      "unknown transform",
      { "outputs.0.transform": "pdf" },
      "outputs[0].transform: not a known transform (markdown_to_html)",
    ],
    [
      "source_path not clean",
      { "outputs.0.source_path": "a//b.md" },
      "outputs[0].source_path: not a clean path: must not contain an empty segment (//)",
    ],
    [
      "source with source_path",
      { "outputs.1.source_path": "x.csv" },
      "outputs[1].source_path: not allowed for source outputs",
    ],
    [
      "source with transform",
      { "outputs.1.transform": "markdown_to_html" },
      "outputs[1].transform: not allowed for source outputs",
    ],
    [
      "url relative",
      { "outputs.0.url": "/archive/report.html" },
      "outputs[0].url: not an absolute http or https URL",
    ],
    [
      "url ftp",
      { "outputs.0.url": "ftp://example.com/report.html" },
      "outputs[0].url: not an absolute http or https URL",
    ],
    [
      "url without a host",
      { "outputs.0.url": "http:report.html" },
      "outputs[0].url: not an absolute http or https URL",
    ],
    ["url null", { "outputs.0.url": null }, "outputs[0].url: must be a string"],
    [
      "sha256 short",
      { "outputs.0.sha256": "sha256:abc" },
      "outputs[0].sha256: not a lowercase sha256:<64 hex> digest",
    ],
    [
      "sha256 without prefix",
      { "outputs.0.sha256": "a".repeat(64) },
      "outputs[0].sha256: not a lowercase sha256:<64 hex> digest",
    ],
    ["size negative", { "outputs.1.size": -1 }, "outputs[1].size: not an integer zero or greater"],
    [
      "size fractional",
      { "outputs.1.size": 1.5 },
      "outputs[1].size: not an integer zero or greater",
    ],
    [
      "size a string",
      { "outputs.1.size": "12" },
      "outputs[1].size: not an integer zero or greater",
    ],
    [
      "created_at not a day",
      { "outputs.1.created_at": "2026-02-30T00:00:00Z" },
      "outputs[1].created_at: not an RFC 3339 timestamp",
    ],
    ["updated_at missing", { "outputs.1.updated_at": DELETE }, "outputs[1].updated_at: missing"],
    [
      "first record's source.created missing",
      { "outputs.0.source.created": DELETE },
      "outputs[0].source.created: missing",
    ],
  ];
  for (const [name, edits, reason] of cases) {
    test(name, () => {
      const result = classifyState(bytes(edited(edits)));
      assert.equal(result.class, "invalid");
      const actual = result.class === "invalid" ? result.reason : JSON.stringify(result);
      assert.ok(actual.startsWith(reason), `reason was ${JSON.stringify(actual)}`);
    });
  }

  test("the first document a process reads is checked in full, missing fields included", () => {
    // Checks remember the last string they passed; in a fresh process nothing
    // is remembered yet, and a missing field must not pass for "the same".
    const doc = edited({ "outputs.0.source.created": DELETE, "outputs.0.created_at": DELETE });
    const script = `
      const { classifyState } = await import(${JSON.stringify(new URL("./read.js", import.meta.url).href)});
      const bytes = new TextEncoder().encode(process.argv[1]);
      process.stdout.write(JSON.stringify(classifyState({ bytes })));`;
    const out = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", script, JSON.stringify(doc)],
      { encoding: "utf8" },
    );
    assert.deepEqual(JSON.parse(out), {
      class: "invalid",
      reason: "outputs[0].source.created: missing (and 1 more problems)",
    });
  });

  test("several broken rules: the first is named and the rest counted", () => {
    const result = classifyState(bytes(edited({ "outputs.0.size": -1, "outputs.1.sha256": "x" })));
    assert.deepEqual(result, {
      class: "invalid",
      reason: "outputs[0].size: not an integer zero or greater (and 1 more problems)",
    });
  });
});

describe("describeState", () => {
  test("names the class and its detail", () => {
    assert.equal(describeState({ class: "missing" }), "missing");
    assert.equal(
      describeState({ class: "unsupported", schemaVersion: 7 }),
      "unsupported (schema_version 7)",
    );
    assert.equal(describeState({ class: "invalid", reason: "x: missing" }), "invalid (x: missing)");
  });
});
