/**
 * The library entry point (SPEC §12): the same operations as the CLI, with typed
 * options, returning the same report objects that `--json` prints. Failures are
 * thrown as DistributorError with a stable `code`.
 */
export { loadConfig } from "./config/load.js";
export type { Config, DestinationConfig, PipelineConfig } from "./config/types.js";
export {
  BusyLockError,
  DistributorError,
  type ErrorCode,
  type ErrorReport,
  LockedError,
} from "./errors.js";
export { type PruneOptions, type PruneReport, prune } from "./execution/prune.js";
export {
  type ReconcileOptions,
  type ReconcileReport,
  reconcileState,
} from "./execution/reconcile.js";
export { type RunOptions, run } from "./execution/run.js";
export { type StatusReport, status } from "./execution/status.js";
export { type ValidateReport, validate } from "./execution/validate.js";
export { type VerifyOptions, type VerifyReport, verify } from "./execution/verify.js";
export type { PairResult, RunReport } from "./reporting/report.js";
export { DISTRIBUTOR_VERSION } from "./version.js";
