/** The benchmark's result rows and their Markdown table. */

export interface Row {
  case: string;
  anchor: string;
  unit: "s" | "MB/s";
  /** Median of the subject's samples; null when the case could not run. */
  distributor: number | null;
  anchorMedian: number | null;
  /** distributor / anchor. */
  ratio: number | null;
  target: string;
  met: boolean | null;
  /** Highest peak RSS of the subject's samples, MB. */
  peakRssMb: number | null;
  samples: { distributor: number[]; anchor: number[] };
  notes: string[];
}

function num(value: number | null, digits = 2): string {
  return value === null || Number.isNaN(value) ? "—" : value.toFixed(digits);
}

function metText(met: boolean | null): string {
  if (met === null) return "n/a";
  return met ? "yes" : "**no**";
}

/** The rows as a GitHub Markdown table, notes in the last column. */
export function markdownTable(rows: readonly Row[]): string {
  const header =
    "| Case | distributor | anchor | anchor median | ratio | target | met? | peak RSS (MB) | notes |\n" +
    "|---|---:|---|---:|---:|---|---|---:|---|";
  const lines = rows.map((row) =>
    [
      row.case,
      `${num(row.distributor)} ${row.unit}`,
      row.anchor,
      `${num(row.anchorMedian)} ${row.unit}`,
      row.ratio === null ? "—" : `${row.ratio.toFixed(2)}×`,
      row.target,
      metText(row.met),
      num(row.peakRssMb, 0),
      row.notes.join("; ").replaceAll("|", "\\|"),
    ].join(" | "),
  );
  return [header, ...lines.map((line) => `| ${line} |`)].join("\n");
}
