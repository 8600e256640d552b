import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import {
  ancestorsOf,
  baseName,
  cleanPathProblem,
  compareUtf8,
  hasReservedSegment,
  inRoot,
  isTempFolder,
  isTempName,
  isTempPath,
  nestedRootOf,
} from "./paths.js";
import { seededBelow } from "./random.fixtures.js";
import { tempPathIn } from "./storage/_fs-paths.js";

// The straightforward definitions the fast paths must agree with.
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const slowAncestors = (p: string) => {
  const segments = p.split("/");
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join("/"));
};

// Units chosen around every boundary that matters: ASCII, 2- and 3-byte
// characters, both surrogate halves (paired and lone), and U+E000-U+FFFF.
const ALPHABET = [
  "a",
  "b",
  "/",
  ".",
  "é",
  "\u07ff",
  "\u0800",
  "\ud7ff",
  "\ud83d",
  "\ude00",
  "\ue000",
  "\uffff",
  "\\",
  "\u0000",
];

function randomStrings(count: number, seed: number): string[] {
  const next = seededBelow(seed);
  return Array.from({ length: count }, () => {
    const length = next(6);
    return Array.from({ length }, () => ALPHABET[next(ALPHABET.length)]).join("");
  });
}

test("compareUtf8 orders exactly like the UTF-8 bytes, surrogates included", () => {
  const strings = randomStrings(400, 7);
  for (const a of strings)
    for (const b of strings)
      assert.equal(
        compareUtf8(a, b),
        byBytes(a, b),
        `${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
      );
});

test("compareUtf8 puts a surrogate pair after U+FFFF, unlike UTF-16 order", () => {
  assert.equal(compareUtf8("\ud83d\ude00", "\uffff"), 1);
  assert.equal(compareUtf8("a/b", "a/b"), 0);
  assert.equal(compareUtf8("a", "a/b"), -1);
  assert.equal(compareUtf8("a\ud83d", "a\ud83d\ude00"), -1);
});

test("cleanPathProblem accepts and rejects as the rule-by-rule checks do", () => {
  const rules = (p: string) =>
    Buffer.byteLength(p) <= 1024 &&
    !p.includes("\\") &&
    ![...p].some((c) => c.charCodeAt(0) < 0x20 || (c >= "\u007f" && c <= "\u009f")) &&
    // Only well-formed UTF-16 survives a round trip through UTF-8.
    Buffer.from(p).toString() === p &&
    p
      .split("/")
      .every((s) => s !== "" && s !== "." && s !== ".." && !s.startsWith(".distributor."));
  const samples = [
    ...randomStrings(2000, 11),
    "a/b.txt",
    ".",
    "..",
    "a/../b",
    "a/./b",
    "..a/b",
    ".hidden/x",
    ".distributor.json",
    "a/.distributor.tmp-1",
    "a/.distributorx",
    "x".repeat(1024),
    "x".repeat(1025),
    "é".repeat(512),
    "é".repeat(513),
    "a\u007fb",
    "a\u0085b",
    "a\u009f",
    "a\u00a0b",
    "a\ud800.txt",
    "a\udc00.txt",
    "\ud83d\ude00/x",
    "x/\ude00\ud83d",
  ];
  for (const p of samples) {
    if (p === "") continue;
    assert.equal(cleanPathProblem(p) === null, rules(p), JSON.stringify(p));
  }
});

test("cleanPathProblem still names the first broken rule", () => {
  assert.equal(cleanPathProblem("/a"), "must be relative (no leading /)");
  assert.equal(cleanPathProblem("a//b"), "must not contain an empty segment (//)");
  assert.equal(cleanPathProblem("a/.."), "must not contain a '..' segment");
  assert.equal(cleanPathProblem("x".repeat(1025)), "is longer than 1024 bytes");
  assert.equal(cleanPathProblem(""), "must not be empty");
  assert.equal(cleanPathProblem("", { allowEmpty: true }), null);
  assert.equal(cleanPathProblem("a\u0085b"), "must not contain NUL or control characters");
  assert.equal(
    cleanPathProblem("a\ud800.txt"),
    "must be valid Unicode (it holds a lone surrogate)",
  );
});

test("ancestorsOf and hasReservedSegment agree with splitting on /", () => {
  for (const p of [...randomStrings(500, 3), "a/b/c", "/a", "a/", "a//b", ""]) {
    assert.deepEqual(ancestorsOf(p), slowAncestors(p), JSON.stringify(p));
    const reserved = p.split("/").some((s) => s.startsWith(".distributor."));
    assert.equal(hasReservedSegment(p), reserved);
  }
  assert.equal(hasReservedSegment("a/.distributor.tmp-x/b"), true);
  assert.equal(hasReservedSegment("a/x.distributor.y"), false);
});

test("baseName takes the last segment; isTempPath a temp name, or a path in a temp folder", () => {
  const folder = ".distributor.tmp-0123456789abcdef-1z";
  assert.equal(baseName("a/b/c.txt"), "c.txt");
  assert.equal(baseName("top"), "top");
  assert.equal(isTempPath("docs/.distributor.tmp-x1"), true);
  assert.equal(isTempPath(folder), true);
  // Inside a temporary folder (a new folder not yet renamed into place).
  assert.equal(isTempPath(`${folder}/inside.txt`), true);
  assert.equal(isTempPath(`a/${folder}/b/inside.txt`), true);
  // Only a folder named as the tool names its own: not a user's notes.
  assert.equal(isTempPath(".distributor.tmp-notes/todo.txt"), false);
  assert.equal(isTempPath(".distributor.tmp-0123456789ABCDEF-1/x"), false);
  assert.equal(isTempPath("docs/x.distributor.tmp-1"), false);
  assert.equal(isTempPath("docs/.distributor.json"), false);
  assert.equal(isTempFolder(folder), true);
  assert.equal(isTempFolder(`a/${folder}/empty`), true);
  assert.equal(isTempFolder("a/.distributor.tmp-notes"), false);
});

test("the names the filesystem driver gives temp files and folders have the shape isTempName knows", () => {
  for (let i = 0; i < 40; i++) {
    const name = baseName(tempPathIn("/some/dir").split(path.sep).join("/"));
    assert.equal(isTempName(name), true, name);
  }
});

test("inRoot joins a name under a directory root and an S3 root, which ends with a slash", () => {
  assert.equal(inRoot("/srv/site", ".distributor.lock"), "/srv/site/.distributor.lock");
  assert.equal(inRoot("s3://bucket/p/", ".distributor.lock"), "s3://bucket/p/.distributor.lock");
});

test("nestedRootOf names the folder of another root's tool files, never this root's own", () => {
  const cases: [string, string | null][] = [
    ["sub/.distributor.json", "sub"],
    ["a/b/.distributor.lock", "a/b"],
    ["sub/.distributor.json/x", "sub"],
    ["a/.distributor.json/b/.distributor.lock", "a"],
    [".distributor.json", null],
    [".distributor.json/x/.distributor.lock", null],
    ["sub/.distributor.tmp-1", null],
    // Temporary folders mark no root either: the tool's own, or a user's of that name.
    ["sub/.distributor.tmp-0123456789abcdef-0/page.html", null],
    ["sub/.distributor.tmp-notes/todo.txt", null],
    // What is inside another root's state path still belongs to that root.
    ["sub/.distributor.json/.distributor.tmp-1", "sub"],
    ["sub/.distributor.json/.distributor.tmp-0123456789abcdef-0/x", "sub"],
    // A root inside a folder with a temporary name is still a root.
    ["sub/.distributor.tmp-notes/deeper/.distributor.json", "sub/.distributor.tmp-notes/deeper"],
    [".distributor.tmp-notes/deeper/.distributor.lock", ".distributor.tmp-notes/deeper"],
    [".distributor.tmp-notes/x.txt", null],
    [".distributor.tmp-1", null],
    ["sub/x.distributor.json", null],
    ["sub/page.html", null],
  ];
  for (const [path, root] of cases) assert.equal(nestedRootOf(path), root, path);
});
