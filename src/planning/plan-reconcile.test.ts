import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { OutputRecord } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";
import { planReconcile, type ReconcilePlanInput } from "./plan-reconcile.js";
import { catalog, record as catalogRecord } from "./plan-run.fixtures.js";

/** A catalog record of owner p/d (or `owner`). */
const record = (path: string, [pipeline, destination] = ["p", "d"]) =>
  catalogRecord(path, { owner: `${pipeline}/${destination}` });

const state = (...outputs: OutputRecord[]) => catalog(outputs);

function files(...paths: string[]): StorageEntry[] {
  return paths.map((path) => ({ path, size: 1, type: "file" as const }));
}

function input(overrides: Partial<ReconcilePlanInput>): ReconcilePlanInput {
  return {
    state: state(),
    listing: [],
    owner: { pipelineId: "p", destinationId: "d" },
    allOwners: false,
    now: "2026-06-10T00:00:00Z",
    distributorVersion: "9.9.9",
    ...overrides,
  };
}

describe("planReconcile", () => {
  const cases: Array<{
    name: string;
    input: Partial<ReconcilePlanInput>;
    missing: string[];
    unmanaged: string[];
  }> = [
    {
      name: "everything present: nothing missing, nothing unmanaged",
      input: {
        state: state(record("a"), record("b/c")),
        listing: files("a", "b/c", ".distributor.json"),
      },
      missing: [],
      unmanaged: [],
    },
    {
      name: "a record of the owner whose file is gone is missing",
      input: { state: state(record("a"), record("b/c")), listing: files("a") },
      missing: ["b/c"],
      unmanaged: [],
    },
    {
      name: "another owner's missing record is out of scope by default",
      input: { state: state(record("a"), record("x", ["q", "d"])), listing: files("a") },
      missing: [],
      unmanaged: [],
    },
    {
      name: "--all-owners checks every owner's records",
      input: {
        state: state(record("a"), record("x", ["q", "d"]), record("y", ["p", "e"])),
        listing: files("a"),
        allOwners: true,
      },
      missing: ["x", "y"],
      unmanaged: [],
    },
    {
      name: "same pipeline, other destination is another owner",
      input: { state: state(record("y", ["p", "e"])), listing: [] },
      missing: [],
      unmanaged: [],
    },
    {
      name: "listed files without any record are unmanaged, sorted by UTF-8 bytes",
      input: { state: state(record("a")), listing: files("z", "a", "é", "Z", "sub/k") },
      missing: [],
      unmanaged: ["Z", "sub/k", "z", "é"],
    },
    {
      name: "another owner's present file is managed, not unmanaged",
      input: { state: state(record("x", ["q", "d"])), listing: files("x") },
      missing: [],
      unmanaged: [],
    },
    {
      name: "reserved tool files anywhere are ignored",
      input: {
        state: state(),
        listing: files(
          ".distributor.json",
          ".distributor.lock",
          "d/.distributor.tmp-1",
          ".distributor.x/y",
        ),
      },
      missing: [],
      unmanaged: [],
    },
    {
      name: "a symlink at a recorded path counts as present; elsewhere it is unmanaged",
      input: {
        state: state(record("a")),
        listing: [
          { path: "a", size: 0, type: "symlink" },
          { path: "l", size: 0, type: "symlink" },
        ],
      },
      missing: [],
      unmanaged: ["l"],
    },
    {
      name: "a directory prefix of a record is not the record's file",
      input: { state: state(record("a/b")), listing: files("a/b/c") },
      missing: ["a/b"],
      unmanaged: ["a/b/c"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planReconcile(input(c.input));
      assert.deepEqual(
        plan.missing.map((m) => m.path),
        c.missing,
      );
      assert.deepEqual(plan.unmanaged, c.unmanaged);
      assert.equal(plan.nextState === null, c.missing.length === 0);
    });
  }

  it("reports each missing record's owner", () => {
    const plan = planReconcile(
      input({ state: state(record("x", ["q", "e"])), listing: [], allOwners: true }),
    );
    assert.deepEqual(plan.missing, [{ path: "x", pipeline_id: "q", destination_id: "e" }]);
  });

  it("the next state drops only the missing records and stamps now", () => {
    const before = state(record("a"), record("b"), record("c", ["q", "d"]));
    const snapshot = structuredClone(before);
    const plan = planReconcile(input({ state: before, listing: files("a") }));
    assert.ok(plan.nextState);
    assert.deepEqual(
      plan.nextState.outputs.map((r) => r.path),
      ["a", "c"],
    );
    assert.equal(plan.nextState.updated_at, "2026-06-10T00:00:00Z");
    assert.equal(plan.nextState.created_at, before.created_at);
    assert.equal(plan.nextState.distributor_version, "9.9.9");
    assert.deepEqual(plan.nextState.outputs[0], record("a"));
    assert.deepEqual(before, snapshot, "the input state is not modified");
  });

  it("is idempotent: planning over its own next state removes nothing", () => {
    const listing = files("a", "junk");
    const first = planReconcile(input({ state: state(record("a"), record("b")), listing }));
    assert.ok(first.nextState);
    const second = planReconcile(input({ state: first.nextState, listing }));
    assert.deepEqual(second.missing, []);
    assert.equal(second.nextState, null);
    assert.deepEqual(second.unmanaged, ["junk"], "unmanaged entries are never adopted");
  });
});
