import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { classifyState } from "./read.js";
import type { CatalogState, OutputRecord } from "./types.js";
import { outputUrl, serializeState } from "./write.js";

const D1 = `sha256:${"0".repeat(64)}`;
const D2 = `sha256:${"f".repeat(64)}`;

function record(path: string, extra: Partial<OutputRecord> = {}): OutputRecord {
  return {
    path,
    pipeline_id: "reports",
    destination_id: "site",
    source: { id: "b1", digest: D1, created: "2026-06-04T11:55:00+02:00" },
    kind: "source",
    sha256: D2,
    size: 3,
    created_at: "2026-06-04T12:00:00Z",
    updated_at: "2026-06-04T12:00:00Z",
    ...extra,
  };
}

function state(outputs: OutputRecord[]): CatalogState {
  return {
    schema_version: 4,
    distributor_version: "0.1.0",
    created_at: "2026-06-04T12:00:00Z",
    updated_at: "2026-06-04T12:10:00Z",
    state: { mode: "catalog" },
    outputs,
  };
}

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("serializeState", () => {
  test("writes the exact canonical form: key order, 2 spaces, trailing newline", () => {
    // Keys given in a scrambled order must come out in the seed's order.
    const scrambled = {
      updated_at: "2026-06-04T12:10:00Z",
      size: 7,
      url: "https://x.test/a/r.html",
      transform: "markdown_to_html",
      kind: "generated",
      source_path: "r.md",
      sha256: D2,
      source: { created: "2026-06-04T11:55:00Z", digest: D1, id: "b1" },
      destination_id: "site",
      pipeline_id: "reports",
      created_at: "2026-06-04T12:00:00Z",
      path: "r.html",
    } as OutputRecord;
    const expected = `{
  "schema_version": 4,
  "distributor_version": "0.1.0",
  "created_at": "2026-06-04T12:00:00Z",
  "updated_at": "2026-06-04T12:10:00Z",
  "state": {
    "mode": "catalog"
  },
  "outputs": [
    {
      "path": "r.html",
      "pipeline_id": "reports",
      "destination_id": "site",
      "source": {
        "id": "b1",
        "digest": "${D1}",
        "created": "2026-06-04T11:55:00Z"
      },
      "kind": "generated",
      "source_path": "r.md",
      "transform": "markdown_to_html",
      "url": "https://x.test/a/r.html",
      "sha256": "${D2}",
      "size": 7,
      "created_at": "2026-06-04T12:00:00Z",
      "updated_at": "2026-06-04T12:10:00Z"
    }
  ]
}
`;
    assert.equal(decode(serializeState(state([scrambled]))), expected);
  });

  test("omits absent optional fields and an absent distributor_version", () => {
    const bare = state([record("a.txt")]);
    delete bare.distributor_version;
    const out = decode(serializeState(bare));
    for (const key of ["distributor_version", "source_path", "transform", "url"]) {
      assert.ok(!out.includes(`"${key}"`), `${key} should be omitted`);
    }
    assert.ok(out.endsWith("]\n}\n"));
  });

  test("empty outputs serialize as an empty array", () => {
    assert.match(decode(serializeState(state([]))), /"outputs": \[\]\n\}\n$/);
  });

  test("sorts outputs by UTF-8 bytes, not by JS string order", () => {
    // UTF-16 order would put the astral emoji (a surrogate, 0xD83D) before U+FF5A;
    // UTF-8 order puts U+FF5A (0xEF..) before it (0xF0..).
    const paths = ["😀.txt", "é.txt", "ｚ.txt", "z.txt", "Z.txt", "a/b.txt", "a.txt"];
    const out = serializeState(state(paths.map((p) => record(p))));
    const written = (JSON.parse(decode(out)) as CatalogState).outputs.map((r) => r.path);
    assert.deepEqual(written, ["Z.txt", "a.txt", "a/b.txt", "z.txt", "é.txt", "ｚ.txt", "😀.txt"]);
    assert.notDeepEqual(written, [...paths].sort());
  });

  test("does not reorder the caller's array", () => {
    const outputs = [record("b"), record("a")];
    serializeState(state(outputs));
    assert.deepEqual(
      outputs.map((r) => r.path),
      ["b", "a"],
    );
  });

  test("round-trips: serialize then classify gives back a valid, equal state", () => {
    const original = state([
      record("b/é page.html", {
        kind: "generated",
        source_path: "b/é page.md",
        transform: "markdown_to_html",
        url: outputUrl("https://x.test/a", "b/é page.html"),
      }),
      record("a.txt", { size: 0 }),
    ]);
    const result = classifyState({ bytes: serializeState(original) });
    assert.equal(result.class, "valid");
    const sorted = { ...original, outputs: [original.outputs[1], original.outputs[0]] };
    assert.deepEqual(result.class === "valid" ? result.state : null, sorted);
  });
});

describe("outputUrl", () => {
  const cases: Array<[string, string, string]> = [
    ["https://x.test/archive/", "report.html", "https://x.test/archive/report.html"],
    ["https://x.test/archive", "report.html", "https://x.test/archive/report.html"],
    ["https://x.test", "a b/é.html", "https://x.test/a%20b/%C3%A9.html"],
    ["http://x.test/", "q?#%.txt", "http://x.test/q%3F%23%25.txt"],
    ["https://x.test/", "dir/😀.txt", "https://x.test/dir/%F0%9F%98%80.txt"],
  ];
  for (const [base, path, expected] of cases) {
    test(`${base} + ${path}`, () => assert.equal(outputUrl(base, path), expected));
  }
});
