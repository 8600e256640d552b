/**
 * Invariants over every case of the table: a second run is a no-op, no path is
 * both written and deleted, every path is clean, the claim keeps every old
 * record, and a crash at any step of the executor's order (claim state →
 * deletes that clear the way → outputs → deletes → final state; each delete
 * step removes files first, then the folders it left empty) converges on a
 * plain rerun to exactly the state and files the uninterrupted run would
 * have left.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ancestorsOf,
  compareUtf8,
  hasReservedSegment,
  isCleanPath,
  LOCK_FILE,
  STATE_FILE,
} from "../paths.js";
import { classifyState } from "../state/read.js";
import type { ClassifiedState, OutputRecord } from "../state/types.js";
import { serializeState, sortRecords } from "../state/write.js";
import type { StorageEntry } from "../storage/driver.js";
import { ownsRecord } from "./_records.js";
import { CASES } from "./plan-run.cases.test.js";
import { isLeftover, planRun, simulateApplied, UNKNOWN_DIGEST } from "./plan-run.js";
import type { RunPlan, RunPlanInput } from "./types.js";

const applicable = CASES.filter((c) => !c.action.startsWith("fail_"));

/** The same run again, as a user would start it after looking at the result. */
function rerunInput(
  input: RunPlanInput,
  root: { state: ClassifiedState; listing: readonly StorageEntry[] },
): RunPlanInput {
  const { verifiedDigests: _verified, ...rest } = input;
  return { ...rest, force: false, state: root.state, listing: [...root.listing] };
}

const written = (plan: RunPlan) =>
  plan.changes.filter((c) => c.change === "create" || c.change === "update");

/** Non-reserved entries as "path size type", sorted: what a user would see in the root. */
function visible(entries: readonly StorageEntry[]): string[] {
  return entries
    .filter((e) => !hasReservedSegment(e.path))
    .map((e) => `${e.path} ${e.size} ${e.type}`)
    .sort(compareUtf8);
}

function _withoutTimestamps(state: ClassifiedState): unknown {
  if (state.class !== "valid") return state;
  const { updated_at: _u, distributor_version: _v, ...rest } = state.state;
  return { ...rest, outputs: rest.outputs.map(({ updated_at: _r, ...record }) => record) };
}

/**
 * The digest of what each listed file holds before the run: what --verify hashed,
 * else what its record says when the size agrees, else unknown bytes.
 */
function initialContent(input: RunPlanInput): Map<string, string | undefined> {
  const records = input.state.class === "valid" ? input.state.state.outputs : [];
  const recorded = new Map(records.map((r) => [r.path, r]));
  const content = new Map<string, string | undefined>();
  for (const entry of input.listing) {
    const record = recorded.get(entry.path);
    const trusted = record !== undefined && record.size === entry.size && entry.type === "file";
    const digest = input.verifiedDigests?.get(entry.path) ?? (trusted ? record.sha256 : undefined);
    content.set(entry.path, digest ?? `unknown bytes at ${entry.path}`);
  }
  return content;
}

interface Crash {
  point: string;
  state: ClassifiedState;
  listing: StorageEntry[];
  /** Outputs not yet rewritten still hold the bytes --verify hashed. */
  verified: boolean;
  /**
   * What rightly outlives the rerun of a killed force (see forceSurvivors):
   * unrecorded files it had not deleted yet and empty folders it had not
   * removed yet (nothing says they were the force's to delete, so a plain
   * run leaves them, as anything it does not plan), and, when the rerun is
   * additive, this owner's leftovers (an additive run deletes nothing),
   * which stay recorded: `survivingRecords`.
   */
  survivors?: StorageEntry[];
  survivingRecords?: OutputRecord[];
}

/** The state `expected` with `records` added. */
function withRecords(expected: ClassifiedState, records: readonly OutputRecord[]): ClassifiedState {
  if (records.length === 0 || expected.class !== "valid") return expected;
  const outputs = sortRecords([...expected.state.outputs, ...records]);
  return { class: "valid", state: { ...expected.state, outputs } };
}

/**
 * `listing` once the files in `gone` are deleted and before any folder is
 * removed: the executor deletes files first, then the folders left empty
 * (deepest first). A folder with nothing left under it is then listed
 * itself, as an empty directory.
 */
function filesGoneFoldersLeft(
  listing: readonly StorageEntry[],
  gone: ReadonlySet<string>,
): StorageEntry[] {
  const kept = listing.filter((e) => e.type === "directory" || !gone.has(e.path));
  const folders = new Set(listing.flatMap((e) => ancestorsOf(e.path)));
  const holdsSomething = new Set([
    ...kept.flatMap((e) => ancestorsOf(e.path)),
    ...[...folders].flatMap(ancestorsOf),
  ]);
  const listed = new Set(kept.map((e) => e.path));
  const empty = [...folders].filter((f) => !holdsSomething.has(f) && !listed.has(f));
  return [...kept, ...empty.map((path): StorageEntry => ({ path, size: 0, type: "directory" }))];
}

/** The root as it would be if the process died right after each step. */
function crashPoints(input: RunPlanInput, plan: RunPlan): Crash[] {
  const force = plan.action === "force_replace";
  const claimed: ClassifiedState = plan.claimState
    ? { class: "valid", state: plan.claimState }
    : input.state;
  const emptied = force
    ? input.listing.filter((e) => hasReservedSegment(e.path))
    : [...input.listing];
  const first = new Set(plan.deletesFirst);
  const cleared = emptied.filter((e) => !first.has(e.path));
  const outputsDone = new Map(cleared.map((e) => [e.path, e]));
  for (const change of written(plan)) {
    outputsDone.set(change.path, {
      path: change.path,
      size: change.output?.size ?? -1,
      type: "file",
    });
  }
  const deletesDone = simulateApplied(plan, input).listing;
  // force_replace killed while it empties the root: every other path it
  // deletes is gone, the others (and every folder) still there.
  const halfGone = new Set(plan.deletes.filter((_, i) => i % 2 === 0));
  const halfEmptied = filesGoneFoldersLeft(input.listing, halfGone);
  const emptying: Crash = {
    point: "while emptying the root",
    state: claimed,
    listing: halfEmptied,
    verified: true,
  };
  const filesDeleted = new Set(plan.deletes);
  const foldersLeft: Crash = {
    point: "after deleting the files, before the folders",
    state: claimed,
    listing: filesGoneFoldersLeft(force ? input.listing : [...outputsDone.values()], filesDeleted),
    verified: force,
  };
  return [
    // A claim written after the root is emptied (claimFirst unset) is not
    // there while it is emptied: such a force is run again (docs/recovery.md).
    ...(force && plan.claimFirst === true ? [emptying, foldersLeft] : []),
    { point: "after the claim state", state: claimed, listing: emptied, verified: true },
    ...(first.size > 0
      ? [
          {
            point: "while clearing the way: files gone, folders left",
            state: claimed,
            listing: filesGoneFoldersLeft(emptied, first),
            verified: true,
          },
        ]
      : []),
    { point: "after clearing the way", state: claimed, listing: cleared, verified: true },
    {
      point: "after the outputs",
      state: claimed,
      listing: [...outputsDone.values()],
      verified: false,
    },
    ...(!force && plan.deletes.length > 0 ? [foldersLeft] : []),
    { point: "after the deletes", state: claimed, listing: deletesDone, verified: false },
  ];
}

/**
 * What outlives the plain rerun after a force_replace killed once its early
 * claim was written, beyond what the uninterrupted run leaves (see
 * Crash.survivors): files no record names and empty folders, and other owners' files and
 * records (the claim keeps those records until the final state, SPEC §6: no
 * other owner's record lost), with every other owner's record in the claim
 * whether or not the force deleted its file; and under additive, this
 * owner's leftovers whose file is still there.
 */
function forceSurvivors(
  input: RunPlanInput,
  plan: RunPlan,
  listing: readonly StorageEntry[],
): Pick<Crash, "survivors" | "survivingRecords"> {
  if (plan.action !== "force_replace" || plan.claimFirst !== true || plan.claimState === null) {
    return {};
  }
  const planned = new Set(input.outputs.map((o) => o.path));
  const claim = new Map(plan.claimState.outputs.map((r) => [r.path, r]));
  const recorded = new Set(
    input.state.class === "valid" ? input.state.state.outputs.map((r) => r.path) : [],
  );
  const others = plan.claimState.outputs.filter(
    (r) => !planned.has(r.path) && !ownsRecord(input.owner, r),
  );
  const survivors: StorageEntry[] = [];
  const survivingRecords: OutputRecord[] = [...others];
  // The folders this owner's leftovers were in: the rerun tidies those it
  // finds empty, except inside a root nested in this one, which it leaves alone.
  const nestedRoots = listing
    .filter((e) => e.path.endsWith(`/${STATE_FILE}`) || e.path.endsWith(`/${LOCK_FILE}`))
    .map((e) => `${e.path.slice(0, e.path.lastIndexOf("/"))}/`);
  const tidied = [...claim.values()]
    .filter((r) => isLeftover(r) && ownsRecord(input.owner, r))
    .filter((r) => !nestedRoots.some((nested) => r.path.startsWith(nested)))
    .map((r) => r.path);
  const plannedOrTidied = [...planned, ...tidied];
  for (const entry of listing) {
    if (hasReservedSegment(entry.path)) continue;
    if (entry.type === "directory") {
      // An empty folder (the force may have emptied it and not removed it
      // yet): nothing tells the rerun it was the force's, so it stays, as an
      // unrecorded file does, unless an output goes there or it is tidied.
      const inside = `${entry.path}/`;
      if (!plannedOrTidied.some((p) => p === entry.path || p.startsWith(inside))) {
        survivors.push(entry);
      }
      continue;
    }
    if (planned.has(entry.path)) continue;
    const record = claim.get(entry.path);
    if (!recorded.has(entry.path) || (record !== undefined && others.includes(record))) {
      survivors.push(entry);
    } else if (input.workflow !== "replacement" && record !== undefined && isLeftover(record)) {
      survivors.push(entry);
      survivingRecords.push(record);
    }
  }
  return { survivors, survivingRecords };
}

describe("invariant: applying the plan then planning again is skip_same", () => {
  for (const c of applicable) {
    test(c.name, () => {
      const plan = planRun(c.input);
      const after = simulateApplied(plan, c.input);
      const again = planRun(rerunInput(c.input, after));
      assert.equal(again.action, "skip_same", JSON.stringify(again.changes, null, 1));
      assert.deepEqual(simulateApplied(again, after), after);
    });
  }
});

describe("invariant: a crash at any step converges on a plain rerun", () => {
  for (const c of applicable) {
    test(c.name, () => {
      const plan = planRun(c.input);
      const expected = simulateApplied(plan, c.input);
      for (const crash of crashPoints(c.input, plan)) {
        const rerun = {
          ...rerunInput(c.input, crash),
          ...(crash.verified && c.input.verifiedDigests
            ? { verifiedDigests: c.input.verifiedDigests }
            : {}),
        };
        const plan2 = planRun(rerun);
        assert.ok(!plan2.action.startsWith("fail_"), `${crash.point}: ${plan2.error?.message}`);
        const converged = simulateApplied(plan2, crash);
        Object.assign(crash, forceSurvivors(c.input, plan, crash.listing));
        // A repair (same digest, file missing or drifted) that already happened
        // leaves nothing for the rerun to do: the bytes and digests are right and
        // only the timestamps of the interrupted state write are lost.
        const view = plan2.action === "skip_same" ? _withoutTimestamps : (s: ClassifiedState) => s;
        const expectedState = withRecords(expected.state, crash.survivingRecords ?? []);
        assert.deepEqual(view(converged.state), view(expectedState), crash.point);
        assert.deepEqual(
          visible(converged.listing),
          visible([...expected.listing, ...(crash.survivors ?? [])]),
          crash.point,
        );
        // Sizes alone cannot tell old bytes from new: follow the digests too.
        const content = initialContent(c.input);
        if (crash.point !== "after the claim state" && crash.point !== "after clearing the way") {
          for (const change of written(plan)) content.set(change.path, change.output?.sha256);
        }
        for (const change of written(plan2)) content.set(change.path, change.output?.sha256);
        for (const output of c.input.outputs) {
          assert.equal(
            content.get(output.path),
            output.sha256,
            `${crash.point}: ${output.path} stale`,
          );
        }
      }
    });
  }
});

describe("invariant: plans are well formed", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const plan = planRun(c.input);
      const paths = [
        ...plan.changes.map((ch) => ch.path),
        ...plan.deletes,
        ...(plan.claimState?.outputs ?? []).map((r) => r.path),
        ...(plan.finalState?.outputs ?? []).map((r) => r.path),
      ];
      for (const path of paths) assert.ok(isCleanPath(path), `not clean: ${path}`);
      for (const path of plan.error?.paths ?? []) {
        assert.ok(path === STATE_FILE || isCleanPath(path), `not clean: ${path}`);
      }
      const sorted = (list: string[]) => [...list].sort(compareUtf8);
      assert.deepEqual(
        plan.changes.map((ch) => ch.path),
        sorted(plan.changes.map((ch) => ch.path)),
      );
      assert.deepEqual(plan.deletes, sorted(plan.deletes));
      assert.deepEqual(plan.deletesFirst, sorted(plan.deletesFirst));
      for (const path of plan.deletesFirst) assert.ok(plan.deletes.includes(path), path);
      if (plan.action !== "force_replace") {
        const writes = new Set(written(plan).map((ch) => ch.path));
        for (const path of plan.deletes)
          assert.ok(!writes.has(path), `${path} written and deleted`);
      }
      for (const state of [plan.claimState, plan.finalState]) {
        if (state === null) continue;
        const read = classifyState({ bytes: serializeState(state) });
        assert.deepEqual(read, { class: "valid", state });
      }
    });
  }
});

describe("invariant: the claim keeps every old record, vouches for no overwritten bytes, and claims every created path", () => {
  for (const c of applicable) {
    test(c.name, () => {
      const plan = planRun(c.input);
      const old =
        c.input.state.class === "valid" && plan.action !== "force_replace"
          ? c.input.state.state
          : null;
      // No claim means the state already on disk serves as the claim.
      const claim = plan.claimState ?? old;
      if (old !== null) {
        const claimed = new Map(claim?.outputs.map((r) => [r.path, r]));
        const updated = new Set(
          plan.changes.filter((ch) => ch.change === "update").map((ch) => ch.path),
        );
        // An overwritten path's record keeps everything but its digest: the
        // file may hold the old bytes, the new ones or (S3) neither yet.
        for (const record of old.outputs) {
          const expected = updated.has(record.path)
            ? { ...record, sha256: UNKNOWN_DIGEST }
            : record;
          assert.deepEqual(claimed.get(record.path), expected);
        }
      }
      if (c.input.state.class === "legacy" && plan.action !== "force_replace") return;
      const claimedPaths = new Set(claim?.outputs.map((r) => r.path));
      for (const change of written(plan)) assert.ok(claimedPaths.has(change.path), change.path);
    });
  }
});
