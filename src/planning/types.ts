/**
 * Inputs and outputs of the run planner (plan-run.ts). The planner is a pure
 * function: everything it needs arrives here as data (no I/O, no clock), and the
 * plan it returns is executed without re-deciding anything.
 */
import type { ErrorReport } from "../errors.js";
import type {
  Action,
  OutputChangeKind,
  Owner,
  PlannedOutput,
  SourceIdentity,
  Workflow,
} from "../model.js";
import type { CatalogState, ClassifiedState, OutputRecord } from "../state/types.js";
import type { StorageEntry } from "../storage/driver.js";

export interface RunPlanInput {
  owner: Owner;
  source: SourceIdentity;
  /** The pipeline's planned outputs (already collision-free). */
  outputs: readonly PlannedOutput[];
  state: ClassifiedState;
  /** Everything under the root, reserved names included (the planner ignores those). */
  listing: readonly StorageEntry[];
  workflow: Workflow;
  /** `run --force`: plan force_replace. */
  force: boolean;
  /**
   * `run --verify`: actual `sha256:` digests of files that would otherwise be
   * `unchanged`, hashed by the caller. A mismatch turns the output into an update.
   */
  verifiedDigests?: ReadonlyMap<string, string>;
  /**
   * The root treats names that differ only by case as one (the driver probed
   * it; see _case-fold.ts). Then such names among planned outputs, storage and
   * records fail the plan. Default: false.
   */
  foldsCase?: boolean;
  /** Destination base URL; output urls are base + percent-encoded path. */
  urlBase?: string;
  /** Formatted UTC timestamp `YYYY-MM-DDTHH:MM:SSZ` used for every new timestamp. */
  now: string;
  distributorVersion: string;
}

export interface OutputChange {
  path: string;
  change: OutputChangeKind;
  /** Why, for humans: "not in catalog", "sha256 differs", "file missing", ... */
  reason: string;
  /** The planned output (absent for deletes). */
  output?: PlannedOutput;
  /** The output's public URL when the destination has a `url`. */
  url?: string;
}

export interface RunPlan {
  action: Action;
  /** Set for fail_* actions: unmanaged_path, state_conflict or unsafe_path. */
  error: ErrorReport | null;
  /** Every planned output's change plus one `delete` per removed record; sorted by path. */
  changes: OutputChange[];
  /**
   * Paths to delete after writing outputs (replacement). For force_replace,
   * what the executor deletes first: every file and empty directory in the
   * root, and the content of a state path that is a directory; other reserved
   * names (a nested root's lock and state, temporary files) are not touched.
   */
  deletes: string[];
  /**
   * The part of `deletes` that must go before any output is written, because an
   * output needs its place (replacement): an omitted file where an output needs
   * a folder (`docs` → `docs/index.html`), or the omitted files inside a folder
   * an output replaces with a file. Sorted by path; empty otherwise.
   */
  deletesFirst: string[];
  /**
   * The state written before any output (crash safety): claims every path about
   * to be written, keeps the old record of overwritten paths with an unknown
   * digest (UNKNOWN_DIGEST: whatever bytes they hold, a later run rewrites them)
   * and the records of paths about to be deleted. Null when the old state
   * already claims every write (no create, no update) or nothing is written.
   */
  claimState: CatalogState | null;
  /**
   * force_replace only: the claim may replace the old state before the root
   * is emptied (nothing stands in the way of a planned output, so a plain run
   * can finish what it records). Otherwise it is written after the deletes.
   */
  claimFirst?: boolean;
  /**
   * The state written last. Null for skip_same and fail_*. On a fresh root
   * (publish_new, force_replace) it is the claim state itself, the same object:
   * the claim already is final there, and the executor writes it once.
   */
  finalState: CatalogState | null;
  /**
   * The records of the outputs this plan deletes (replacement): one whose
   * delete fails is kept in the final state, so that a rerun retries it.
   */
  omittedRecords?: readonly OutputRecord[];
}
