/**
 * Human renderings of the small read-only commands (validate, status). Each
 * line goes through oneLine: status quotes what storage holds (a lock's
 * hostname, the start of a broken state), and a newline in it must not
 * print a line of its own, such as a fake "unlocked".
 */
import type { StatusReport } from "../execution/status.js";
import type { ValidateReport } from "../execution/validate.js";
import { oneLine } from "../reporting/human.js";

export function formatValidate(report: ValidateReport): string {
  const lines = [oneLine(`config ${report.config}: ok`)];
  for (const pipeline of report.pipelines) {
    lines.push(
      oneLine(
        `pipeline ${pipeline.pipeline_id}: source ${pipeline.source.id} (${pipeline.files} files verified) → ${pipeline.outputs} planned outputs for ${pipeline.destinations.join(", ")}`,
      ),
    );
  }
  return `${lines.join("\n")}\n`;
}

export function formatStatus(report: StatusReport): string {
  const lines = report.pairs.map((pair) => {
    const where = `${pair.pipeline_id} → ${pair.destination_id}`;
    if (pair.error !== null) {
      return `${oneLine(`${where}: error [${pair.error.code}] ${pair.error.message}`)}\n  root ${oneLine(pair.root)}`;
    }
    const lock =
      pair.lock === null
        ? "unlocked"
        : pair.lock.pid === 0
          ? "locked (unreadable lock file: holder unknown)"
          : `locked by ${pair.lock.hostname} pid ${pair.lock.pid} since ${pair.lock.started_at}`;
    const updated = pair.updated_at ? `, last update ${pair.updated_at}` : "";
    const line = `${where}: state ${pair.state_detail ?? pair.state}, ${pair.outputs} owned outputs${updated}, ${lock}`;
    return `${oneLine(line)}\n  root ${oneLine(pair.root)}`;
  });
  return `${lines.join("\n")}\n`;
}
