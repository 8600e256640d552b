import assert from "node:assert/strict";
import { test } from "node:test";
import { allCases } from "./_cases.js";
import {
  cpuBound,
  cpuBoundNote,
  floorNote,
  keptStolenNote,
  markdownTable,
  noSamples,
  type Row,
  ratioDigits,
  ratioMaxOf,
  ratioMet,
  redoneNote,
  roundStolen,
  roundsNote,
  spreadNote,
  stealNote,
  verdictLine,
} from "./_report.js";

test("spreadNote flags samples 1.5x or more apart, and only those", () => {
  assert.equal(spreadNote([4.7, 42, 11.7], "s"), "4.70–42.00 s: the median may not be typical");
  assert.equal(spreadNote([1.0, 1.49], "s"), null);
  assert.equal(spreadNote([1.0, 1.5], "MB/s"), "1.00–1.50 MB/s: the median may not be typical");
  assert.equal(spreadNote([3], "s"), null, "one sample has no spread");
  assert.equal(spreadNote([], "s"), null);
});

test("the table shows each side's CPU seconds, a dash when unknown", () => {
  const row: Row = {
    case: "1. M fresh publish",
    anchor: "floor",
    unit: "s",
    distributor: 2,
    anchorMedian: 2.5,
    ratio: 0.8,
    target: "≤ 1.25×",
    met: true,
    peakRssMb: 160,
    cpuSeconds: { distributor: 3.5, anchor: null },
    samples: {
      distributor: [2],
      anchor: [2.5],
      distributorCpu: [3.5],
      anchorCpu: [],
      distributorServerCpu: [],
      anchorServerCpu: [],
      distributorSteal: [],
      anchorSteal: [],
    },
    notes: ["server CPU 1.90 s / 3.10 s"],
  };
  const table = markdownTable([row]);
  assert.match(table, /\| 0\.80× \|/);
  assert.match(markdownTable([{ ...row, ratio: 0.795, ratioDigits: 3 }]), /\| 0\.795× \|/);
  assert.match(table, /\| CPU s \(distributor \/ anchor\) \|/);
  assert.match(table, /\| 160 \| 3\.50 \/ — \| server CPU 1\.90 s \/ 3\.10 s \|$/);
});

test("ratioMet: a lower or an upper bound, and n/a for a row without one or without a ratio", () => {
  assert.equal(ratioMet(0.85, { ratioMin: 0.8 }), true);
  assert.equal(ratioMet(0.79, { ratioMin: 0.8 }), false);
  assert.equal(ratioMet(1.25, { ratioMax: 1.25 }), true);
  assert.equal(ratioMet(1.26, { ratioMax: 1.25 }), false);
  assert.equal(ratioMet(0.5, {}), null, "a context row has no target to meet");
  assert.equal(ratioMet(null, { ratioMax: 1.25 }), null);
});

test("ratioDigits: three decimals only where two would round a ratio onto the other side of its target", () => {
  assert.equal(ratioDigits(0.795, { ratioMin: 0.8 }), 3, "0.80× would read as met");
  assert.equal(ratioDigits(1.253, { ratioMax: 1.25 }), 3, "1.25× would read as met");
  assert.equal(ratioDigits(0.81, { ratioMin: 0.8 }), 2);
  assert.equal(ratioDigits(0.7, { ratioMin: 0.8 }), 2);
  assert.equal(ratioDigits(0.795, {}), 2, "a context row");
  assert.equal(ratioDigits(null, { ratioMin: 0.8 }), 2);
});

test("roundsNote: the rounds' ratios when they tell another story than the medians", () => {
  // 5b at 06:00 on 2026-12-01: the anchor slow in the first three rounds only.
  const distributor = [2.52, 2.65, 2.68, 2.35, 2.08];
  const sha256sum = [2.31, 2.0, 1.99, 1.31, 1.29];
  assert.equal(
    roundsNote(distributor, sha256sum, { ratioMax: 1.3 }),
    "round by round 1.09–1.79×, median 1.35×: met on the medians only",
  );
  assert.equal(
    roundsNote([1.2, 1.0, 1.1], [1.0, 1.0, 1.0], { ratioMax: 1.15 }),
    null,
    "medians and rounds agree: 1.10× both",
  );
  assert.equal(
    roundsNote([1.0, 2.0, 2.0], [1.0, 1.0, 3.0], {}),
    "round by round 0.67–2.00×, median 1.00×",
    "a context row (no target): medians 2.00×, rounds 1.00×",
  );
  assert.match(
    roundsNote([1.3, 1.0, 1.3], [1.2, 1.0, 0.9], { ratioMax: 1.2 }) ?? "",
    /median 1\.08×: met round by round only$/,
    "the medians' ratio is 1.30× (1.3 / 1.0); the rounds' 1.08×, 1.00×, 1.44×",
  );
  assert.equal(roundsNote([1], [1], { ratioMax: 1.2 }), null, "one round");
  assert.equal(roundsNote([1, 2], [], { ratioMax: 1.2 }), null, "no anchor samples");
});

test("floorNote: how the floor program fares against a row's anchor, in the same rounds", () => {
  // 5b at 05:42 on 2026-12-02: the rerun floor and sha256sum, round by round.
  const rerunFloor = [2.58, 2.26, 2.69, 2.51, 2.68];
  const sha256sum = [1.88, 1.92, 2.22, 2.22, 1.89];
  const against = floorNote(rerunFloor, sha256sum, { ratioMax: 1.3 });
  assert.equal(against?.ratio.toFixed(3), (2.58 / 1.92).toFixed(3), "median over median");
  assert.equal(
    against?.note,
    "floor program 1.34× this anchor, within the target in 3 of 5 rounds: misses it too on the medians, not round by round",
  );
  assert.deepEqual([against?.met, against?.within, against?.rounds], [false, 3, 5]);
  // The same with its third and fourth rounds slower (1.33× each): most rounds miss too.
  assert.equal(
    floorNote([2.58, 2.26, 2.95, 2.95, 2.68], sha256sum, { ratioMax: 1.3 })?.note,
    "floor program 1.40× this anchor, within the target in 1 of 5 rounds: misses it too",
  );
  // Case 1 against rclone at 21:16 on 2026-12-01, where the floor beat rclone.
  assert.equal(
    floorNote([1.9, 1.6, 2.2], [2.1, 2.0, 2.0], { ratioMax: 1 })?.note,
    "floor program 0.95× this anchor, within the target in 2 of 3 rounds",
  );
  assert.equal(
    floorNote([6, 9], [8, 12], { ratioMin: 0.8 })?.note,
    "floor program 0.75× this anchor, within the target in 0 of 2 rounds: misses it too",
    "a throughput row: higher is better",
  );
  assert.equal(
    floorNote([1.2, 1.6], [1, 1], { ratioMax: 1.3 })?.note,
    "floor program 1.40× this anchor, within the target in 1 of 2 rounds: misses it too",
    "half of the rounds is not most of them",
  );
  assert.equal(floorNote([1], [1], {}), null, "a context row has no target");
  assert.equal(floorNote([], [1], { ratioMax: 1 }), null, "no floor samples");
  assert.equal(floorNote([1], [], { ratioMax: 1 }), null, "no anchor samples");
});

test("stealNote: a note when either side lost 3 % of its median wall time or more to the host", () => {
  const calm = { seconds: [2, 2, 2], steal: [0, 0.02, 0.01] };
  assert.equal(stealNote(calm, calm), null, "0.5 % is not worth a note");
  const hit = { seconds: [4, 4, 4], steal: [0.1, 0.13, 0.3] };
  const note = "steal 0.13 s / 0.01 s a sample: the host ran other guests on these cores";
  assert.equal(stealNote(hit, calm), note, "3.25 % of 4 s on the subject's side");
  assert.equal(
    stealNote(calm, hit),
    "steal 0.01 s / 0.13 s a sample: the host ran other guests on these cores",
    "the anchor's side counts too",
  );
  assert.equal(stealNote({ seconds: [4], steal: [0.11] }, calm), null, "2.75 % is under the line");
  assert.equal(stealNote({ seconds: [2], steal: [] }, hit), null, "unknown on one side");
});

test("roundStolen: a round is redone when one sample lost 5 % of its wall time or more", () => {
  const calm = { seconds: 5, steal: 0.05 };
  assert.equal(roundStolen([calm, calm]), false, "1 % on both sides");
  assert.equal(roundStolen([calm, { seconds: 5, steal: 0.25 }]), true, "5 % on the anchor's side");
  assert.equal(roundStolen([{ seconds: 8.1, steal: 1.62 }, calm]), true, "20 % on the subject's");
  assert.equal(roundStolen([{ seconds: 5, steal: 0.24 }, calm]), false, "4.8 % is under the line");
  assert.equal(roundStolen([{ seconds: 5, steal: null }, calm]), false, "unknown counts as calm");
  assert.equal(roundStolen([]), false);
});

test("keptStolenNote says how many stolen rounds were kept, nothing when none", () => {
  assert.equal(keptStolenNote(0), null);
  assert.match(keptStolenNote(1) ?? "", /^1 round kept although the host took 5 % or more/);
  assert.match(keptStolenNote(2) ?? "", /^2 rounds kept /);
});

test("redoneNote says how many rounds were redone, nothing when none", () => {
  assert.equal(redoneNote(0), null);
  assert.equal(
    redoneNote(1),
    "1 round redone: the host took 5 % or more of a sample's time (their samples are in the JSON)",
  );
  assert.match(redoneNote(3) ?? "", /^3 rounds redone: /);
});

test("verdictLine: the targets met, and each miss with the floor program's ratio where it missed too", () => {
  const row = (overrides: Partial<Row>): Row => ({
    case: "1. M fresh publish",
    anchor: "floor (sha256sum + cp -r)",
    unit: "s",
    distributor: 2,
    anchorMedian: 2,
    ratio: 1,
    target: "≤ 1.25×",
    met: true,
    peakRssMb: 100,
    cpuSeconds: { distributor: null, anchor: null },
    samples: noSamples(),
    notes: [],
    ...overrides,
  });
  const rows = [
    row({}),
    row({
      anchor: "rclone copy --checksum",
      ratio: 1.6,
      target: "< 1× (aim 0.5×)",
      met: false,
      floorRatio: 1.11,
      floorMet: false,
      floorRounds: { within: 0, of: 3 },
    }),
    row({
      anchor: "least work on Node.js (bench/publish-floor.ts)",
      ratio: 1.44,
      target: "context",
      met: null,
    }),
    row({
      case: "2. M unchanged rerun",
      anchor: "rclone sync --checksum (no-op)",
      ratio: 0.50039,
      ratioDigits: 3,
      target: "≤ 0.5×",
      met: false,
      floorRatio: 0.4,
      floorMet: true,
    }),
    row({
      case: "4. L 2 GB fresh publish",
      ratio: 0.5,
      target: "≤ 1.2×, RSS ≤ 150 MB",
      met: false,
      peakRssMb: 151.2,
    }),
    row({
      case: "5b. C 100k outputs unchanged rerun",
      anchor: "hashing (sha256sum)",
      ratio: 1.1,
      target: "≤ 1.3×",
      met: false,
      notes: ["distributor: wrote 3 files"],
    }),
    row({
      case: "6. S to S3",
      anchor: "rclone copy",
      ratio: 0.92,
      target: "≤ 0.7×",
      met: false,
      floorRatio: 0.72,
      floorMet: false,
      floorRounds: { within: 4, of: 5 },
    }),
    row({
      case: "6. S to S3",
      anchor: "rclone copy",
      ratio: null,
      distributor: null,
      target: "≤ 0.7×",
      met: null,
    }),
    row({
      case: "7. markdown_to_html throughput",
      anchor: "markdown-it with SPEC §4's GFM syntax",
      target: "— (context)",
      met: null,
    }),
  ];
  assert.equal(
    verdictLine(rows),
    "targets met: 1 of 7; missed: " +
      "1 against rclone copy --checksum 1.60× (the floor program too: 1.11×); " +
      "2 against rclone sync --checksum (no-op) 0.500×; " +
      "4 against floor (sha256sum + cp -r) 0.50×, peak RSS 151 MB; " +
      "5b against hashing (sha256sum) 1.10× (a sample did not do what the case claims: see its notes); " +
      "6 against rclone copy 0.92× (the floor program too: 0.72×, within the target in 4 of 5 rounds); " +
      "6 against rclone copy: not run",
  );
  assert.equal(verdictLine([row({}), row({ ratio: 0.4 })]), "targets met: 2 of 2");
});

test("cpuBound spreads the median CPU, with a server's, over the cores; only for time targets", () => {
  const row = { unit: "s" as const, anchorMedian: 1.5, cpu: [4.0, 3.9, 3.5], serverCpu: [] };
  assert.deepEqual(cpuBound(row, 1.3, 2), {
    seconds: 1.95,
    targetSeconds: 1.3 * 1.5,
    cores: 2,
    withServer: false,
    fits: true,
  });
  const s3 = cpuBound({ ...row, cpu: [1.3, 1.4], serverCpu: [2.0, 2.2] }, 0.7, 2);
  assert.ok(s3);
  assert.ok(Math.abs(s3.seconds - (1.35 + 2.1) / 2) < 1e-9);
  assert.equal(s3.withServer, true);
  assert.equal(s3.fits, false, "1.73 s against the target's 1.05 s");
  assert.equal(cpuBound(row, undefined, 2), null, "a ≥ target has no time to fit in");
  assert.equal(cpuBound({ ...row, unit: "MB/s" }, 1.3, 2), null);
  assert.equal(cpuBound({ ...row, cpu: [] }, 1.3, 2), null, "no GNU time, no CPU");
  assert.equal(cpuBound({ ...row, anchorMedian: null }, 1.3, 2), null);
  assert.equal(cpuBound(row, 1.3, Number.NaN), null);
});

test("cpuBoundNote tells a miss by waiting from a miss by work, and says nothing of a met row", () => {
  const bound = { seconds: 1.95, targetSeconds: 1.96, cores: 2, withServer: false, fits: true };
  assert.equal(
    cpuBoundNote(bound, false),
    "not CPU-bound: distributor's 3.90 s of CPU take at least 1.95 s on 2 cores, within the target's 1.96 s: the miss is time a core waited",
  );
  assert.equal(
    cpuBoundNote(
      { ...bound, seconds: 2.39, targetSeconds: 1.93, withServer: true, fits: false },
      false,
    ),
    "CPU-bound: distributor's and the server's 4.78 s of CPU take at least 2.39 s on 2 cores, past the target's 1.93 s: only less CPU meets it",
  );
  assert.equal(cpuBoundNote(bound, true), null);
  assert.equal(cpuBoundNote(bound, null), null);
  assert.equal(cpuBoundNote(null, false), null);
});

test("ratioMaxOf reads back every case's ratioMax from its target text", () => {
  let checked = 0;
  for (const bench of allCases({ seed: 1 })) {
    for (const comparison of bench.comparisons) {
      assert.equal(ratioMaxOf(comparison.target), comparison.ratioMax, comparison.target);
      // What run.ts makes of case 4's target: the RSS limit appended.
      assert.equal(ratioMaxOf(`${comparison.target}, RSS ≤ 150 MB`), comparison.ratioMax);
      checked++;
    }
  }
  assert.ok(checked >= 10, `only ${checked} comparisons`);
  assert.equal(ratioMaxOf("≥ 0.8×"), undefined);
  assert.equal(ratioMaxOf("context"), undefined);
});
