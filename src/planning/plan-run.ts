/**
 * The run planner (SPEC §6 step 3, seed: Workflow Semantics and Publish Planning
 * Outcomes). A pure function: the classified state, the listing, the planned
 * outputs and `now` come in; the action, per-output changes with reasons, the
 * deletes and the states to write come out. The executor applies the plan in
 * this order without re-deciding: claim state → deletes that clear the way →
 * outputs → other deletes → final state.
 */
import type { Owner, PlannedOutput } from "../model.js";
import {
  addAncestors,
  ancestorsOf,
  compareUtf8,
  hasReservedSegment,
  STATE_FILE,
} from "../paths.js";
import type { CatalogState, OutputRecord } from "../state/types.js";
import { sortRecords } from "../state/write.js";
import type { StorageEntry } from "../storage/driver.js";
import { blockerOf, type Clearing } from "./_blockers.js";
import { caseFoldClashes } from "./_case-fold.js";
import { blockedPlan, caseFoldPlan, conflictPlan, foreignRootPlan } from "./_failures.js";
import {
  decideRecorded,
  outputDifferences,
  ownsRecord,
  type RecordContext,
  recordFor,
} from "./_records.js";
import {
  type Blocker,
  type Removal,
  removalOf,
  type StorageView,
  storageView,
  structuralBlocker,
  viewPaths,
} from "./_storage-view.js";
import type { OutputChange, RunPlan, RunPlanInput } from "./types.js";

export { simulateApplied } from "./simulate.js";

/**
 * Plan one (pipeline, destination) pair. Never throws for anything storage or
 * state may hold: refusals are `fail_unmanaged` / `fail_conflict` plans whose
 * `error` carries the code (`unmanaged_path`, `unsafe_path`, `state_conflict`).
 * Reserved names (any segment starting with `.distributor.`) in the listing are
 * ignored everywhere. An aligned unchanged catalog takes a shortcut
 * (planAligned) to the same plan; `shortcuts: false` plans every input in
 * full, for the test that compares the two.
 */
export function planRun(input: RunPlanInput, options: { shortcuts?: boolean } = {}): RunPlan {
  if (options.shortcuts !== false) {
    const aligned = planAligned(input);
    if (aligned !== null) return aligned;
  }
  const view = storageView(input.listing);
  const { state } = input;
  if (!input.force && (state.class === "invalid" || state.class === "unsupported")) {
    return conflictPlan(input);
  }
  if (input.foldsCase) {
    const clashes = _caseFoldClashes(input, view);
    if (clashes.length > 0) return caseFoldPlan(input, clashes);
  }
  if (input.force) return _planForce(input, view);
  switch (state.class) {
    case "invalid":
    case "unsupported":
      // Handled above; listed so that the switch stays exhaustive.
      return conflictPlan(input);
    case "missing":
      return _planMissing(input, view);
    case "legacy":
      return _planCatalog(input, view, null);
    case "valid":
      return _planCatalog(input, view, state.state);
  }
}

/** A change that writes its output: a create or an update. */
export type WriteChange = OutputChange & { output: PlannedOutput };

/** The changes that write an output (creates and updates), in plan order. */
export function writesOf(changes: readonly OutputChange[]): WriteChange[] {
  return changes.filter(
    (change): change is WriteChange =>
      (change.change === "create" || change.change === "update") && change.output !== undefined,
  );
}

/** Names the run writes or deletes that another name folds onto (the root folds case). */
function _caseFoldClashes(input: RunPlanInput, view: StorageView) {
  const planned = input.outputs.map((output) => output.path);
  // force_replace empties the root first: only the planned names can clash then.
  if (input.force) return caseFoldClashes({ planned, deleting: [], recorded: [] });
  const records = input.state.class === "valid" ? input.state.state.outputs : [];
  const plannedSet = new Set(planned);
  const deleting = _removed(input, view, records, () => plannedSet);
  return caseFoldClashes({
    planned,
    deleting: deleting.map((record) => record.path),
    view,
    recorded: records.map((record) => record.path),
  });
}

/**
 * The records this run removes (deleting their files where that is ours to
 * do): a replacement's omissions, or an additive run's gone leftovers.
 */
function _removed(
  input: RunPlanInput,
  view: StorageView,
  records: readonly OutputRecord[],
  plannedPaths: () => ReadonlySet<string>,
): OutputRecord[] {
  return input.workflow === "replacement"
    ? _omitted(input, records, plannedPaths())
    : _goneLeftovers(input, view, records, plannedPaths);
}

/** Records of this owner that a replacement run deletes: those it no longer plans. */
function _omitted(
  input: RunPlanInput,
  records: readonly OutputRecord[],
  plannedPaths: ReadonlySet<string>,
): OutputRecord[] {
  if (input.workflow !== "replacement") return [];
  return records.filter((r) => ownsRecord(input.owner, r) && !plannedPaths.has(r.path));
}

/**
 * Leftover records (see LEFTOVER_SOURCE_DIGEST) of this owner, not planned,
 * whose file an interrupted force_replace already deleted: an additive run
 * drops them (and removes the folders the force left empty). So too when
 * something else stands there now (a folder, a symlink, another root's
 * content): the file is gone, and nothing there is handed to a delete (see
 * removalOf). Those whose file is still there stay, as every record an
 * additive run does not plan.
 */
function _goneLeftovers(
  input: RunPlanInput,
  view: StorageView,
  records: readonly OutputRecord[],
  plannedPaths: () => ReadonlySet<string>,
): OutputRecord[] {
  return records.filter(
    (r) =>
      isLeftover(r) &&
      ownsRecord(input.owner, r) &&
      !plannedPaths().has(r.path) &&
      removalOf(view, r.path).kind !== "delete",
  );
}

/** force_replace: the root is emptied, then every output is created under a fresh state. */
function _planForce(input: RunPlanInput, view: StorageView): RunPlan {
  // force keeps a nested root's tool files, and so the folder they are in:
  // a planned file there could never be written. Anything else in the way goes.
  const kept: Blocker[] = [];
  let inTheWay = false;
  for (const { path } of input.outputs) {
    const blocker = structuralBlocker(view, path);
    if (blocker === null) continue;
    // Inside another root (or at its folder): that root's to manage, also
    // under --force, which keeps its tool files.
    if (blocker.nestedRoot) kept.push(blocker);
    else inTheWay = true;
  }
  if (kept.length > 0) return blockedPlan(input, kept);
  const plan = _fresh(input, "force_replace rewrites everything");
  // A state path that is a directory goes with its content (the executor then
  // deletes the state path itself); other reserved names stay: a nested
  // root's lock may be held by a live run.
  const stateContent = input.listing
    .map((entry) => entry.path)
    .filter((path) => path.startsWith(`${STATE_FILE}/`));
  // One sort of all three (viewPaths would sort the entries on their own first).
  const deletes = [...view.entries.keys(), ...view.emptyDirs, ...stateContent].sort(compareUtf8);
  // On a root that folds case (a plain run refuses names that fold onto each
  // other, which an exact check does not see), and over a legacy state, whose
  // files other owners may have published without records, the claim comes
  // after the root is emptied, as the fresh final state.
  const late = { ...plan, action: "force_replace" as const, deletes };
  if (input.foldsCase || input.state.class === "legacy") return late;
  const claimState = _forceClaim(input, plan, view);
  // With something in the way of a planned output (a file where it needs a
  // folder, a folder where it needs a file), an early claim is written only
  // if a plain run from it could clear the way: when what is in the way is
  // this owner's old outputs, which the claim marks as leftovers. Not when
  // it is another owner's or unmanaged: that run would refuse it.
  if (inTheWay && (claimState === null || !_plainRunCanFinish(input, claimState))) return late;
  return { ...late, claimState, claimFirst: true };
}

/**
 * Whether a plain run of the same owner, planned against the force's early
 * claim before anything is deleted, goes ahead. Deleting only takes things
 * out of the way (and the folders it empties are cleared with the leftover
 * records in them), so a run killed later while emptying the root can go on
 * too; the crash invariant test checks both.
 */
function _plainRunCanFinish(input: RunPlanInput, claim: CatalogState): boolean {
  const { verifiedDigests: _verified, ...rest } = input;
  const rerun = planRun({ ...rest, force: false, state: { class: "valid", state: claim } });
  return !rerun.action.startsWith("fail_");
}

/**
 * The state a force_replace writes before it deletes anything (where the
 * state path holds a file or nothing; see apply-plan.ts): killed after it,
 * the root holds a valid state from which a plain run converges (SPEC §6).
 * A planned path where something is now keeps UNKNOWN_DIGEST in it until the
 * final state: what is there is not the planned output, and a rerun must
 * rewrite it, never take it as unchanged.
 */
function _forceClaim(
  input: RunPlanInput,
  plan: Omit<RunPlan, "action">,
  view: StorageView,
): CatalogState | null {
  const fresh = plan.finalState;
  if (fresh === null) return null;
  const planned = new Set(fresh.outputs.map((record) => record.path));
  // Records this run does not plan stay until the final state, so that no
  // file the force has not deleted yet is left unrecorded (a later run that
  // publishes its path would refuse it as unmanaged). Other owners' stay as
  // they are: their owners' plain runs go on as before (SPEC §6: no other
  // owner's record lost). This owner's are marked as leftovers, so that its
  // plain rerun drops those whose file the force already deleted.
  const old = input.state.class === "valid" ? input.state.state.outputs : [];
  const unplanned: OutputRecord[] = [];
  for (const record of old) {
    if (planned.has(record.path)) continue;
    unplanned.push(ownsRecord(input.owner, record) ? asLeftover(record) : record);
  }
  const present = fresh.outputs.some((record) => view.entries.has(record.path));
  if (!present && unplanned.length === 0) return fresh;
  const outputs = fresh.outputs.map((record) =>
    view.entries.has(record.path) ? { ...record, sha256: UNKNOWN_DIGEST } : record,
  );
  return { ...fresh, outputs: sortRecords([...outputs, ...unplanned]) };
}

/** A digest no output has: the record of a path whose bytes are not the planned ones yet. */
export const UNKNOWN_DIGEST = `sha256:${"0".repeat(64)}`;

/**
 * The source digest (no manifest has it) that marks a leftover: the record of
 * an output of this owner that a force_replace, killed before it finished,
 * was about to delete. Only the source identity is marked: the digest and
 * size stay the file's, for verify and for a later run that plans the path
 * again (which writes the record anew, unmarked). A plain run of the owner
 * drops the record once the file is gone (an additive run never deletes the
 * file itself; a replacement run deletes it as any output it omits).
 */
export const LEFTOVER_SOURCE_DIGEST = `sha256:${"f".repeat(64)}`;

/** Whether the record is a leftover of an interrupted force_replace (LEFTOVER_SOURCE_DIGEST). */
export function isLeftover(record: OutputRecord): boolean {
  return record.source.digest === LEFTOVER_SOURCE_DIGEST;
}

function asLeftover(record: OutputRecord): OutputRecord {
  return { ...record, source: { ...record.source, digest: LEFTOVER_SOURCE_DIGEST } };
}

function _planMissing(input: RunPlanInput, view: StorageView): RunPlan {
  // Nothing at all (not even a nested root's files): no output can be in the
  // way, so the check per output, a sort and 100,000 lookups, is skipped.
  if (view.entries.size === 0 && view.dirs.size === 0 && view.toolDirs.size === 0) {
    return { ..._fresh(input, "not in catalog"), action: "publish_new" };
  }
  // Nothing is ours under missing state, so nothing is cleared by deleting it.
  const clearing: Clearing = {
    view,
    recorded: new Map(),
    omitted: new Set(),
    first: new Set(),
    memo: { folder: "" },
  };
  const blockers = _blockersOf(_sorted(input.outputs), clearing);
  if (blockers.length > 0) return blockedPlan(input, blockers);
  // Empty directories are no content: the outputs go around them.
  if (view.entries.size === 0) {
    return { ..._fresh(input, "not in catalog"), action: "publish_new" };
  }
  // Nothing planned collides, yet the root holds content that is not ours.
  return foreignRootPlan(input, viewPaths(view));
}

/**
 * What stands in the way of each output, in output order. A plain loop, not
 * flatMap: on 100,000 outputs that built as many singleton arrays to collect.
 */
function _blockersOf(outputs: readonly PlannedOutput[], clearing: Clearing): Blocker[] {
  const blockers: Blocker[] = [];
  for (const { path } of outputs) {
    // Missing state: nothing is recorded, and the root is not legacy.
    const blocker = blockerOf(clearing, path, false, false);
    if (blocker !== null) blockers.push(blocker);
  }
  return blockers;
}

/** The records whose path is in neither set. */
function _notIn(
  records: readonly OutputRecord[],
  planned: ReadonlySet<string>,
  omitted: ReadonlySet<string>,
): OutputRecord[] {
  return records.filter((r) => !planned.has(r.path) && !omitted.has(r.path));
}

/** publish_new and force_replace: every output is a create under a brand-new state. */
function _fresh(input: RunPlanInput, reason: string): Omit<RunPlan, "action"> {
  const context = _context(input);
  const times = { created_at: input.now, updated_at: input.now };
  const outputs = _sorted(input.outputs);
  const records = outputs.map((output) => recordFor(output, context, times));
  const changes = outputs.map((output, i) => _change(output, "create", reason, records[i]));
  // On a fresh root the claim already is the final state: a crash leaves every
  // written output recorded (unchanged on rerun) and every unwritten one "file missing".
  const state = _state(input, input.now, records);
  // The same object twice: the executor writes it once.
  return {
    error: null,
    changes,
    deletes: [],
    deletesFirst: [],
    claimState: state,
    finalState: state,
  };
}

interface Planned {
  change: OutputChange;
  record: OutputRecord;
  /** The record differs from the one in the old state (or there was none). */
  recordChanged: boolean;
}

/** Valid (`old` set) or legacy (`old` null) state: per-output changes by workflow. */
function _planCatalog(input: RunPlanInput, view: StorageView, old: CatalogState | null): RunPlan {
  const oldRecords = old?.outputs ?? [];
  // Plain loops, not map into [path, record] pairs: 100,000 arrays to collect.
  const byPath = new Map<string, OutputRecord>();
  for (const record of oldRecords) byPath.set(record.path, record);
  const outputs = _sorted(input.outputs);
  // Built only when needed: for a replacement's omissions, and for the records
  // this run does not plan (none on an unchanged rerun of the same bundle).
  let plannedPaths: Set<string> | undefined;
  const plannedPathSet = (): Set<string> => {
    if (plannedPaths === undefined) {
      plannedPaths = new Set<string>();
      for (const output of outputs) plannedPaths.add(output.path);
    }
    return plannedPaths;
  };
  const omitted = _removed(input, view, oldRecords, plannedPathSet);
  const omittedPaths = new Set(omitted.map((record) => record.path));
  const clearing: Clearing = {
    view,
    recorded: byPath,
    omitted: omittedPaths,
    first: new Set(),
    memo: { folder: "" },
  };
  // One pass: what is in the way of each output, and each output's change,
  // with one lookup of its record. Any blocker fails the plan, so the
  // changes are only worked out while there is none.
  const scope: Scope = { input, context: _context(input) };
  const blockers: Blocker[] = [];
  const planned: Planned[] = [];
  let recordsPlanned = 0;
  for (const output of outputs) {
    const record = byPath.get(output.path);
    if (record !== undefined) recordsPlanned += 1;
    const blocker = blockerOf(clearing, output.path, record !== undefined, old === null);
    if (blocker !== null) blockers.push(blocker);
    else if (blockers.length === 0) {
      planned.push(_planOutput(scope, output, record, view.entries.get(output.path)));
    }
  }
  if (blockers.length > 0) return blockedPlan(input, blockers);
  // Paths are unique in a valid state: when every record is planned, none is kept.
  const kept =
    recordsPlanned === oldRecords.length ? [] : _notIn(oldRecords, plannedPathSet(), omittedPaths);
  return _catalogPlan(input, old, planned, {
    omitted,
    kept,
    deleteChanges: omitted.map((r) => _deleteChange(view, r)),
    deletes: () => _deletes(view, omitted, clearing.first, plannedPathSet),
    deletesFirst: [...clearing.first].sort(compareUtf8),
  });
}

/** What a catalog plan removes and keeps besides its planned outputs. */
interface CatalogRest {
  /** Records this run removes (see _removed). */
  omitted: OutputRecord[];
  /** Records this run neither plans nor removes. */
  kept: OutputRecord[];
  /** The delete change of each omitted record. */
  deleteChanges: OutputChange[];
  /** RunPlan.deletes, asked for only when the plan writes. */
  deletes: () => string[];
  deletesFirst: string[];
}

/** The plan of a valid or legacy root once nothing is in the way: skip_same, or the workflow's action. */
function _catalogPlan(
  input: RunPlanInput,
  old: CatalogState | null,
  planned: readonly Planned[],
  rest: CatalogRest,
): RunPlan {
  const { omitted } = rest;
  const changes = [...planned.map((p) => p.change), ...rest.deleteChanges];
  // Planned changes follow the sorted outputs already; only deletes need merging in.
  if (omitted.length > 0) changes.sort((a, b) => compareUtf8(a.path, b.path));
  const quiet = omitted.length === 0 && planned.every((p) => !p.recordChanged);
  if (old !== null && quiet) {
    return {
      action: "skip_same",
      error: null,
      changes,
      deletes: [],
      deletesFirst: [],
      claimState: null,
      finalState: null,
    };
  }
  const created: OutputRecord[] = [];
  const overwritten = new Set<string>();
  for (const p of planned) {
    if (p.change.change === "create") created.push(p.record);
    else if (p.change.change === "update") overwritten.add(p.change.path);
  }
  return {
    action: input.workflow === "replacement" ? "replace_catalog" : "upsert_additive",
    error: null,
    changes,
    deletes: rest.deletes(),
    deletesFirst: rest.deletesFirst,
    claimState: _claim(input, old, created, overwritten),
    finalState: _state(input, old?.created_at ?? input.now, [
      ...rest.kept,
      ...planned.map((p) => p.record),
    ]),
    omittedRecords: omitted,
  };
}

/**
 * The common large rerun, planned without building the storage view: a
 * valid state whose records are the outputs, path for path in the outputs'
 * sorted order, and a listing that holds exactly those paths, each a file,
 * besides the root's own reserved files (its state, lock and temporary
 * files, which the view leaves out too). No output is then in the way of
 * another, unless an output's path is another's folder (checked here), and
 * nothing else stands anywhere: no blocker, no record omitted or kept aside,
 * and each output's record and listing entry sit at its own index, where
 * _planCatalog looks both up in maps (on 100,000 outputs, building and
 * reading those maps and the view took most of planning). Null for any
 * other input, which the full planner plans; the test "the aligned plan"
 * compares both on generated inputs (exported for it).
 */
export function planAligned(input: RunPlanInput): RunPlan | null {
  const { state } = input;
  if (input.force || input.foldsCase || state.class !== "valid") return null;
  const records = state.state.outputs;
  if (records.length !== input.outputs.length) return null;
  const outputs = _sorted(input.outputs);
  for (let i = 0; i < outputs.length; i++) {
    if ((records[i] as OutputRecord).path !== (outputs[i] as PlannedOutput).path) return null;
  }
  const entries = _alignedEntries(input.listing, outputs);
  if (entries === null || _someOutputIsAFolder(outputs)) return null;
  const scope: Scope = { input, context: _context(input) };
  const planned = outputs.map((output, i) =>
    _planOutput(scope, output, records[i] as OutputRecord, entries[i]),
  );
  return _catalogPlan(input, state.state, planned, {
    omitted: [],
    kept: [],
    deleteChanges: [],
    deletes: () => [],
    deletesFirst: [],
  });
}

/**
 * The listing's entry for each of the sorted `outputs`, index for index,
 * when the listing holds those paths, each a file without a reserved
 * segment, and nothing else but reserved names at the top of the root;
 * otherwise null.
 */
function _alignedEntries(
  listing: readonly StorageEntry[],
  outputs: readonly PlannedOutput[],
): StorageEntry[] | null {
  const entries: StorageEntry[] = [];
  for (const entry of listing) {
    if (!entry.path.includes("/") && hasReservedSegment(entry.path)) continue;
    const output = outputs[entries.length];
    if (output === undefined || entry.path !== output.path || entry.type !== "file") return null;
    if (hasReservedSegment(entry.path)) return null;
    entries.push(entry);
  }
  return entries.length === outputs.length ? entries : null;
}

/**
 * Whether one of the sorted outputs' paths is a folder of another. In UTF-8
 * order the paths that start with a path P come right after it, so P is a
 * folder when one of those continues with `/`; most paths start none of the
 * next ones. Past a few such paths in a row (names that extend each other,
 * `a`, `a0`, `a00`, ...) the scan would grow quadratic: a set of every
 * folder then answers instead.
 */
function _someOutputIsAFolder(outputs: readonly PlannedOutput[]): boolean {
  for (let i = 0; i < outputs.length; i++) {
    const path = (outputs[i] as PlannedOutput).path;
    for (let j = i + 1, scanned = 0; j < outputs.length; j++, scanned++) {
      const next = (outputs[j] as PlannedOutput).path;
      if (!next.startsWith(path)) break;
      if (next.charCodeAt(path.length) === SLASH) return true;
      if (scanned === MAX_PREFIX_SCAN) return _someOutputIsAFolderBySet(outputs);
    }
  }
  return false;
}

const SLASH = 0x2f;
const MAX_PREFIX_SCAN = 16;

function _someOutputIsAFolderBySet(outputs: readonly PlannedOutput[]): boolean {
  const folders = new Set<string>();
  for (const { path } of outputs) addAncestors(folders, path);
  return outputs.some(({ path }) => folders.has(path));
}

/**
 * The state written before any output. Under a valid state it is the old state
 * plus the records of created paths, with the record of every path this run
 * overwrites (its owner and the rest kept) holding UNKNOWN_DIGEST until the
 * final state; records about to be deleted stay until the final state. With
 * no create and no update the old state already claims every path written:
 * null, nothing to write.
 *
 * Why not keep an overwritten record's old digest, as SPEC §6 suggests: after
 * a crash the same run would still see an update, but a run that stopped
 * with an error halfway leaves the file holding the new bytes under the old
 * digest. Publishing the previous bundle again (the usual way back) then
 * found the same digest and, where the two versions had one size, took the
 * new bytes as unchanged: skip_same over a file it had not restored. With
 * the unknown digest every later run, of any bundle, rewrites the path.
 * It costs an update-only run one more state write.
 *
 * Under legacy state it is null: a legacy root stays legacy until the final state
 * is written, and since planned paths are never unmanaged collisions under legacy,
 * a rerun after a crash plans the same writes again and converges. Writing a
 * schema 4 claim there would be worse: an overwritten file recorded with its new
 * digest could read as unchanged while still holding the old bytes.
 */
function _claim(
  input: RunPlanInput,
  old: CatalogState | null,
  created: OutputRecord[],
  overwritten: ReadonlySet<string>,
): CatalogState | null {
  if (old === null || (created.length === 0 && overwritten.size === 0)) return null;
  const kept =
    overwritten.size === 0
      ? old.outputs
      : old.outputs.map((record) =>
          overwritten.has(record.path) ? { ...record, sha256: UNKNOWN_DIGEST } : record,
        );
  return _state(input, old.created_at, [...kept, ...created]);
}

/** What every output of one plan shares: built once, not per output. */
interface Scope {
  input: RunPlanInput;
  context: RecordContext;
}

/** One output's change and record, given its old record and what storage holds at its path. */
function _planOutput(
  scope: Scope,
  output: PlannedOutput,
  record: OutputRecord | undefined,
  entry: StorageEntry | undefined,
): Planned {
  const { input, context } = scope;
  const now = { created_at: input.now, updated_at: input.now };
  if (record === undefined) {
    // Only legacy state gets here with a file already at the path (valid state blocks it).
    const reason =
      entry !== undefined ? "overwrites a file left under legacy state" : "not in catalog";
    const fresh = recordFor(output, context, now);
    const change = entry !== undefined ? "update" : "create";
    return { change: _change(output, change, reason, fresh), record: fresh, recordChanged: true };
  }
  const decision = decideRecorded(output, {
    record,
    entry,
    verified: input.verifiedDigests?.get(output.path),
    owner: input.owner,
  });
  if (decision.change === "update") {
    const next = recordFor(output, context, {
      created_at: record.created_at,
      updated_at: input.now,
    });
    return {
      change: _change(output, "update", decision.reason, next),
      record: next,
      recordChanged: true,
    };
  }
  const differences = outputDifferences(output, context, record);
  if (differences.length === 0) {
    // The old record is the same field for field (validation allows no other
    // fields, the writer orders them): keep it.
    return {
      change: _change(output, "unchanged", decision.reason, record),
      record,
      recordChanged: false,
    };
  }
  const touched = recordFor(output, context, {
    created_at: record.created_at,
    updated_at: input.now,
  });
  const reason = `${decision.reason}; record changes: ${differences.join(", ")}`;
  return {
    change: _change(output, "unchanged", reason, touched),
    record: touched,
    recordChanged: true,
  };
}

function _deleteChange(view: StorageView, record: OutputRecord): OutputChange {
  const why = isLeftover(record)
    ? "left by a force_replace that did not finish"
    : "omitted by this run (replacement)";
  const note = _removalNote(removalOf(view, record.path));
  const reason = note === null ? why : `${why}; ${note}`;
  const change: OutputChange = { path: record.path, change: "delete", reason };
  if (record.url !== undefined) change.url = record.url;
  return change;
}

/** What a removed record's reason adds when its file is not deleted: null when it is. */
function _removalNote(removal: Removal): string | null {
  switch (removal.kind) {
    case "delete":
      return null;
    case "left":
      return `${removal.why}, left alone, record dropped`;
    case "folder":
      return "a folder is there now, left alone, record dropped";
    case "tidy":
    case "gone":
      return "already gone from storage, record dropped";
  }
}

/**
 * The omitted paths handed to the driver's delete (see removalOf): what the
 * listing shows of ours, and missing ones whose folders a killed run may
 * have left empty. Never a symlink, a folder, or a file in a nested root;
 * and no missing one under a folder this plan clears or replaces with an
 * output (the clearing removes that folder, and the output's file stands
 * where the folder was by the time the other deletes run).
 */
function _deletes(
  view: StorageView,
  omitted: readonly OutputRecord[],
  cleared: ReadonlySet<string>,
  plannedPaths: () => ReadonlySet<string>,
): string[] {
  const deletes: string[] = [];
  for (const { path } of omitted) {
    const { kind } = removalOf(view, path);
    if (kind === "delete") deletes.push(path);
    if (kind !== "tidy") continue;
    const replaced = ancestorsOf(path).some((dir) => cleared.has(dir) || plannedPaths().has(dir));
    if (!replaced) deletes.push(path);
  }
  return deletes;
}

function _change(
  output: PlannedOutput,
  change: OutputChange["change"],
  reason: string,
  record: OutputRecord | undefined,
): OutputChange {
  const result: OutputChange = { path: output.path, change, reason, output };
  if (record?.url !== undefined) result.url = record.url;
  return result;
}

function _state(
  input: RunPlanInput,
  createdAt: string,
  records: readonly OutputRecord[],
): CatalogState {
  return {
    schema_version: 4,
    distributor_version: input.distributorVersion,
    created_at: createdAt,
    updated_at: input.now,
    state: { mode: "catalog" },
    outputs: sortRecords(records),
  };
}

function _context(input: RunPlanInput): RecordContext {
  const owner: Owner = input.owner;
  const context: RecordContext = { owner, source: input.source, now: input.now };
  if (input.urlBase !== undefined) context.urlBase = input.urlBase;
  return context;
}

function _sorted(outputs: readonly PlannedOutput[]): PlannedOutput[] {
  return [...outputs].sort((a, b) => compareUtf8(a.path, b.path));
}
