import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { classifyState } from "../state/read.js";
import type { CatalogState, OutputRecord } from "../state/types.js";
import { serializeState } from "../state/write.js";
import { CASES } from "./plan-run.cases.test.js";
import {
  catalog,
  EARLIER,
  input,
  listing,
  NOW,
  OLD_SOURCE,
  planned,
  record,
  SOURCE,
  valid,
} from "./plan-run.fixtures.js";
import {
  isLeftover,
  LEFTOVER_SOURCE_DIGEST,
  planRun,
  simulateApplied,
  UNKNOWN_DIGEST,
} from "./plan-run.js";
import type { RunPlan } from "./types.js";

const A = planned("a.txt");
const B = planned("b.txt");

const byPath = (records: readonly OutputRecord[] | undefined) =>
  new Map((records ?? []).map((r) => [r.path, r]));

function recordOf(plan: RunPlan, path: string, which: "claimState" | "finalState" = "finalState") {
  return byPath(plan[which]?.outputs).get(path);
}

describe("planRun: the case table", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const plan = planRun(c.input);
      assert.equal(plan.action, c.action);
      assert.equal(plan.error?.code, c.error);
      if (c.changes) {
        assert.deepEqual(
          plan.changes.map((ch) => `${ch.path} ${ch.change}`),
          c.changes,
        );
      }
      if (c.deletes) assert.deepEqual(plan.deletes, c.deletes);
      assert.deepEqual(plan.deletesFirst, c.deletesFirst ?? []);
      if (c.errorPaths) assert.deepEqual(plan.error?.paths, c.errorPaths);
      if (c.message) assert.ok(plan.error?.message.includes(c.message), plan.error?.message);
      for (const [path, reason] of Object.entries(c.reasons ?? {})) {
        const change = plan.changes.find((ch) => ch.path === path);
        assert.ok(change?.reason.includes(reason), `${path}: reason was ${change?.reason}`);
      }
      if (plan.action.startsWith("fail_")) {
        assert.equal(plan.claimState, null);
        assert.equal(plan.finalState, null);
        assert.deepEqual(plan.changes, []);
      } else {
        assert.equal(plan.error, null);
      }
    });
  }
});

describe("planRun: records and timestamps", () => {
  test("a created record is stamped now, with this run's owner and source", () => {
    const plan = planRun(
      input({ outputs: [B], state: valid(record("a.txt")), listing: listing("a.txt") }),
    );
    assert.deepEqual(recordOf(plan, "b.txt"), {
      ...record("b.txt"),
      created_at: NOW,
      updated_at: NOW,
    });
  });

  test("an update keeps created_at, takes the new digest, source and owner", () => {
    const old = record("a.txt", { owner: "other/site", content: "old bytes", source: OLD_SOURCE });
    const plan = planRun(input({ outputs: [A], state: valid(old), listing: listing("a.txt") }));
    assert.deepEqual(recordOf(plan, "a.txt"), {
      ...record("a.txt"),
      created_at: EARLIER,
      updated_at: NOW,
    });
  });

  test("an unchanged output with an unchanged record keeps updated_at", () => {
    const plan = planRun(
      input({ outputs: [A, B], state: valid(record("a.txt")), listing: listing("a.txt") }),
    );
    assert.equal(recordOf(plan, "a.txt")?.updated_at, EARLIER);
  });

  test("an unchanged output whose source identity changed gets updated_at now", () => {
    const state = valid(record("a.txt", { source: OLD_SOURCE }));
    const plan = planRun(input({ outputs: [A], state, listing: listing("a.txt") }));
    assert.deepEqual(recordOf(plan, "a.txt"), {
      ...record("a.txt"),
      source: SOURCE,
      updated_at: NOW,
    });
  });

  test("url is set from urlBase, percent-encoded, and absent without one", () => {
    const spaced = planned("my docs/é.html", { from: "my docs/é.md" });
    const withUrl = planRun(input({ outputs: [spaced], urlBase: "https://x.test/archive" }));
    assert.equal(
      recordOf(withUrl, "my docs/é.html")?.url,
      "https://x.test/archive/my%20docs/%C3%A9.html",
    );
    assert.equal(withUrl.changes[0]?.url, "https://x.test/archive/my%20docs/%C3%A9.html");
    const without = planRun(input({ outputs: [spaced] }));
    assert.ok(!("url" in (recordOf(without, "my docs/é.html") ?? {})));
    assert.equal(without.changes[0]?.url, undefined);
  });

  test("the final state keeps the old created_at and takes this distributor_version", () => {
    const plan = planRun(
      input({ outputs: [B], state: valid(record("a.txt")), listing: listing("a.txt") }),
    );
    assert.equal(plan.finalState?.created_at, "2026-05-01T00:00:00Z");
    assert.equal(plan.finalState?.updated_at, NOW);
    assert.equal(plan.finalState?.distributor_version, "0.1.0");
  });

  test("legacy and fresh roots get a state created now", () => {
    for (const state of [
      { class: "legacy", schemaVersion: 3 } as const,
      { class: "missing" } as const,
    ]) {
      const plan = planRun(input({ outputs: [A], state }));
      assert.equal(plan.finalState?.created_at, NOW);
    }
  });

  test("under legacy state the new state holds only this run's outputs", () => {
    const plan = planRun(
      input({
        outputs: [A],
        state: { class: "legacy", schemaVersion: 2 },
        listing: listing("a.txt", "old.html"),
      }),
    );
    assert.deepEqual(
      plan.finalState?.outputs.map((r) => r.path),
      ["a.txt"],
    );
  });

  test("additive keeps other records byte for byte", () => {
    const theirs = record("c.txt", {
      owner: "other/site",
      source: OLD_SOURCE,
      url: "https://o.test/c.txt",
    });
    const plan = planRun(
      input({
        outputs: [B],
        state: valid(record("a.txt"), theirs),
        listing: listing("a.txt", "c.txt"),
      }),
    );
    assert.deepEqual(recordOf(plan, "c.txt"), theirs);
    assert.deepEqual(recordOf(plan, "a.txt"), record("a.txt"));
  });

  test("force_replace writes a fresh state with only this run's records, created now", () => {
    const plan = planRun(
      input({
        force: true,
        outputs: [A],
        state: valid(record("a.txt"), record("z.txt", { owner: "o/s" })),
      }),
    );
    assert.deepEqual(plan.finalState, {
      ...catalog([{ ...record("a.txt"), created_at: NOW, updated_at: NOW }], NOW),
      distributor_version: "0.1.0",
      updated_at: NOW,
    });
    // The claim, written before the root is emptied, keeps the other owner's
    // record until the final state: killed before z.txt goes, it is still recorded.
    assert.deepEqual(
      plan.claimState?.outputs.map((r) => `${r.path} ${r.pipeline_id}/${r.destination_id}`),
      ["a.txt reports/site", "z.txt o/s"],
    );
    assert.equal(plan.claimFirst, true);
  });

  test("force_replace claims after emptying the root when something not its own stands in a planned output's way", () => {
    // An unmanaged file where a planned output needs a folder: a plain run
    // could not finish what an early claim records, so the claim comes after
    // the deletes. So too when this owner's old file is in one way and an
    // unmanaged one in another.
    const alone = planRun(
      input({ force: true, outputs: [planned("x/z.txt")], state: valid(), listing: listing("x") }),
    );
    const mixed = planRun(
      input({
        force: true,
        outputs: [planned("guide/index.html"), planned("x/z.txt")],
        state: valid(record("guide")),
        listing: listing("guide", "x"),
      }),
    );
    for (const plan of [alone, mixed]) {
      assert.equal(plan.action, "force_replace");
      assert.notEqual(plan.claimFirst, true);
      assert.equal(plan.claimState, plan.finalState);
    }
  });

  test("force_replace claims first when only this owner's old outputs stand in the way of a replacement", () => {
    // A file that becomes a folder, a folder of this owner's files that
    // becomes a file: killed while emptying the root, the plain rerun clears
    // them as leftovers (plan-run.invariants.test.ts checks it converges).
    for (const [outputs, before] of [
      [[planned("guide/index.html")], { state: valid(record("guide")), listing: listing("guide") }],
      [[planned("x")], { state: valid(record("x/a.txt")), listing: listing("x/a.txt") }],
    ] as const) {
      // Under replacement: an additive run keeps them, in the way (claims late).
      const plan = planRun(
        input({ force: true, workflow: "replacement", outputs: [...outputs], ...before }),
      );
      assert.equal(plan.action, "force_replace");
      assert.equal(plan.claimFirst, true, outputs[0]?.path);
      const additive = planRun(input({ force: true, outputs: [...outputs], ...before }));
      assert.notEqual(additive.claimFirst, true, outputs[0]?.path);
    }
  });

  test("force_replace claims after emptying the root over a legacy state or on a root that folds case", () => {
    // Legacy: other owners' files published without records stay protected by
    // the legacy state until the root is emptied. Folding: a plain run refuses
    // clashes an exact-name check does not see.
    const legacy = { class: "legacy" as const, schemaVersion: 3 };
    for (const extra of [{ state: legacy }, { foldsCase: true }]) {
      const plan = planRun(input({ force: true, outputs: [A], state: valid(), ...extra }));
      assert.equal(plan.action, "force_replace");
      assert.notEqual(plan.claimFirst, true, JSON.stringify(extra));
    }
  });

  test("force_replace refuses a planned path inside a nested root (its catalog manages it)", () => {
    const plan = planRun(
      input({
        force: true,
        outputs: [planned("sub/x.txt")],
        state: valid(),
        listing: listing("sub/.distributor.json"),
      }),
    );
    assert.equal(plan.action, "fail_unmanaged");
    assert.deepEqual(plan.error?.paths, ["sub"]);
  });

  test("a replacement never deletes an omitted file inside a nested root: the record is dropped", () => {
    // The nested root may have published the path since this root recorded it.
    const plan = planRun(
      input({
        workflow: "replacement",
        outputs: [A],
        state: valid(record("a.txt"), record("inner/a.txt")),
        listing: listing("a.txt", "inner/a.txt", "inner/.distributor.json"),
      }),
    );
    assert.equal(plan.action, "replace_catalog");
    assert.deepEqual(plan.deletes, []);
    const change = plan.changes.find((c) => c.path === "inner/a.txt");
    assert.equal(change?.change, "delete");
    assert.match(change?.reason ?? "", /inside another root \(inner\)/);
    assert.deepEqual(
      plan.finalState?.outputs.map((r) => r.path),
      ["a.txt"],
    );
  });

  test("an omitted record already gone is dropped; its empty folder is handed to the delete to tidy", () => {
    // What a run killed between deleting the file and removing its folder leaves.
    const plan = planRun(
      input({
        workflow: "replacement",
        outputs: [A],
        state: valid(record("a.txt"), record("docs/gone.txt"), record("f/x.txt"), record("l.txt")),
        listing: listing("a.txt", { path: "docs", type: "directory", size: 0 }, "f", {
          path: "l.txt",
          type: "symlink",
        }),
      }),
    );
    assert.equal(plan.action, "replace_catalog");
    // docs/gone.txt: missing in a real folder, tidied; f/x.txt: a file where
    // its folder was, nothing to tidy; l.txt: a symlink now, left alone.
    assert.deepEqual(plan.deletes, ["docs/gone.txt"]);
    const reasons = Object.fromEntries(plan.changes.map((c) => [c.path, c.reason]));
    assert.match(reasons["docs/gone.txt"] ?? "", /already gone from storage, record dropped/);
    assert.match(reasons["f/x.txt"] ?? "", /already gone from storage, record dropped/);
    assert.match(
      reasons["l.txt"] ?? "",
      /a symbolic link is there now, left alone, record dropped/,
    );
    assert.deepEqual(
      plan.finalState?.outputs.map((r) => r.path),
      ["a.txt"],
    );
  });

  test("simulateApplied takes a cleared folder away with its empty subfolders", () => {
    // The next pair on the root is planned against this: a phantom folder at
    // a.txt would refuse a file there that the pairs run apart accept.
    const before = input({
      workflow: "replacement",
      outputs: [A],
      state: valid(record("a.txt/old/f.txt")),
      listing: listing("a.txt/old/f.txt", { path: "a.txt/leftover", type: "directory", size: 0 }),
    });
    const plan = planRun(before);
    assert.equal(plan.action, "replace_catalog");
    assert.ok(plan.deletesFirst.length > 0, JSON.stringify(plan.deletesFirst));
    const after = simulateApplied(plan, before);
    assert.deepEqual(
      after.listing.map((entry) => [entry.path, entry.type]),
      [["a.txt", "file"]],
    );
  });

  test("a nested root whose state path is a folder is still a nested root", () => {
    // Its own run classifies that state as invalid; what is inside `sub` is
    // still that root's to manage, with or without --force.
    for (const force of [false, true]) {
      const plan = planRun(
        input({
          force,
          outputs: [planned("sub/x.txt")],
          state: valid(),
          listing: listing("sub/.distributor.json/junk"),
        }),
      );
      assert.equal(plan.action, "fail_unmanaged", `force: ${force}`);
      assert.deepEqual(plan.error?.paths, ["sub"]);
    }
  });

  test("temporary folders mark no nested root, but a temp file in a state path that is a folder does", () => {
    const plan = (listed: string) =>
      planRun(input({ outputs: [planned("sub/x.txt")], state: valid(), listing: listing(listed) }));
    // A killed run's staged folder, or a user's folder named like one: ignored.
    for (const listed of [
      "sub/.distributor.tmp-0123456789abcdef-0/x.txt",
      "sub/.distributor.tmp-notes/todo.txt",
    ]) {
      assert.equal(plan(listed).action, "upsert_additive", listed);
    }
    const inStatePath = plan("sub/.distributor.json/.distributor.tmp-1");
    assert.equal(inStatePath.action, "fail_unmanaged");
    assert.deepEqual(inStatePath.error?.paths, ["sub"]);
    // The same on a root without a state, and for a file planned where that root is.
    const listed = listing("sub/.distributor.json/.distributor.tmp-1");
    const missing = { class: "missing" } as const;
    for (const [state, output] of [
      [missing, "sub/x.txt"],
      [valid(), "sub"],
      [missing, "sub"],
    ] as const) {
      const blocked = planRun(input({ outputs: [planned(output)], state, listing: listed }));
      assert.equal(blocked.action, "fail_unmanaged", `${state.class} ${output}`);
      assert.deepEqual(blocked.error?.paths, ["sub"], `${state.class} ${output}`);
    }
  });

  test("force_replace's claim keeps this owner's unplanned records, marked as leftovers", () => {
    const theirs = record("z.txt", { owner: "o/s" });
    const before = {
      state: valid(record("a.txt"), record("old.txt"), theirs),
      listing: listing("a.txt", "old.txt", "z.txt"),
    };
    const force = planRun(input({ force: true, outputs: [A], ...before }));
    assert.equal(force.claimFirst, true);
    // Killed while the root is emptied, old.txt must not be left unrecorded:
    // a later run that plans old.txt would refuse it as unmanaged.
    const leftover = recordOf(force, "old.txt", "claimState");
    assert.deepEqual(leftover, {
      ...record("old.txt"),
      source: { ...record("old.txt").source, digest: LEFTOVER_SOURCE_DIGEST },
    });
    assert.ok(leftover !== undefined && isLeftover(leftover));
    assert.deepEqual(recordOf(force, "z.txt", "claimState"), theirs);
    assert.equal(recordOf(force, "old.txt"), undefined);
    const claim = { class: "valid" as const, state: force.claimState as CatalogState };

    // Additive: a leftover whose file the force already deleted is dropped;
    // one whose file is still there stays recorded and is not deleted (an
    // additive run deletes nothing). z.txt stays its owner's either way.
    const gone = planRun(input({ outputs: [A], state: claim, listing: listing("a.txt", "z.txt") }));
    assert.equal(gone.action, "upsert_additive");
    const dropped = gone.changes.find((c) => c.path === "old.txt");
    assert.equal(dropped?.change, "delete");
    assert.match(dropped?.reason ?? "", /force_replace that did not finish; already gone/);
    assert.deepEqual(gone.deletes, []);
    assert.equal(recordOf(gone, "old.txt"), undefined);
    assert.deepEqual(recordOf(gone, "z.txt"), theirs);

    const there = { state: claim, listing: listing("a.txt", "old.txt", "z.txt") };
    const kept = planRun(input({ outputs: [A], ...there }));
    assert.equal(
      kept.changes.find((c) => c.path === "old.txt"),
      undefined,
    );
    assert.ok(!kept.deletes.includes("old.txt"));
    assert.deepEqual(
      kept.finalState?.outputs.find((r) => r.path === "old.txt") ?? null,
      leftover ?? null,
    );

    // A folder (or anything but its file) where the leftover was: the file
    // is gone, so the record goes, and nothing there is deleted.
    const folder = planRun(
      input({ outputs: [A], state: claim, listing: listing("a.txt", "old.txt/n.txt", "z.txt") }),
    );
    assert.equal(recordOf(folder, "old.txt"), undefined);
    assert.deepEqual(folder.deletes, []);
    assert.match(
      folder.changes.find((c) => c.path === "old.txt")?.reason ?? "",
      /a folder is there now, left alone, record dropped/,
    );

    // On a root that folds case, a leftover's path is checked like any path
    // the run deletes: docs/X.txt there could name an unmanaged docs/x.txt.
    const foldClaim = planRun(
      input({
        force: true,
        outputs: [A],
        state: valid(record("a.txt"), record("docs/X.txt")),
        listing: listing("a.txt", "docs/X.txt"),
      }),
    ).claimState as CatalogState;
    const folded = planRun(
      input({
        outputs: [A],
        foldsCase: true,
        state: { class: "valid", state: foldClaim },
        listing: listing("a.txt", "docs/x.txt"),
      }),
    );
    assert.equal(folded.action, "fail_unmanaged");
    assert.deepEqual(folded.deletes, []);

    // Replacement deletes it, as any output of this owner that it omits.
    const replaced = planRun(input({ outputs: [A], workflow: "replacement", ...there }));
    assert.ok(replaced.deletes.includes("old.txt"));

    // Another owner's run leaves this owner's leftover alone.
    const other = planRun(
      input({
        owner: { pipelineId: "o", destinationId: "s" },
        outputs: [planned("z.txt")],
        ...there,
      }),
    );
    assert.equal(other.action, "skip_same");
  });

  test("force_replace's claim gives a path that holds something now a digest no output has", () => {
    // The claim is written before the root is emptied: killed then, a plain
    // run must rewrite what is at a planned path, never take it as unchanged.
    const plan = planRun(
      input({ force: true, outputs: [A, B], state: valid(), listing: listing("a.txt", "junk") }),
    );
    assert.equal(recordOf(plan, "a.txt", "claimState")?.sha256, UNKNOWN_DIGEST);
    assert.equal(recordOf(plan, "a.txt")?.sha256, A.sha256);
    assert.equal(recordOf(plan, "b.txt", "claimState")?.sha256, B.sha256);
    assert.notEqual(
      plan.claimState,
      plan.finalState,
      "the final state is written after the outputs",
    );
  });

  test("skip_same writes nothing: no claim, no final state, no deletes", () => {
    const plan = planRun(
      input({ outputs: [A], state: valid(record("a.txt")), listing: listing("a.txt") }),
    );
    assert.equal(plan.action, "skip_same");
    assert.deepEqual([plan.claimState, plan.finalState, plan.deletes], [null, null, []]);
  });
});

describe("planRun: the claim state (crash safety)", () => {
  test("claims created paths and keeps every old record, an overwritten one with an unknown digest", () => {
    const old = [
      record("a.txt", { content: "old a" }),
      record("gone.txt"),
      record("o.txt", { owner: "o/s" }),
    ];
    const plan = planRun(
      input({
        workflow: "replacement",
        outputs: [A, B],
        state: valid(...old),
        listing: listing("a.txt", "gone.txt", "o.txt"),
      }),
    );
    assert.equal(plan.action, "replace_catalog");
    const claim = byPath(plan.claimState?.outputs);
    const [overwritten, ...others] = old;
    assert.deepEqual(claim.get("a.txt"), { ...overwritten, sha256: UNKNOWN_DIGEST });
    for (const oldRecord of others) assert.deepEqual(claim.get(oldRecord.path), oldRecord);
    assert.deepEqual(claim.get("b.txt"), { ...record("b.txt"), created_at: NOW, updated_at: NOW });
    assert.equal(plan.claimState?.created_at, "2026-05-01T00:00:00Z");
  });

  test("with only updates a claim is still written: the overwritten record's digest is unknown until the final state", () => {
    const plan = planRun(
      input({
        outputs: [A],
        state: valid(record("a.txt", { content: "old" })),
        listing: listing("a.txt"),
      }),
    );
    assert.equal(plan.action, "upsert_additive");
    assert.equal(recordOf(plan, "a.txt", "claimState")?.sha256, UNKNOWN_DIGEST);
    assert.equal(recordOf(plan, "a.txt")?.sha256, A.sha256);
  });

  test("with only deletes no claim is written: the old records stay until the final state", () => {
    const plan = planRun(
      input({
        workflow: "replacement",
        outputs: [A],
        state: valid(record("a.txt"), record("gone.txt")),
        listing: listing("a.txt", "gone.txt"),
      }),
    );
    assert.equal(plan.action, "replace_catalog");
    assert.deepEqual(
      plan.changes.map((ch) => `${ch.path} ${ch.change}`),
      ["a.txt unchanged", "gone.txt delete"],
    );
    assert.equal(plan.claimState, null);
  });

  test("a run that stopped after overwriting, then the previous bundle again: the path is rewritten, not skipped", () => {
    // v1 and v2 of a.txt have one size: only the digest tells them apart.
    const v1 = planned("a.txt", { content: "version 1" });
    const v2 = planned("a.txt", { content: "version 2" });
    assert.equal(v1.size, v2.size);
    const published = planRun(input({ outputs: [v1] })).finalState as CatalogState;
    const onDisk = listing({ path: "a.txt", size: v1.size });
    const failed = planRun(
      input({ outputs: [v2], state: { class: "valid", state: published }, listing: onDisk }),
    );
    // The v2 run wrote a.txt and stopped (an error, a kill) before its final state.
    const claim = failed.claimState as CatalogState;
    assert.notEqual(claim, null);
    const back = planRun(
      input({ outputs: [v1], state: { class: "valid", state: claim }, listing: onDisk }),
    );
    assert.equal(back.action, "upsert_additive");
    assert.deepEqual(
      back.changes.map((ch) => `${ch.path} ${ch.change}`),
      ["a.txt update"],
    );
    assert.equal(recordOf(back, "a.txt")?.sha256, v1.sha256);
  });

  test("publish_new claims every output before writing any", () => {
    const plan = planRun(input({ outputs: [A, B] }));
    assert.deepEqual(
      plan.claimState?.outputs.map((r) => r.path),
      ["a.txt", "b.txt"],
    );
    assert.equal(plan.finalState, plan.claimState, "one state, written once");
    const forced = planRun(input({ outputs: [A], force: true, listing: listing("stray") }));
    assert.equal(forced.finalState, forced.claimState);
  });

  test("legacy state writes no claim: the root stays legacy until the final state", () => {
    const plan = planRun(
      input({
        outputs: [A, B],
        state: { class: "legacy", schemaVersion: 1 },
        listing: listing("a.txt"),
      }),
    );
    assert.equal(plan.claimState, null);
    assert.notEqual(plan.finalState, null);
  });
});

describe("planRun: refusals say what to do", () => {
  test("state_conflict names the reason and the force command", () => {
    const plan = planRun(
      input({ state: { class: "invalid", reason: "outputs[0].size: missing" } }),
    );
    assert.match(plan.error?.message ?? "", /invalid \(outputs\[0\]\.size: missing\)/);
    assert.match(
      plan.error?.message ?? "",
      /--pipeline reports --destination site --force --dry-run/,
    );
  });

  test("an unsupported state says to upgrade", () => {
    const plan = planRun(input({ state: { class: "unsupported", schemaVersion: 7 } }));
    assert.match(plan.error?.message ?? "", /schema_version 7.*upgrade distributor/);
  });

  test("a foreign root caps error paths at 100 and gives the total", () => {
    const many = Array.from({ length: 150 }, (_, i) => `f${String(i).padStart(3, "0")}.txt`);
    const plan = planRun(input({ outputs: [A], listing: listing(...many) }));
    assert.equal(plan.action, "fail_unmanaged");
    assert.equal(plan.error?.paths.length, 100);
    assert.match(plan.error?.message ?? "", /150 entries/);
    assert.match(plan.error?.message ?? "", /and 145 more/);
  });

  test("unmanaged collisions are capped too", () => {
    const outputs = Array.from({ length: 120 }, (_, i) =>
      planned(`p${String(i).padStart(3, "0")}`),
    );
    const plan = planRun(
      input({ outputs, state: valid(), listing: listing(...outputs.map((o) => o.path)) }),
    );
    assert.equal(plan.error?.code, "unmanaged_path");
    assert.equal(plan.error?.paths.length, 100);
    assert.match(plan.error?.message ?? "", /^120 path\(s\)/);
  });

  test("a symlink blocking several outputs is reported once, as unsafe, before what else blocks", () => {
    const plan = planRun(
      input({
        outputs: [planned("d/a"), planned("d/b"), planned("x")],
        state: valid(),
        listing: listing({ path: "d", type: "symlink" }, "x"),
      }),
    );
    assert.equal(plan.error?.code, "unsafe_path");
    assert.deepEqual(plan.error?.paths, ["d", "x"]);
    assert.match(
      plan.error?.message ?? "",
      /^1 symbolic link\(s\) .*: d \(a symbolic link on the way to d\/a\)\. /,
    );
    assert.match(plan.error?.message ?? "", /never writes through or over symbolic links/);
  });
});

describe("simulateApplied: pairs that share a root", () => {
  test("the second pair is planned against what the first leaves, and both records remain", () => {
    const first = input({ outputs: [A], workflow: "replacement" });
    const plan1 = planRun(first);
    assert.equal(plan1.action, "publish_new");
    const after1 = simulateApplied(plan1, first);
    const second = input({
      owner: { pipelineId: "reports", destinationId: "mirror" },
      workflow: "replacement",
      outputs: [B],
      state: after1.state,
      listing: after1.listing,
    });
    const plan2 = planRun(second);
    assert.equal(plan2.action, "replace_catalog");
    assert.deepEqual(plan2.deletes, []);
    const after2 = simulateApplied(plan2, second);
    assert.deepEqual(
      after2.state.class === "valid" &&
        after2.state.state.outputs.map((r) => `${r.path} ${r.destination_id}`),
      ["a.txt site", "b.txt mirror"],
    );
    assert.deepEqual(after2.listing.map((e) => e.path).sort(), ["a.txt", "b.txt"]);
  });

  test("an empty folder above a deleted path goes with it, unless an output is written there", () => {
    // A killed run deleted old/deep/b.txt and not its folder; this replacement
    // drops the record and the driver removes the folders left empty, so the
    // next pair may publish a file named "old".
    const before = input({
      workflow: "replacement",
      outputs: [A, planned("kept/new.txt")],
      state: valid(record("kept/gone.txt"), record("old/deep/b.txt")),
      listing: listing(
        { path: "old/deep", type: "directory", size: 0 },
        { path: "kept", type: "directory", size: 0 },
      ),
    });
    const plan = planRun(before);
    assert.deepEqual(plan.deletes, ["kept/gone.txt", "old/deep/b.txt"]);
    const after = simulateApplied(plan, before);
    assert.deepEqual(after.listing.map((e) => `${e.path} ${e.type}`).sort(), [
      "a.txt file",
      "kept/new.txt file",
    ]);
    const next = planRun(
      input({
        owner: { pipelineId: "reports", destinationId: "mirror" },
        outputs: [planned("old")],
        state: after.state,
        listing: after.listing,
      }),
    );
    assert.equal(next.action, "upsert_additive", next.error?.message);
  });

  test("skip_same and failures leave the root as it was", () => {
    const root = { state: valid(record("a.txt")), listing: listing("a.txt") };
    const skip = planRun(input({ outputs: [A], ...root }));
    assert.deepEqual(simulateApplied(skip, root), { state: root.state, listing: root.listing });
    const failed = planRun(input({ outputs: [B], state: valid(), listing: listing("b.txt") }));
    assert.equal(simulateApplied(failed, root).state, root.state);
  });

  test("force_replace leaves only the outputs and the reserved tool files", () => {
    const before = {
      state: valid(record("x.txt")),
      listing: listing("x.txt", ".distributor.json"),
    };
    const plan = planRun(input({ force: true, outputs: [A], ...before }));
    const after = simulateApplied(plan, before);
    assert.deepEqual(after.listing.map((e) => e.path).sort(), [".distributor.json", "a.txt"]);
    assert.equal(after.state.class, "valid");
  });
});

describe("the test builders", () => {
  test("builders make states the reader accepts", () => {
    const state = catalog([
      record("a.html", { from: "a.md", url: "https://x.test/a.html" }),
      record("b"),
    ]);
    const read = classifyState({ bytes: serializeState(state) });
    assert.equal(read.class, "valid");
  });

  test("a default record describes exactly the default planned output and listed file", () => {
    const [entry] = listing("dir/x.txt");
    const out = planned("dir/x.txt");
    const rec = record("dir/x.txt");
    assert.equal(rec.sha256, out.sha256);
    assert.equal(rec.size, out.size);
    assert.equal(entry?.size, out.size);
  });
});
