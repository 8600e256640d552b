/** The benchmark's result rows and their Markdown table. */
import { median } from "./_measure.js";

/**
 * The anchor label of every floor program's context row ("least work on
 * Node.js (bench/rerun-floor.ts)"): results files name the floor rows by it
 * (bench/tally.ts reads them), so every floor contender's label starts so.
 */
export const FLOOR_LABEL = "least work on Node.js";

export interface Row {
  case: string;
  anchor: string;
  unit: "s" | "MB/s";
  /** Median of the subject's samples; null when the case could not run. */
  distributor: number | null;
  anchorMedian: number | null;
  /** distributor / anchor. */
  ratio: number | null;
  /** Decimals the table shows `ratio` with (ratioDigits); 2 when absent. */
  ratioDigits?: number;
  target: string;
  met: boolean | null;
  /** Highest peak RSS of the subject's samples, MB. */
  peakRssMb: number | null;
  /** Median CPU seconds (user + system) of each side's samples; null without GNU time. */
  cpuSeconds: { distributor: number | null; anchor: number | null };
  samples: {
    distributor: number[];
    anchor: number[];
    distributorCpu: number[];
    anchorCpu: number[];
    /** CPU seconds of a local server during each sample (case 6), when measured. */
    distributorServerCpu: number[];
    anchorServerCpu: number[];
    /** CPU seconds the host took from this VM during each sample (steal), when /proc tells. */
    distributorSteal: number[];
    anchorSteal: number[];
    /**
     * The rounds redone because the host took too much of them (roundStolen):
     * their samples, left out of the medians. Absent when none was.
     */
    redone?: {
      distributor: number[];
      anchor: number[];
      distributorSteal: number[];
      anchorSteal: number[];
    };
  };
  /**
   * The floor program's median over this row's anchor median (floorNote), in
   * the rows with a target of a case that has one; absent elsewhere.
   */
  floorRatio?: number;
  /** Whether that ratio meets the row's target; absent with floorRatio. */
  floorMet?: boolean;
  /** In how many of the rounds the floor program met the target; absent with floorRatio. */
  floorRounds?: { within: number; of: number };
  notes: string[];
}

/** A row's samples before any were taken (a case that could not run). */
export function noSamples(): Row["samples"] {
  return {
    distributor: [],
    anchor: [],
    distributorCpu: [],
    anchorCpu: [],
    distributorServerCpu: [],
    anchorServerCpu: [],
    distributorSteal: [],
    anchorSteal: [],
  };
}

/** Whether `ratio` meets the bounds; null when it is unknown or there is no bound. */
export function ratioMet(
  ratio: number | null,
  bounds: { ratioMin?: number; ratioMax?: number },
): boolean | null {
  if (ratio === null) return null;
  if (bounds.ratioMin !== undefined) return ratio >= bounds.ratioMin;
  if (bounds.ratioMax !== undefined) return ratio <= bounds.ratioMax;
  return null;
}

/**
 * Decimals to show `ratio` with: 2, or 3 where 2 would round it onto the
 * other side of its bounds (0.795 against ≥ 0.8 would read 0.80×, not met).
 */
export function ratioDigits(
  ratio: number | null,
  bounds: { ratioMin?: number; ratioMax?: number },
): number {
  if (ratio === null) return 2;
  return ratioMet(Number(ratio.toFixed(2)), bounds) === ratioMet(ratio, bounds) ? 2 : 3;
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
    "| Case | distributor | anchor | anchor median | ratio | target | met? | peak RSS (MB) | CPU s (distributor / anchor) | notes |\n" +
    "|---|---:|---|---:|---:|---|---|---:|---:|---|";
  const lines = rows.map((row) =>
    [
      row.case,
      `${num(row.distributor)} ${row.unit}`,
      row.anchor,
      `${num(row.anchorMedian)} ${row.unit}`,
      row.ratio === null ? "—" : `${row.ratio.toFixed(row.ratioDigits ?? 2)}×`,
      row.target,
      metText(row.met),
      num(row.peakRssMb, 0),
      `${num(row.cpuSeconds.distributor)} / ${num(row.cpuSeconds.anchor)}`,
      row.notes.join("; ").replaceAll("|", "\\|"),
    ].join(" | "),
  );
  return [header, ...lines.map((line) => `| ${line} |`)].join("\n");
}

/**
 * Samples this far apart mean the machine changed speed during the row (on
 * the benchmark VM file creation alternates between two speeds, see
 * docs/performance.md): the median, and so the ratio, may not be typical.
 */
const WIDE_SPREAD = 1.5;

/** "4.70–42.00 s, …" when the samples spread WIDE_SPREAD or wider, else null. */
export function spreadNote(values: readonly number[], unit: string): string | null {
  if (values.length < 2) return null;
  const low = Math.min(...values);
  const high = Math.max(...values);
  if (!(low > 0) || high / low < WIDE_SPREAD) return null;
  return `${low.toFixed(2)}–${high.toFixed(2)} ${unit}: the median may not be typical`;
}

/**
 * Round by round, where that tells another story than the medians: each
 * round samples every contender once, minutes apart, so the ratio of one
 * round's two samples shares its minute, while the medians may come from
 * different rounds. A slow minute for the anchor alone then moves the
 * ratio of the medians, not the median of the rounds' ratios. Null when
 * they agree (within 5 %, and on whether the target is met) or there are
 * fewer than two rounds.
 */
export function roundsNote(
  subject: readonly number[],
  anchor: readonly number[],
  bounds: { ratioMin?: number; ratioMax?: number },
): string | null {
  const rounds = Math.min(subject.length, anchor.length);
  if (rounds < 2) return null;
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const base = anchor[i] as number;
    if (base > 0) ratios.push((subject[i] as number) / base);
  }
  if (ratios.length < 2) return null;
  const ofMedians = median(subject) / median(anchor);
  const ofRounds = median(ratios);
  const metOnMedians = ratioMet(ofMedians, bounds);
  const metByRounds = ratioMet(ofRounds, bounds);
  const close = Math.abs(ofRounds / ofMedians - 1) <= 0.05;
  if (close && metOnMedians === metByRounds) return null;
  const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
  const note = `round by round ${range}, median ${ofRounds.toFixed(2)}×`;
  if (metOnMedians === metByRounds || metOnMedians === null || metByRounds === null) return note;
  return `${note}: ${metOnMedians ? "met on the medians only" : "met round by round only"}`;
}

/**
 * How the floor program of the case (a contender doing less than the
 * contract asks, each part the cheapest way found on Node.js: see
 * Contender.floor) itself fares against a row's anchor, sampled in the same
 * rounds: "floor program 1.34× this anchor, within the target in 1 of 5
 * rounds: misses it too". A target that program misses is at the edge of
 * what this runtime allows in this run (the program is the fastest sketch
 * found, not a proof: distributor has beaten one in single rounds); one it
 * meets is within reach. The done rule
 * asks, for each unmet target, whether the floor makes it impossible: this
 * answers that run by run. `met` follows the ratio of medians, as the row's
 * own verdict does (a program slower than the floor in every round cannot
 * do better on the medians); when most rounds say otherwise, the note says
 * the floor sits at the target ("misses it too on the medians, not round by
 * round"). Null when a side has no samples or the row has no target.
 */
export function floorNote(
  floor: readonly number[],
  anchor: readonly number[],
  bounds: { ratioMin?: number; ratioMax?: number },
): { ratio: number; met: boolean; within: number; rounds: number; note: string } | null {
  if (floor.length === 0 || anchor.length === 0) return null;
  const ratio = median(floor) / median(anchor);
  const met = ratioMet(ratio, bounds);
  if (met === null) return null;
  const rounds = Math.min(floor.length, anchor.length);
  let within = 0;
  for (let i = 0; i < rounds; i++) {
    if (ratioMet((floor[i] as number) / (anchor[i] as number), bounds)) within++;
  }
  const note = `floor program ${ratio.toFixed(2)}× this anchor, within the target in ${within} of ${rounds} rounds`;
  if (met) return { ratio, met, within, rounds, note };
  const verdict = mostRounds(within, rounds)
    ? "misses it too on the medians, not round by round"
    : "misses it too";
  return { ratio, met, within, rounds, note: `${note}: ${verdict}` };
}

/** More than half of the rounds. */
function mostRounds(within: number, rounds: number): boolean {
  return within * 2 > rounds;
}

/** A row that has a target of issue #5: not a context row. */
function targeted(row: Row): boolean {
  return !row.target.includes("context");
}

/**
 * The run's verdict in one line, printed under the table: how many targets
 * were met, and each miss with its ratio and, where the case's floor
 * program missed the same target, that ratio too (see floorNote). A row
 * that could not run counts as not met.
 */
export function verdictLine(rows: readonly Row[]): string {
  const withTarget = rows.filter(targeted);
  const met = withTarget.filter((row) => row.met === true).length;
  const missed = withTarget
    .filter((row) => row.met !== true)
    .map((row) => {
      const id = row.case.split(".")[0];
      if (row.ratio === null) return `${id} against ${row.anchor}: not run`;
      const ratio = `${row.ratio.toFixed(row.ratioDigits ?? 2)}×`;
      const floor =
        row.floorMet === false && row.floorRatio !== undefined
          ? ` (the floor program too: ${row.floorRatio.toFixed(2)}×${atTheTarget(row)})`
          : "";
      const rss =
        row.target.includes("RSS") && row.peakRssMb !== null
          ? `, peak RSS ${row.peakRssMb.toFixed(0)} MB`
          : "";
      // run.ts fails a row whose distributor sample did not do what the case claims.
      const wrong = row.notes.some((note) => note.startsWith("distributor"))
        ? " (a sample did not do what the case claims: see its notes)"
        : "";
      return `${id} against ${row.anchor} ${ratio}${rss}${floor}${wrong}`;
    });
  const head = `targets met: ${met} of ${withTarget.length}`;
  return missed.length === 0 ? head : `${head}; missed: ${missed.join("; ")}`;
}

/** ", within the target in 4 of 5 rounds" when most of the floor's rounds met what its medians missed. */
function atTheTarget(row: Row): string {
  const rounds = row.floorRounds;
  if (!rounds || !mostRounds(rounds.within, rounds.of)) return "";
  return `, within the target in ${rounds.within} of ${rounds.of} rounds`;
}

/** Each sample's wall seconds and the CPU seconds the host took meanwhile. */
export interface StealSamples {
  seconds: readonly number[];
  steal: readonly number[];
}

/**
 * Steal at or above this share of a side's median wall time gets a note (on
 * two cores the host can take up to twice the wall time, so 3 % is 1.5 % of
 * the machine): enough to move a ratio near 1 by more than the 0.01× the
 * table shows.
 */
const STEAL_SHARE = 0.03;

/**
 * "steal 0.31 s / 0.02 s a sample": what the host gave other guests while
 * each side wanted to run (medians), when either side lost a noticeable
 * share. Such a row was slowed by the machine's neighbours as well as by
 * its own work, the side that lost more the most. Null otherwise or when
 * unknown.
 */
export function stealNote(subject: StealSamples, anchor: StealSamples): string | null {
  if ([subject, anchor].some((side) => side.steal.length === 0 || side.seconds.length === 0)) {
    return null;
  }
  const share = (side: StealSamples) => median(side.steal) / median(side.seconds);
  if (Math.max(share(subject), share(anchor)) < STEAL_SHARE) return null;
  return `steal ${median(subject.steal).toFixed(2)} s / ${median(anchor.steal).toFixed(2)} s a sample: the host ran other guests on these cores`;
}

/**
 * A round is redone when one of its samples lost this share of its wall
 * time to the host or more (on two cores, 2.5 % of the machine): a sample
 * of a program that keeps both cores busy then ran on less than the two
 * cores the targets assume, while a one-thread anchor (`sha256sum`
 * then `cp -r`) barely notices. On the second Intel machine, in the run
 * of 02:01 UTC on 2026-12-02, 5a's sample that lost 0.05 s took 5.84 s,
 * the two that lost 1.5 and 1.6 s took 8.1 and 8.2 s, while the floor's
 * three took 4.9–5.5 s.
 */
export const ROUND_STEAL_SHARE = 0.05;

/** Whether a round's samples say more about the host's other guests than about the contenders. */
export function roundStolen(round: readonly { seconds: number; steal: number | null }[]): boolean {
  return round.some(
    (sample) =>
      sample.steal !== null &&
      sample.seconds > 0 &&
      sample.steal / sample.seconds >= ROUND_STEAL_SHARE,
  );
}

/** The note of a row whose case redid rounds (see roundStolen); null when none was. */
export function redoneNote(rounds: number): string | null {
  if (rounds === 0) return null;
  const what = rounds === 1 ? "1 round" : `${rounds} rounds`;
  return `${what} redone: the host took ${ROUND_STEAL_SHARE * 100} % or more of a sample's time (their samples are in the JSON)`;
}

/**
 * A round the host took as much from as a redone one, kept because the
 * case had already redone as many rounds as it has: its samples count in
 * the medians, and the row says so.
 */
export function keptStolenNote(rounds: number): string | null {
  if (rounds === 0) return null;
  const what = rounds === 1 ? "1 round" : `${rounds} rounds`;
  return `${what} kept although the host took ${ROUND_STEAL_SHARE * 100} % or more of a sample's time: no redo was left`;
}

/**
 * The least wall time the subject's CPU allows on this machine: its median
 * CPU seconds, with a local server's (case 6: the server shares the cores),
 * spread evenly over every core. No run takes less (wall × cores ≥ CPU), so
 * a time target under this bound is out of reach without less CPU, whatever
 * runs in parallel; a miss above it is time that some core spent waiting (a
 * serial phase, a server's answer), which more overlap could fill. Issue
 * #5's done rule asks, for each unmet target, why; this splits "too much
 * work" from "work badly spread", run by run.
 */
export interface CpuBound {
  /** (CPU + server CPU) / cores, seconds. */
  seconds: number;
  /** The slowest time that meets the target: its ratio times the anchor's median. */
  targetSeconds: number;
  cores: number;
  /** Whether a server's CPU is counted in. */
  withServer: boolean;
  /** seconds ≤ targetSeconds: the CPU fitted, and a miss was waiting, not work. */
  fits: boolean;
}

/**
 * The bound of a "≤ 1.3×" or "< 1× (aim 0.5×)" target as rows spell it (the
 * comparison's ratioMax; results files keep only the text); undefined for a
 * "≥" target or a context row.
 */
export function ratioMaxOf(target: string): number | undefined {
  const match = /^[≤<] ?(\d+(?:\.\d+)?)×/.exec(target);
  return match ? Number(match[1]) : undefined;
}

/**
 * CpuBound of a row with a time target (≤ or <; case 7's MB/s has none)
 * whose CPU was measured; null otherwise. `ratioMax`: the target's bound.
 */
export function cpuBound(
  row: {
    unit: Row["unit"];
    anchorMedian: number | null;
    /** The subject's CPU seconds per sample, and a local server's during each. */
    cpu: readonly number[];
    serverCpu: readonly number[];
  },
  ratioMax: number | undefined,
  cores: number,
): CpuBound | null {
  const { cpu, serverCpu } = row;
  if (row.unit !== "s" || ratioMax === undefined || row.anchorMedian === null) return null;
  if (cpu.length === 0 || !(cores > 0)) return null;
  const withServer = serverCpu.length > 0;
  const seconds = (median(cpu) + (withServer ? median(serverCpu) : 0)) / cores;
  const targetSeconds = ratioMax * row.anchorMedian;
  return { seconds, targetSeconds, cores, withServer, fits: seconds <= targetSeconds };
}

/**
 * "not CPU-bound: distributor's 3.89 s of CPU take at least 1.95 s on 2
 * cores, within the target's 1.96 s: the miss is time a core waited" (or
 * "CPU-bound: … past the target's …: only less CPU meets it"), for a missed
 * row; null for a met one, or without a bound.
 */
export function cpuBoundNote(bound: CpuBound | null, met: boolean | null): string | null {
  if (bound === null || met !== false) return null;
  const whose = bound.withServer ? "distributor's and the server's" : "distributor's";
  const cpu = (bound.seconds * bound.cores).toFixed(2);
  const took = `${whose} ${cpu} s of CPU take at least ${bound.seconds.toFixed(2)} s on ${bound.cores} cores`;
  const target = `the target's ${bound.targetSeconds.toFixed(2)} s`;
  return bound.fits
    ? `not CPU-bound: ${took}, within ${target}: the miss is time a core waited`
    : `CPU-bound: ${took}, past ${target}: only less CPU meets it`;
}
