/**
 * The aligned plan (planRun's shortcut for a large unchanged rerun) must
 * plan exactly what the full planner plans: on every case of the table and
 * its rerun, and on generated roots that are aligned or one step away from
 * it (an entry missing or added, of another type, reserved names nested or
 * at the top, an output that is another's folder, records out of order or of
 * another owner, other sizes and digests, force, case folding, legacy state).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LOCK_FILE, STATE_FILE } from "../paths.js";
import { seededBelow } from "../random.fixtures.js";
import type { OutputRecord } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";
import { CASES } from "./plan-run.cases.test.js";
import { input, listing, ME, planned, record, valid } from "./plan-run.fixtures.js";
import { planAligned, planRun, simulateApplied, UNKNOWN_DIGEST } from "./plan-run.js";
import type { RunPlanInput } from "./types.js";

/** The plan with and without the shortcut; they must be equal. */
function assertSamePlan(given: RunPlanInput, label: string): void {
  assert.deepEqual(planRun(given), planRun(given, { shortcuts: false }), label);
}

/**
 * Names that sort next to each other and extend each other, as `a`, `a.md`,
 * `a-b`, `a/b`, and two that fold onto each other (`a`, `A`).
 */
const NAMES = ["a", "a.md", "a-b", "a0", "a00", "A", "b", "b.txt", "é", "Z", "x y"];

const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function generatedPaths(next: (n: number) => number): string[] {
  const paths = new Set<string>();
  for (let k = 1 + next(12); k > 0; k--) {
    let path = NAMES[next(NAMES.length)] as string;
    for (let depth = next(3); depth > 0; depth--) path += `/${NAMES[next(NAMES.length)]}`;
    paths.add(path);
  }
  // An output that is another's folder is one step away from aligned (below), not aligned.
  const all = [...paths];
  return all.filter(
    (path) => !all.some((other) => other.startsWith(`${path}/`) || path.startsWith(`${other}/`)),
  );
}

/** An aligned root: every output recorded by this owner and stored with its planned bytes. */
function alignedRoot(paths: readonly string[]): RunPlanInput {
  const outputs = paths.map((path) => planned(path));
  const sorted = [...paths].sort(byUtf8);
  return input({
    outputs,
    state: valid(...sorted.map((path) => record(path))),
    listing: [...listing(...sorted), { path: STATE_FILE, size: 10, type: "file" }],
  });
}

type Change = (given: RunPlanInput, next: (n: number) => number) => RunPlanInput;

/** `given` with one more output at `path`, recorded and stored as planned, all in order. */
function withStoredOutput(given: RunPlanInput, path: string): RunPlanInput {
  const state = [...records(given), record(path)].sort((a, b) => byUtf8(a.path, b.path));
  return {
    ...given,
    outputs: [...given.outputs, planned(path)],
    state: valid(...state),
    listing: [...given.listing, ...listing(path)].sort((a, b) => byUtf8(a.path, b.path)),
  };
}

const records = (given: RunPlanInput): OutputRecord[] =>
  given.state.class === "valid" ? [...given.state.state.outputs] : [];
const pick = <T>(list: readonly T[], next: (n: number) => number): T =>
  list[next(list.length)] as T;

/** One step away from aligned, each kind of step the shortcut must notice or plan alike. */
const CHANGES: Record<string, Change> = {
  "entry missing": (given, next) => {
    const kept = [...given.listing];
    kept.splice(next(kept.length), 1);
    return { ...given, listing: kept };
  },
  "entry added": (given, next) => ({
    ...given,
    listing: [...given.listing, ...listing(`${pick(NAMES, next)}/extra`)],
  }),
  "entry of another type": (given, next) => {
    const type = pick<StorageEntry["type"]>(["symlink", "directory", "other"], next);
    const entries = [...given.listing];
    const at = next(entries.length);
    entries[at] = { ...(entries[at] as StorageEntry), type };
    return { ...given, listing: entries };
  },
  "entry of another size": (given, next) => {
    const entries = [...given.listing];
    const at = next(entries.length);
    entries[at] = { ...(entries[at] as StorageEntry), size: 1 + next(9) };
    return { ...given, listing: entries };
  },
  "reserved names at the top": (given, next) => ({
    ...given,
    listing: [
      ...given.listing,
      ...listing(pick([LOCK_FILE, ".distributor.tmp-1", `${STATE_FILE}.x`], next)),
    ],
  }),
  "reserved names in a folder": (given, next) => ({
    ...given,
    listing: [...given.listing, ...listing(`${pick(NAMES, next)}/${LOCK_FILE}`)],
  }),
  "an output that is another's folder": (given, next) => {
    const first = pick(given.outputs, next);
    return { ...given, outputs: [...given.outputs, planned(`${first.path}/inner`)] };
  },
  "an output that is another's folder, recorded and stored (as S3 can)": (given, next) =>
    withStoredOutput(given, `${pick(given.outputs, next).path}/inner`),
  "an output with a reserved name in a folder, recorded and stored": (given, next) =>
    withStoredOutput(given, `${pick(NAMES, next)}/${pick([LOCK_FILE, STATE_FILE], next)}`),
  "records out of order": (given) => {
    const state = records(given).reverse();
    return { ...given, state: valid(...state) };
  },
  "a record of another owner": (given, next) => {
    const state = records(given);
    const at = next(state.length);
    state[at] = { ...(state[at] as OutputRecord), pipeline_id: "other" };
    return { ...given, state: valid(...state) };
  },
  "a record with another digest": (given, next) => {
    const state = records(given);
    const at = next(state.length);
    state[at] = record((state[at] as OutputRecord).path, { content: "old bytes" });
    return { ...given, state: valid(...state) };
  },
  "a record too many": (given, next) => ({
    ...given,
    state: valid(...records(given), record(`${pick(NAMES, next)}/gone`)),
  }),
  "an output too many": (given, next) => ({
    ...given,
    outputs: [...given.outputs, planned(`${pick(NAMES, next)}/new`)],
  }),
  "another source": (given) => ({ ...given, source: { ...given.source, id: "next" } }),
  "a url base": (given) => ({ ...given, urlBase: "https://x.test/site" }),
  "verified digests": (given, next) => {
    const path = pick(given.outputs, next).path;
    return { ...given, verifiedDigests: new Map([[path, "sha256:unexpected"]]) };
  },
  replacement: (given) => ({ ...given, workflow: "replacement" }),
  force: (given) => ({ ...given, force: true }),
  "a root that folds case": (given) => ({ ...given, foldsCase: true }),
  "a root that folds case, holding names that fold together": (given, next) => {
    const path = pick(given.outputs, next).path;
    const other = path === path.toUpperCase() ? path.toLowerCase() : path.toUpperCase();
    const taken = given.outputs.some((output) => output.path === other);
    return { ...(taken ? given : withStoredOutput(given, other)), foldsCase: true };
  },
  "legacy state": (given) => ({ ...given, state: { class: "legacy", schemaVersion: 3 } }),
};

describe("the aligned plan", () => {
  test("plans what the full planner plans on every case of the table and its rerun", () => {
    for (const c of CASES) {
      assertSamePlan(c.input, c.name);
      const plan = planRun(c.input);
      if (plan.action.startsWith("fail_") || plan.finalState === null) continue;
      const after = simulateApplied(plan, { state: c.input.state, listing: c.input.listing });
      assertSamePlan({ ...c.input, force: false, ...after }, `${c.name}, rerun`);
    }
  });

  test("plans what the full planner plans on aligned roots and one step away", () => {
    const next = seededBelow(20261201);
    const names = Object.keys(CHANGES);
    let aligned = 0;
    for (let i = 0; i < 3000; i++) {
      const root = alignedRoot(generatedPaths(next));
      const name = names[next(names.length + 1)];
      const given = name === undefined ? root : (CHANGES[name] as Change)(root, next);
      const label = `${name ?? "aligned"}: ${JSON.stringify(given.outputs.map((o) => o.path))}`;
      if (name === undefined) assert.notEqual(planAligned(given), null, label);
      if (planAligned(given) !== null) aligned++;
      assertSamePlan(given, label);
    }
    // Both kinds were generated: inputs the shortcut plans, and others.
    assert.ok(aligned > 300 && aligned < 2700, `${aligned} of 3000 aligned`);
  });

  test("a folder found past a long run of names that extend each other", () => {
    // "a", then "a-", "a--", ... (all sort before "a/x"), then "a/x": the
    // scan for paths that continue "a" with "/" gives up and asks a set.
    const paths = ["a", ...Array.from({ length: 20 }, (_, k) => `a${"-".repeat(k + 1)}`), "a/x"];
    const given = alignedRoot(paths);
    assert.equal(planAligned(given), null);
    assert.equal(planRun(given).action, "fail_unmanaged");
    assertSamePlan(given, "a folder past the scan");
    assert.notEqual(planAligned(alignedRoot(paths.slice(0, -1))), null);
  });

  test("an unchanged aligned rerun is skip_same, and one changed output is an update", () => {
    const root = alignedRoot(["a", "a.md", "a-b/c", "b/c"]);
    assert.equal(planRun(root).action, "skip_same");
    const changed = {
      ...root,
      outputs: root.outputs.map((o) =>
        o.path === "a-b/c" ? planned("a-b/c", { content: "new" }) : o,
      ),
    };
    const plan = planRun(changed);
    assert.equal(plan.action, "upsert_additive");
    assert.deepEqual(
      plan.changes.map((c) => `${c.path} ${c.change}`),
      ["a unchanged", "a-b/c update", "a.md unchanged", "b/c unchanged"],
    );
    assert.deepEqual(
      plan.claimState?.outputs.filter((r) => r.sha256 === UNKNOWN_DIGEST).map((r) => r.path),
      ["a-b/c"],
      "the overwritten path's digest is unknown until the final state",
    );
    assert.equal(plan.finalState?.outputs.length, 4);
    assert.equal(ME.pipelineId, plan.finalState?.outputs[2]?.pipeline_id);
  });
});
