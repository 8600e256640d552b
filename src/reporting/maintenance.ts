/**
 * Human renderings of the maintenance reports (reconcile-state, verify, prune):
 * a summary line, then one line per path with what happened or why.
 */
import type { PruneReport } from "../execution/prune.js";
import type { ReconcileReport } from "../execution/reconcile.js";
import type { VerifyReport } from "../execution/verify.js";
import { oneLine, paint, type Style } from "./human.js";

const DETAIL_LIMIT = 50;

function _limited(lines: string[]): string[] {
  if (lines.length <= DETAIL_LIMIT) return lines;
  return [
    ...lines.slice(0, DETAIL_LIMIT),
    `  … and ${lines.length - DETAIL_LIMIT} more (--json lists all)`,
  ];
}

function _owner(report: { pipeline_id: string; destination_id: string; root: string }): string {
  return `${report.pipeline_id} → ${report.destination_id} (root ${oneLine(report.root)})`;
}

export function formatReconcileReport(report: ReconcileReport, style: Style): string {
  const verb = report.dry_run ? "would remove" : "removed";
  const count = report.dry_run ? report.missing.length : report.removed.length;
  const lines = [
    `${_owner(report)}: ${report.missing.length} missing managed outputs, ${report.unmanaged.length} unmanaged entries; ${verb} ${count} records`,
    ..._limited(
      report.missing.map(
        (record) =>
          `  ${paint("missing", "yellow", style)} ${oneLine(record.path)} (owner ${record.pipeline_id} → ${record.destination_id})`,
      ),
    ),
    ..._limited(
      report.unmanaged.map(
        (path) => `  ${paint("unmanaged", "dim", style)} ${oneLine(path)} (left as is)`,
      ),
    ),
  ];
  if (report.dry_run) lines.push(paint("Dry run: the state was not rewritten.", "dim", style));
  else if (report.removed.length === 0)
    lines.push(paint("Nothing to remove: the state was not rewritten.", "dim", style));
  return `${lines.join("\n")}\n`;
}

export function formatVerifyReport(report: VerifyReport, style: Style): string {
  const drifted = report.modified.length + report.missing.length;
  const summary = report.ok
    ? paint(`all ${report.checked} outputs match their records`, "green", style)
    : paint(`${drifted} of ${report.checked} outputs drifted`, "red", style);
  const lines = [
    `${_owner(report)}: ${summary}`,
    ..._limited([
      ...report.modified.map((path) => `  ${paint("modified", "red", style)} ${oneLine(path)}`),
      ...report.missing.map((path) => `  ${paint("missing", "red", style)} ${oneLine(path)}`),
    ]),
  ];
  if (!report.ok) {
    lines.push(
      `Rewrite drifted outputs with 'distributor run --verify --pipeline ${report.pipeline_id} --destination ${report.destination_id}'.`,
    );
  }
  return `${lines.join("\n")}\n`;
}

export function formatPruneReport(report: PruneReport, style: Style): string {
  const { max_age_seconds: maxAge, keep_latest: keep } = report.policy;
  const head = report.dry_run
    ? `would delete ${report.planned.length}`
    : `deleted ${report.deleted.length} of ${report.planned.length}, ${report.failed.length} failed`;
  const failedPaths = new Map(report.failed.map((entry) => [entry.path, entry.message]));
  const leftPaths = new Map(report.left.map((entry) => [entry.path, entry.why]));
  const lines = [
    `${_owner(report)}: ${head} (policy at ${report.now}: max_age ${maxAge}s, keep_latest ${keep})`,
    ..._limited(
      report.planned.map((entry) => {
        const failure = failedPaths.get(entry.path);
        const left = leftPaths.get(entry.path);
        const mark = failure === undefined ? "-" : paint("!", "red", style);
        const tail =
          failure !== undefined
            ? ` — ${paint(`failed: ${oneLine(failure)}`, "red", style)}`
            : left !== undefined
              ? ` — record dropped, not deleted: ${oneLine(left)}`
              : "";
        return `  ${mark} ${oneLine(entry.path)} (${entry.reason})${tail}`;
      }),
    ),
  ];
  if (report.dry_run) {
    lines.push(
      paint("Dry run: nothing was deleted. Run again with --apply to delete.", "dim", style),
    );
  } else if (report.failed.length > 0) {
    lines.push(
      paint(
        "Failed deletes kept their records; fix the cause and run prune --apply again.",
        "red",
        style,
      ),
    );
  }
  return `${lines.join("\n")}\n`;
}
