import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { isRfc3339 } from "../timestamps.js";
import { formatLocation, MEDIA_TYPE_MAX, parseManifest, sourceDigest } from "./manifest.js";

const HEX = "a".repeat(64);
const goodFile = { path: "report.md", size: 12, sha256: `sha256:${HEX}` };

function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema_version: 1,
    id: "reports.example.2026-06-04",
    created: "2026-06-04T11:55:00Z",
    files: [goodFile],
    ...overrides,
  };
}

function bytes(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value), "utf8");
}

/** Parse and expect source_invalid whose message mentions every `fragments`. */
function expectInvalid(input: Uint8Array, ...fragments: string[]): DistributorError {
  let caught: unknown;
  try {
    parseManifest(input);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DistributorError, "expected a DistributorError");
  assert.equal(caught.code, "source_invalid");
  for (const fragment of fragments) {
    assert.ok(caught.message.includes(fragment), `message lacks "${fragment}":\n${caught.message}`);
  }
  assert.deepEqual(caught.paths, ["manifest.json"]);
  return caught;
}

function withFile(file: Record<string, unknown>): Uint8Array {
  return bytes(manifest({ files: [goodFile, file] }));
}

describe("parseManifest", () => {
  test("accepts a valid manifest and keeps files in order", () => {
    const second = {
      path: "a/b.png",
      size: 0,
      sha256: `sha256:${"0".repeat(64)}`,
      media_type: "image/png",
    };
    const parsed = parseManifest(bytes(manifest({ files: [goodFile, second] })));
    assert.equal(parsed.identity.id, "reports.example.2026-06-04");
    assert.equal(parsed.identity.created, "2026-06-04T11:55:00Z");
    assert.deepEqual(parsed.files, [goodFile, second]);
  });

  test("an empty files array is valid", () => {
    assert.deepEqual(parseManifest(bytes(manifest({ files: [] }))).files, []);
  });

  test("unknown top-level fields are allowed and ignored", () => {
    const parsed = parseManifest(bytes(manifest({ producer: { name: "x" }, notes: 3 })));
    assert.equal(parsed.files.length, 1);
  });

  test("created is copied as written, offsets and fractions included", () => {
    const created = "2026-06-04T13:55:00.123+02:00";
    assert.equal(parseManifest(bytes(manifest({ created }))).identity.created, created);
  });

  test("schema_version must be 1", () => {
    expectInvalid(bytes(manifest({ schema_version: 2 })), "schema_version: must be 1");
    expectInvalid(bytes(manifest({ schema_version: "1" })), "schema_version");
    expectInvalid(bytes(manifest({ schema_version: undefined })), "schema_version");
  });

  test("id must be 1-200 characters of the allowed set", () => {
    assert.equal(parseManifest(bytes(manifest({ id: "x".repeat(200) }))).identity.id.length, 200);
    expectInvalid(bytes(manifest({ id: "" })), "id: must be 1-200");
    expectInvalid(bytes(manifest({ id: "x".repeat(201) })), "id: must be 1-200");
    expectInvalid(bytes(manifest({ id: "has space" })), "id:");
    expectInvalid(bytes(manifest({ id: "a/b" })), "id:");
    expectInvalid(bytes(manifest({ id: 7 })), "id: must be a string");
  });

  test("created must be RFC3339", () => {
    for (const created of [
      "2026-06-04",
      "2026-06-04 11:55:00Z",
      "2026-13-04T11:55:00Z",
      "yesterday",
    ]) {
      expectInvalid(bytes(manifest({ created })), "created: must be an RFC3339");
    }
  });

  test("files must be an array of objects", () => {
    expectInvalid(bytes(manifest({ files: {} })), "files: must be an array");
    expectInvalid(bytes(manifest({ files: undefined })), "files");
    expectInvalid(bytes(manifest({ files: ["report.md"] })), "files[0]: must be an object");
  });

  test("file paths must be clean", () => {
    expectInvalid(
      withFile({ ...goodFile, path: "../up.md" }),
      "files[1].path: must not contain a '..' segment",
    );
    expectInvalid(withFile({ ...goodFile, path: "/abs.md" }), "files[1].path: must be relative");
    expectInvalid(
      withFile({ ...goodFile, path: "a\\b.md" }),
      "files[1].path: must not contain a backslash",
    );
    expectInvalid(withFile({ ...goodFile, path: ".distributor.json" }), "files[1].path:");
    expectInvalid(withFile({ ...goodFile, path: "" }), "files[1].path: must not be empty");
  });

  test("file paths must be unique", () => {
    expectInvalid(
      withFile({ ...goodFile }),
      'files[1].path: "report.md" is already listed at files[0]',
    );
  });

  test("a duplicate path is reported with the other problems, not after they are fixed", () => {
    expectInvalid(
      withFile({ ...goodFile, sha256: "nope" }),
      "files[1].sha256:",
      'files[1].path: "report.md" is already listed at files[0]',
    );
  });

  test("size must be a whole number of bytes, 0 or greater", () => {
    expectInvalid(
      withFile({ ...goodFile, path: "x", size: -1 }),
      "files[1].size: must be 0 or greater",
    );
    expectInvalid(
      withFile({ ...goodFile, path: "x", size: 1.5 }),
      "files[1].size: must be a whole number",
    );
    expectInvalid(
      withFile({ ...goodFile, path: "x", size: "12" }),
      "files[1].size: must be a number",
    );
    // JSON.parse reads 1e400 as Infinity.
    const huge = new TextDecoder()
      .decode(withFile({ ...goodFile, path: "x", size: 424242 }))
      .replace("424242", "1e400");
    expectInvalid(
      new TextEncoder().encode(huge),
      "files[1].size: must be a whole number of bytes, at most 9007199254740991",
    );
  });

  test("media_type must be able to travel as a Content-Type header", () => {
    for (const bad of ["text/html\r\nx-evil: 1", "texte/é", " text/plain", "text/plain "]) {
      expectInvalid(
        withFile({ ...goodFile, path: "x", media_type: bad }),
        "files[1].media_type: must be a media type in printable ASCII",
      );
    }
    const good = parseManifest(
      withFile({ ...goodFile, path: "x", media_type: "text/csv; charset=utf-8" }),
    );
    assert.equal(good.files[1]?.media_type, "text/csv; charset=utf-8");
  });

  test("media_type is at most MEDIA_TYPE_MAX characters: a longer header fails on S3 halfway through a run", () => {
    const of = (length: number) => `text/${"x".repeat(length - 5)}`;
    expectInvalid(
      withFile({ ...goodFile, path: "x", media_type: of(MEDIA_TYPE_MAX + 1) }),
      `files[1].media_type: must be at most ${MEDIA_TYPE_MAX} characters`,
    );
    const longest = parseManifest(
      withFile({ ...goodFile, path: "x", media_type: of(MEDIA_TYPE_MAX) }),
    );
    assert.equal(longest.files[1]?.media_type?.length, MEDIA_TYPE_MAX);
  });

  test("sha256 must be sha256: and 64 lowercase hex digits", () => {
    const bad = [HEX, `sha256:${HEX.toUpperCase()}`, `sha256:${HEX.slice(1)}`, `SHA256:${HEX}`];
    for (const sha256 of bad) {
      expectInvalid(withFile({ ...goodFile, path: "x", sha256 }), "files[1].sha256: must be");
    }
  });

  test("media_type, when present, is a non-empty string", () => {
    expectInvalid(withFile({ ...goodFile, path: "x", media_type: 3 }), "files[1].media_type");
    expectInvalid(withFile({ ...goodFile, path: "x", media_type: "" }), "files[1].media_type");
  });

  test("unknown fields in a file entry are reported (typo guard)", () => {
    expectInvalid(
      withFile({ ...goodFile, path: "x", "media-type": "text/plain" }),
      'files[1]: unknown field "media-type"',
    );
  });

  test("a __proto__ key in a file entry is an unknown field, not a prototype", () => {
    // JSON.parse makes it an own property; the hand check and the schema must both see it.
    const input = Buffer.from(
      JSON.stringify(manifest({ files: [goodFile] })).replace(
        '"size":12',
        '"size":12,"__proto__":{"media_type":"x"}',
      ),
    );
    expectInvalid(input, 'files[0]: unknown field "__proto__"');
  });

  test("entries are fresh objects holding only the manifest fields", () => {
    const parsed = parseManifest(bytes(manifest({ note: "extra", files: [goodFile] })));
    assert.deepEqual(Object.keys(parsed.files[0] ?? {}), ["path", "size", "sha256"]);
    assert.equal(Object.getPrototypeOf(parsed.files[0]), Object.prototype);
  });

  test("lists every problem at once", () => {
    const input = bytes(manifest({ id: "", files: [{ ...goodFile, size: -1, sha256: "x" }] }));
    expectInvalid(input, "id:", "files[0].size", "files[0].sha256");
  });

  test("not JSON, not UTF-8 or not an object fails as source_invalid", () => {
    expectInvalid(Buffer.from("{ nope", "utf8"), "not valid JSON");
    expectInvalid(Uint8Array.from([0x7b, 0xff, 0x7d]), "not valid UTF-8");
    expectInvalid(bytes([1, 2]), "must be a JSON object");
    expectInvalid(bytes(null), "must be a JSON object");
  });
});

describe("sourceDigest", () => {
  test("is sha256 over the exact manifest bytes, whitespace included", () => {
    const compact = bytes(manifest());
    const pretty = Buffer.from(JSON.stringify(manifest(), null, 2), "utf8");
    const expected = `sha256:${createHash("sha256").update(compact).digest("hex")}`;
    assert.equal(sourceDigest(compact), expected);
    assert.equal(parseManifest(compact).identity.digest, expected);
    assert.notEqual(parseManifest(pretty).identity.digest, expected);
  });

  test("ignored top-level fields still change the digest", () => {
    const a = parseManifest(bytes(manifest())).identity.digest;
    const b = parseManifest(bytes(manifest({ extra: true }))).identity.digest;
    assert.notEqual(a, b);
  });
});

describe("helpers", () => {
  test("formatLocation renders indexes and keys", () => {
    assert.equal(formatLocation(["files", 3, "sha256"]), "files[3].sha256");
    assert.equal(formatLocation([]), "(top level)");
  });

  test("isRfc3339 checks calendar values", () => {
    assert.equal(isRfc3339("2024-02-29T00:00:00Z"), true);
    assert.equal(isRfc3339("2023-02-29T00:00:00Z"), false);
    assert.equal(isRfc3339("2026-06-04T24:00:00Z"), false);
    assert.equal(isRfc3339("2026-06-04t11:55:00z"), true);
    assert.equal(isRfc3339("2026-06-04T11:55:00+25:00"), false);
  });
});
