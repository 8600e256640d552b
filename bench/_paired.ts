/**
 * What alternating pairs of two builds say (bench/compare.ts): on this noisy
 * machine two whole runs minutes apart differ by more than most changes, so a
 * change is judged by the differences within pairs run back to back, never by
 * two separate medians alone (docs/performance.md, "Comparing two builds").
 */
import { median } from "./_measure.js";
import { roundStolen } from "./_report.js";

/** One pair: each side's wall seconds and CPU seconds (null without GNU time). */
export interface Pair {
  a: { seconds: number; cpuSeconds: number | null };
  b: { seconds: number; cpuSeconds: number | null };
}

export interface PairedSummary {
  pairs: number;
  medianA: number;
  medianB: number;
  /** Median of the per-pair differences b − a, in seconds: positive when A is faster. */
  medianDifference: number;
  /** Pairs in which A took less wall time than B (ties count for neither). */
  aFaster: number;
  bFaster: number;
  /** The same for CPU, or null when any pair lacks a CPU time. */
  cpu: { medianA: number; medianB: number; medianDifference: number; aLess: number } | null;
}

export function pairedSummary(pairs: readonly Pair[]): PairedSummary {
  if (pairs.length === 0) throw new Error("no pairs to summarise");
  const differences = pairs.map((pair) => pair.b.seconds - pair.a.seconds);
  const cpuPairs = pairs.every((pair) => pair.a.cpuSeconds !== null && pair.b.cpuSeconds !== null);
  const cpuA = pairs.map((pair) => pair.a.cpuSeconds as number);
  const cpuB = pairs.map((pair) => pair.b.cpuSeconds as number);
  return {
    pairs: pairs.length,
    medianA: median(pairs.map((pair) => pair.a.seconds)),
    medianB: median(pairs.map((pair) => pair.b.seconds)),
    medianDifference: median(differences),
    aFaster: differences.filter((difference) => difference > 0).length,
    bFaster: differences.filter((difference) => difference < 0).length,
    cpu: cpuPairs
      ? {
          medianA: median(cpuA),
          medianB: median(cpuB),
          medianDifference: median(cpuB.map((b, index) => b - (cpuA[index] as number))),
          aLess: cpuB.filter((b, index) => b > (cpuA[index] as number)).length,
        }
      : null,
  };
}

/** One line for a summary: `A 1.738 s, B 1.914 s; A faster by 0.166 s (median of 12 pairs), in 12 of 12; CPU ...`. */
export function summaryLine(summary: PairedSummary): string {
  const s = (seconds: number) => `${seconds.toFixed(3)} s`;
  const { pairs, medianDifference: d } = summary;
  const verdict =
    d === 0
      ? `no median difference over ${pairs} pairs`
      : `${d > 0 ? "A" : "B"} faster by ${s(Math.abs(d))} (median of ${pairs} pairs)`;
  let line = `A ${s(summary.medianA)}, B ${s(summary.medianB)}; ${verdict}; A faster in ${summary.aFaster} of ${pairs}, B in ${summary.bFaster}`;
  const { cpu } = summary;
  if (cpu) {
    line += `; CPU A ${s(cpu.medianA)}, B ${s(cpu.medianB)}, B − A ${cpu.medianDifference >= 0 ? "+" : "−"}${s(Math.abs(cpu.medianDifference))} (A used less in ${cpu.aLess} of ${pairs})`;
  }
  return line;
}

/** A pair whose sides also know what the host took meanwhile (steal; null when unknown). */
export interface StealPair {
  a: Pair["a"] & { steal: number | null };
  b: Pair["b"] & { steal: number | null };
}

/**
 * The pairs in which the host took less than ROUND_STEAL_SHARE of either
 * side's time: the ones the benchmark would have kept (roundStolen). On a
 * busy host their summary is the one to read, since steal slows the two
 * builds unevenly.
 */
export function calmPairs<T extends StealPair>(pairs: readonly T[]): T[] {
  return pairs.filter((pair) => !roundStolen([pair.a, pair.b]));
}
