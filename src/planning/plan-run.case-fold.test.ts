/**
 * planRun on a root that folds case (RunPlanInput.foldsCase, see _case-fold.ts):
 * names that differ only by case are one file there, so each way a planned
 * name can meet another one that way is refused before anything is written,
 * and the same inputs on a case-sensitive root plan as before.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { input, listing, planned, record, valid } from "./plan-run.fixtures.js";
import { planRun } from "./plan-run.js";
import type { RunPlanInput } from "./types.js";

function bothWays(overrides: Partial<RunPlanInput>) {
  return {
    folding: planRun(input({ ...overrides, foldsCase: true })),
    exact: planRun(input({ ...overrides, foldsCase: false })),
  };
}

/** Refused before any change, naming `paths` in error.paths and `description` in the message. */
function assertRefused(plan: ReturnType<typeof planRun>, paths: string[], description: string) {
  assert.equal(plan.action, "fail_unmanaged");
  assert.equal(plan.error?.code, "unmanaged_path");
  assert.deepEqual(plan.error?.paths, paths);
  assert.equal(plan.changes.length, 0);
  assert.equal(plan.finalState, null);
  assert.match(plan.error?.message ?? "", /only by case/);
  assert.ok(plan.error?.message.includes(description), plan.error?.message);
}

describe("planRun on a root that folds case", () => {
  test("an unmanaged file that differs only by case is not taken for absent", () => {
    const { folding, exact } = bothWays({
      outputs: [planned("index.html")],
      state: valid(record("a.txt")),
      listing: listing("a.txt", "INDEX.HTML"),
    });
    assertRefused(
      folding,
      ["INDEX.HTML", "index.html"],
      "INDEX.HTML (in storage) and index.html (planned)",
    );
    assert.equal(exact.action, "upsert_additive");
    assert.equal(exact.changes.find((c) => c.path === "index.html")?.change, "create");
  });

  test("a case-only rename under replacement neither writes nor deletes", () => {
    const { folding, exact } = bothWays({
      outputs: [planned("guide.html", { from: "guide.md" })],
      state: valid(record("Guide.html", { from: "Guide.md" })),
      listing: listing("Guide.html"),
      workflow: "replacement",
    });
    assertRefused(
      folding,
      ["Guide.html", "guide.html"],
      "Guide.html (to be deleted, in storage, recorded) and guide.html (planned)",
    );
    assert.match(folding.error?.message ?? "", /--force/, "the root's content is the problem");
    assert.equal(exact.action, "replace_catalog");
    assert.deepEqual(
      exact.changes.map((c) => [c.path, c.change]),
      [
        ["Guide.html", "delete"],
        ["guide.html", "create"],
      ],
    );
  });

  test("a delete of an omitted output that another owner's record folds onto", () => {
    const { folding, exact } = bothWays({
      outputs: [planned("b.html")],
      state: valid(record("A.html"), record("a.html", { owner: "other/site" })),
      listing: listing("A.html", "a.html"),
      workflow: "replacement",
    });
    assertRefused(
      folding,
      ["A.html", "a.html"],
      "A.html (to be deleted, in storage, recorded) and a.html (in storage, recorded)",
    );
    assert.deepEqual(exact.deletes, ["A.html"]);
  });

  test("a planned file where storage has a folder that differs only by case", () => {
    const { folding } = bothWays({
      outputs: [planned("docs")],
      state: valid(record("a.txt")),
      listing: listing("a.txt", "Docs/x.html"),
    });
    assertRefused(folding, ["Docs", "docs"], "Docs (a folder in storage) and docs (planned)");
  });

  test("a folder of recorded outputs that differs only by case, its file gone", () => {
    const { folding, exact } = bothWays({
      outputs: [planned("docs/b.html")],
      state: valid(record("Docs/a.html")),
      listing: listing(),
    });
    assertRefused(
      folding,
      ["Docs", "docs"],
      "Docs (a folder of recorded outputs) and docs (a folder of planned outputs)",
    );
    assert.equal(exact.action, "upsert_additive");
  });

  test("another owner's record that differs only by case", () => {
    const { folding } = bothWays({
      outputs: [planned("report.html")],
      state: valid(record("Report.html", { owner: "other/site" })),
      listing: listing("Report.html"),
    });
    assertRefused(
      folding,
      ["Report.html", "report.html"],
      "Report.html (in storage, recorded) and report.html (planned)",
    );
  });

  test("a folder that differs only by case", () => {
    const { folding, exact } = bothWays({
      outputs: [planned("docs/b.html")],
      state: valid(record("a.txt")),
      listing: listing("a.txt", "Docs/a.html"),
    });
    assertRefused(
      folding,
      ["Docs", "docs"],
      "Docs (a folder in storage) and docs (a folder of planned outputs)",
    );
    assert.equal(exact.action, "upsert_additive");
  });

  test("two planned outputs that differ only by case, even on an empty root and with --force", () => {
    const outputs = [planned("A.html"), planned("a.html")];
    assertRefused(
      planRun(input({ outputs, foldsCase: true })),
      ["A.html", "a.html"],
      "A.html (planned) and a.html (planned)",
    );
    assertRefused(
      planRun(input({ outputs, foldsCase: true, force: true, listing: listing("x.txt") })),
      ["A.html", "a.html"],
      "A.html (planned) and a.html (planned)",
    );
    assert.equal(planRun(input({ outputs })).action, "publish_new");
    const message = planRun(input({ outputs, foldsCase: true })).error?.message ?? "";
    assert.doesNotMatch(message, /--force/, "force_replace would not help");
  });

  test("a planned name that is one of the tool's own files on this root", () => {
    const { folding, exact } = bothWays({ outputs: [planned(".Distributor.json")] });
    assertRefused(
      folding,
      [".Distributor.json"],
      ".Distributor.json (planned) and the tool's own .distributor.* files",
    );
    assert.equal(exact.action, "publish_new");
  });

  test("names that match exactly, and unrelated names, plan as on any root", () => {
    const overrides: Partial<RunPlanInput> = {
      outputs: [planned("Guide.html"), planned("b.html")],
      state: valid(record("Guide.html"), record("b.html")),
      listing: listing("Guide.html", "b.html", "OTHER.txt", ".distributor.json"),
    };
    const { folding, exact } = bothWays(overrides);
    assert.deepEqual(folding, exact);
    assert.equal(folding.action, "skip_same");
  });

  test("with --force only the planned names can clash: the root is emptied first", () => {
    const plan = planRun(
      input({
        outputs: [planned("index.html")],
        listing: listing("INDEX.HTML"),
        force: true,
        foldsCase: true,
      }),
    );
    assert.equal(plan.action, "force_replace");
    assert.deepEqual(plan.deletes, ["INDEX.HTML"]);
  });

  test("an invalid state is still a conflict first", () => {
    const plan = planRun(
      input({
        outputs: [planned("A.html"), planned("a.html")],
        state: { class: "invalid", reason: "not JSON" },
        foldsCase: true,
      }),
    );
    assert.equal(plan.action, "fail_conflict");
  });
});
