/**
 * The run planner's case table: every row of SPEC §6 step 3, every per-output
 * rule, and every sentence of the seed's Workflow Semantics and Publish Planning
 * Outcomes. plan-run.test.ts checks the expectations; plan-run.invariants.test.ts
 * checks crash safety, idempotence and path hygiene over all of them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type Case,
  digestOf,
  input,
  listing,
  OLD_SOURCE,
  planned,
  record,
  valid,
} from "./plan-run.fixtures.js";

const A = planned("a.txt");
const B = planned("b.txt");
const PAGE = planned("docs/page.html", { from: "docs/page.md" });

const STEP3: Case[] = [
  {
    name: "force replaces a valid state, deleting everything listed",
    input: input({
      force: true,
      outputs: [A],
      state: valid(record("old.txt")),
      listing: listing("old.txt", "a.txt", ".distributor.json"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["a.txt", "old.txt"],
    reasons: { "a.txt": "force_replace rewrites everything" },
  },
  {
    name: "force replaces an invalid state",
    input: input({
      force: true,
      outputs: [A],
      state: { class: "invalid", reason: "not JSON" },
      listing: listing(".distributor.json"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: [],
  },
  {
    name: "force replaces an unsupported future state",
    input: input({
      force: true,
      outputs: [A, B],
      state: { class: "unsupported", schemaVersion: 9 },
      listing: listing("x/y.bin"),
    }),
    action: "force_replace",
    changes: ["a.txt create", "b.txt create"],
    deletes: ["x/y.bin"],
  },
  {
    name: "force replaces unmanaged content and planned unmanaged collisions",
    input: input({
      force: true,
      outputs: [A],
      listing: listing("a.txt", "index.html", { path: "link", type: "symlink" }),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["a.txt", "index.html", "link"],
  },
  {
    name: "force where this owner's old file stands where a planned output needs a folder",
    input: input({
      force: true,
      outputs: [planned("guide/index.html")],
      state: valid(record("guide")),
      listing: listing("guide"),
    }),
    action: "force_replace",
    changes: ["guide/index.html create"],
    deletes: ["guide"],
  },
  {
    name: "force where a folder of this owner's old files stands where a planned output needs a file",
    input: input({
      force: true,
      outputs: [planned("x")],
      state: valid(record("x/a.txt"), record("x/b.txt")),
      listing: listing("x/a.txt", "x/b.txt"),
    }),
    action: "force_replace",
    changes: ["x create"],
    deletes: ["x/a.txt", "x/b.txt"],
  },
  {
    name: "force of a replacement where this owner's old file and folder stand in the planned outputs' way",
    input: input({
      force: true,
      workflow: "replacement",
      outputs: [planned("guide/index.html"), planned("x")],
      state: valid(record("guide"), record("x/a.txt"), record("x/b.txt"), record("y.txt")),
      listing: listing("guide", "x/a.txt", "x/b.txt", "y.txt"),
    }),
    action: "force_replace",
    changes: ["guide/index.html create", "x create"],
    deletes: ["guide", "x/a.txt", "x/b.txt", "y.txt"],
  },
  {
    name: "force over a valid state holding this and another owner's outputs",
    input: input({
      force: true,
      outputs: [A],
      state: valid(record("a.txt"), record("old.txt"), record("z.txt", { owner: "docs/site" })),
      listing: listing("a.txt", "old.txt", "stray.txt", "z.txt"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["a.txt", "old.txt", "stray.txt", "z.txt"],
  },
  {
    name: "force over old outputs in folders it empties: this owner's, another owner's, unmanaged",
    input: input({
      force: true,
      outputs: [A],
      state: valid(record("old/page.html"), record("team/z.txt", { owner: "docs/site" })),
      listing: listing("old/page.html", "team/z.txt", "stray/s.txt"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["old/page.html", "stray/s.txt", "team/z.txt"],
  },
  {
    name: "force over this owner's old output inside a root nested in this one",
    input: input({
      force: true,
      outputs: [A],
      state: valid(record("n/sub/f.txt")),
      listing: listing("n/.distributor.json", "n/sub/f.txt"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["n/sub/f.txt"],
  },
  {
    name: "force of a replacement over this owner's old outputs in folders it empties",
    input: input({
      force: true,
      workflow: "replacement",
      outputs: [A],
      state: valid(record("old/page.html"), record("old/deep/b.txt")),
      listing: listing("old/page.html", "old/deep/b.txt"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["old/deep/b.txt", "old/page.html"],
  },
  {
    name: "force where an unmanaged file stands where a planned output needs a folder",
    input: input({
      force: true,
      outputs: [planned("guide/index.html")],
      state: valid(record("a.txt")),
      listing: listing("a.txt", "guide"),
    }),
    action: "force_replace",
    changes: ["guide/index.html create"],
    deletes: ["a.txt", "guide"],
  },
  {
    name: "force over legacy state",
    input: input({
      force: true,
      outputs: [A],
      state: { class: "legacy", schemaVersion: 3 },
      listing: listing("a.txt"),
    }),
    action: "force_replace",
    changes: ["a.txt create"],
    deletes: ["a.txt"],
  },
  {
    name: "invalid state fails as a conflict",
    input: input({
      outputs: [A],
      state: { class: "invalid", reason: "outputs[0].size: missing" },
      listing: listing("a.txt"),
    }),
    action: "fail_conflict",
    error: "state_conflict",
    errorPaths: [".distributor.json"],
  },
  {
    name: "unsupported state fails as a conflict",
    input: input({ outputs: [A], state: { class: "unsupported", schemaVersion: 5 } }),
    action: "fail_conflict",
    error: "state_conflict",
  },
  {
    name: "missing state and an empty root publish new",
    input: input({ outputs: [A, PAGE] }),
    action: "publish_new",
    changes: ["a.txt create", "docs/page.html create"],
    deletes: [],
  },
  {
    name: "missing state: reserved tool files do not make the root non-empty",
    input: input({
      outputs: [A],
      listing: listing(".distributor.lock", "d/.distributor.tmp-1", ".distributor.tmp-x/part"),
    }),
    action: "publish_new",
    changes: ["a.txt create"],
  },
  {
    name: "missing state: a planned path already in storage fails as unmanaged",
    input: input({ outputs: [A, B], listing: listing("a.txt", "other.txt") }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["a.txt"],
  },
  {
    name: "missing state: a non-empty root with no collision fails naming what is there",
    input: input({ outputs: [A], listing: listing("z.txt", "index.html", ".distributor.lock") }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["index.html", "z.txt"],
  },
  {
    name: "valid state: an unrecorded planned path in storage fails as unmanaged",
    input: input({
      outputs: [A, B],
      state: valid(record("a.txt")),
      listing: listing("a.txt", "b.txt"),
    }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["b.txt"],
  },
  {
    name: "valid state: a directory at a planned path fails as unmanaged",
    input: input({ outputs: [planned("docs")], state: valid(), listing: listing("docs/x.txt") }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["docs"],
  },
  {
    name: "valid state: a file where a planned output needs a directory fails",
    input: input({ outputs: [PAGE], state: valid(), listing: listing("docs") }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["docs"],
  },
  {
    name: "valid state and nothing to change is skip_same",
    input: input({
      outputs: [A, PAGE],
      state: valid(record("a.txt"), record("docs/page.html", { from: "docs/page.md" })),
      listing: listing("a.txt", "docs/page.html"),
    }),
    action: "skip_same",
    changes: ["a.txt unchanged", "docs/page.html unchanged"],
    deletes: [],
  },
  {
    name: "replacement with nothing to change is skip_same too",
    input: input({
      workflow: "replacement",
      outputs: [A],
      state: valid(record("a.txt"), record("b.txt", { owner: "other/site" })),
      listing: listing("a.txt", "b.txt"),
    }),
    action: "skip_same",
    changes: ["a.txt unchanged"],
  },
  {
    name: "legacy state: planned paths are written over, other files stay",
    input: input({
      outputs: [A, B],
      state: { class: "legacy", schemaVersion: 2 },
      listing: listing("a.txt", "old.html"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update", "b.txt create"],
    deletes: [],
    reasons: { "a.txt": "legacy" },
  },
  {
    name: "legacy state with replacement workflow deletes nothing (no records)",
    input: input({
      workflow: "replacement",
      outputs: [A],
      state: { class: "legacy", schemaVersion: 1 },
      listing: listing("a.txt", "old.html"),
    }),
    action: "replace_catalog",
    changes: ["a.txt update"],
    deletes: [],
  },
  {
    name: "legacy state with the outputs already in place is still upgraded, never skip_same",
    input: input({
      outputs: [A],
      state: { class: "legacy", schemaVersion: 3 },
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
  },
];

const PER_OUTPUT: Case[] = [
  {
    name: "create: no record",
    input: input({ outputs: [A, B], state: valid(record("a.txt")), listing: listing("a.txt") }),
    action: "upsert_additive",
    changes: ["a.txt unchanged", "b.txt create"],
    reasons: { "b.txt": "not in catalog", "a.txt": "same sha256 and size" },
  },
  {
    name: "update: the record has another sha256",
    input: input({
      outputs: [A],
      state: valid(record("a.txt", { content: "content of a.tx!" })),
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
    reasons: { "a.txt": "sha256 differs" },
  },
  {
    name: "update: the record has another size",
    input: input({
      outputs: [A],
      state: valid(record("a.txt", { size: 1 })),
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
    reasons: { "a.txt": "size differs" },
  },
  {
    name: "update: the recorded file is missing",
    input: input({
      outputs: [A, B],
      state: valid(record("a.txt"), record("b.txt")),
      listing: listing("b.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update", "b.txt unchanged"],
    reasons: { "a.txt": "file missing" },
  },
  {
    name: "update: the file on disk has another size",
    input: input({
      outputs: [A],
      state: valid(record("a.txt")),
      listing: listing({ path: "a.txt", size: 999 }),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
    reasons: { "a.txt": "size on disk differs" },
  },
  {
    name: "update: a symlink at a recorded path is replaced, not written through",
    input: input({
      outputs: [A],
      state: valid(record("a.txt")),
      listing: listing({ path: "a.txt", type: "symlink" }),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
    reasons: { "a.txt": "not a regular file" },
  },
  {
    name: "update: additive overwrites a recorded path whatever the owner (takeover)",
    input: input({
      outputs: [A],
      state: valid(record("a.txt", { owner: "other/mirror" })),
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt update"],
    reasons: { "a.txt": "taken over from other/mirror" },
  },
  {
    name: "update: --verify found other bytes of the same size",
    input: input({
      outputs: [A, B],
      state: valid(record("a.txt"), record("b.txt")),
      listing: listing("a.txt", "b.txt"),
      verifiedDigests: new Map([
        ["a.txt", digestOf("tampered!")],
        ["b.txt", B.sha256],
      ]),
    }),
    action: "upsert_additive",
    changes: ["a.txt update", "b.txt unchanged"],
    reasons: { "a.txt": "content differs (verify)" },
  },
  {
    name: "unchanged output whose source identity changed rewrites the record only",
    input: input({
      outputs: [A],
      state: valid(record("a.txt", { source: OLD_SOURCE })),
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt unchanged"],
    reasons: { "a.txt": "record changes: source" },
  },
  {
    name: "unchanged output that gains a url rewrites the record only",
    input: input({
      outputs: [A],
      urlBase: "https://x.test/archive",
      state: valid(record("a.txt")),
      listing: listing("a.txt"),
    }),
    action: "upsert_additive",
    changes: ["a.txt unchanged"],
    reasons: { "a.txt": "record changes: url" },
  },
  {
    name: "unchanged bytes that switch from source to generated rewrite the record",
    input: input({
      outputs: [planned("x.html", { from: "x.md" })],
      state: valid(record("x.html")),
      listing: listing("x.html"),
    }),
    action: "upsert_additive",
    changes: ["x.html unchanged"],
    reasons: { "x.html": "record changes: kind, source_path, transform" },
  },
  {
    name: "replacement removes only the same owner's omitted outputs",
    input: input({
      workflow: "replacement",
      outputs: [A],
      state: valid(
        record("a.txt"),
        record("old.txt"),
        record("theirs.txt", { owner: "other/site" }),
        record("mirror.txt", { owner: "reports/mirror" }),
      ),
      listing: listing("a.txt", "old.txt", "theirs.txt", "mirror.txt", "stray.txt"),
    }),
    action: "replace_catalog",
    changes: ["a.txt unchanged", "old.txt delete"],
    deletes: ["old.txt"],
    reasons: { "old.txt": "omitted by this run" },
  },
  {
    name: "replacement: an omitted file of ours where an output needs a folder goes first",
    input: input({
      workflow: "replacement",
      outputs: [PAGE],
      state: valid(record("docs")),
      listing: listing("docs"),
    }),
    action: "replace_catalog",
    changes: ["docs delete", "docs/page.html create"],
    deletes: ["docs"],
    deletesFirst: ["docs"],
  },
  {
    name: "replacement: omitted files of ours in a folder an output replaces with a file go first",
    input: input({
      workflow: "replacement",
      outputs: [planned("docs"), A],
      state: valid(record("docs/a.txt"), record("docs/b/c.txt"), record("old.txt")),
      listing: listing("docs/a.txt", "docs/b/c.txt", "old.txt"),
    }),
    action: "replace_catalog",
    changes: [
      "a.txt create",
      "docs create",
      "docs/a.txt delete",
      "docs/b/c.txt delete",
      "old.txt delete",
    ],
    deletes: ["docs/a.txt", "docs/b/c.txt", "old.txt"],
    deletesFirst: ["docs/a.txt", "docs/b/c.txt"],
  },
  {
    name: "additive: a file of ours where an output needs a folder still blocks (it is kept)",
    input: input({ outputs: [PAGE], state: valid(record("docs")), listing: listing("docs") }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["docs"],
    message:
      "docs (an output of reports -> site that stays recorded, where docs/page.html needs a directory)",
  },
  {
    name: "replacement: a folder that also holds another owner's file is not cleared",
    input: input({
      workflow: "replacement",
      outputs: [planned("docs")],
      state: valid(record("docs/a.txt"), record("docs/b.txt", { owner: "other/site" })),
      listing: listing("docs/a.txt", "docs/b.txt"),
    }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["docs"],
  },
  {
    name: "replacement: a folder that also holds an unmanaged file is not cleared",
    input: input({
      workflow: "replacement",
      outputs: [planned("docs")],
      state: valid(record("docs/a.txt")),
      listing: listing("docs/a.txt", "docs/stray.txt"),
    }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["docs"],
  },
  {
    name: "replacement: a symlink of ours where an output needs a folder is never cleared",
    input: input({
      workflow: "replacement",
      outputs: [PAGE],
      state: valid(record("docs")),
      listing: listing({ path: "docs", type: "symlink" }),
    }),
    action: "fail_unmanaged",
    error: "unsafe_path",
    errorPaths: ["docs"],
  },
  {
    name: "replacement drops the record of an omitted output already gone, deleting nothing",
    input: input({
      workflow: "replacement",
      outputs: [A],
      state: valid(record("a.txt"), record("gone.txt")),
      listing: listing("a.txt"),
    }),
    action: "replace_catalog",
    changes: ["a.txt unchanged", "gone.txt delete"],
    deletes: [],
    reasons: { "gone.txt": "already gone" },
  },
  {
    name: "additive retains unrelated outputs, the same owner's included",
    input: input({
      outputs: [B],
      state: valid(record("a.txt"), record("c.txt", { owner: "other/site" })),
      listing: listing("a.txt", "c.txt"),
    }),
    action: "upsert_additive",
    changes: ["b.txt create"],
    deletes: [],
  },
  {
    name: "several owners share a root: each keeps its records",
    input: input({
      owner: { pipelineId: "docs", destinationId: "site" },
      workflow: "replacement",
      outputs: [planned("docs/index.html", { from: "docs/index.md" })],
      state: valid(
        record("a.txt"),
        record("docs/old.html", { owner: "docs/site", from: "docs/old.md" }),
        record("b.txt", { owner: "reports/mirror" }),
      ),
      listing: listing("a.txt", "b.txt", "docs/old.html"),
    }),
    action: "replace_catalog",
    changes: ["docs/index.html create", "docs/old.html delete"],
    deletes: ["docs/old.html"],
  },
  {
    name: "reserved names in the listing are neither unmanaged nor deleted",
    input: input({
      workflow: "replacement",
      outputs: [A],
      state: valid(record("a.txt")),
      listing: listing("a.txt", ".distributor.json", ".distributor.lock", "sub/.distributor.tmp-9"),
    }),
    action: "skip_same",
    changes: ["a.txt unchanged"],
    deletes: [],
  },
  {
    name: "a symlink at an ancestor of a planned path is unsafe",
    input: input({
      outputs: [PAGE, A],
      state: valid(record("a.txt")),
      listing: listing("a.txt", { path: "docs", type: "symlink" }),
    }),
    action: "fail_unmanaged",
    error: "unsafe_path",
    errorPaths: ["docs"],
  },
  {
    name: "a symlink at an unrecorded planned path is unsafe",
    input: input({
      outputs: [A],
      state: valid(),
      listing: listing({ path: "a.txt", type: "symlink" }),
    }),
    action: "fail_unmanaged",
    error: "unsafe_path",
    errorPaths: ["a.txt"],
  },
  {
    name: "a symlink and an unrecorded file in the way: both named, the symlink first",
    input: input({
      outputs: [PAGE, A],
      state: valid(),
      listing: listing("a.txt", { path: "docs", type: "symlink" }),
    }),
    action: "fail_unmanaged",
    error: "unsafe_path",
    errorPaths: ["docs", "a.txt"],
    message: "1 other path(s) are in the way too: a.txt (a file not recorded in the state)",
  },
  {
    name: "a symlink at a planned path is unsafe under legacy state too",
    input: input({
      outputs: [A],
      state: { class: "legacy", schemaVersion: 3 },
      listing: listing({ path: "a.txt", type: "symlink" }),
    }),
    action: "fail_unmanaged",
    error: "unsafe_path",
    errorPaths: ["a.txt"],
  },
  {
    name: "a special file at an unrecorded planned path is unmanaged",
    input: input({
      outputs: [A],
      state: valid(),
      listing: listing({ path: "a.txt", type: "other" }),
    }),
    action: "fail_unmanaged",
    error: "unmanaged_path",
    errorPaths: ["a.txt"],
  },
];

/** Every case, in a stable order. */
export const CASES: readonly Case[] = [...STEP3, ...PER_OUTPUT];

test("case names are unique", () => {
  assert.equal(new Set(CASES.map((c) => c.name)).size, CASES.length);
});
