import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { PrunePolicy } from "../config/types.js";
import type { OutputRecord } from "../state/types.js";
import { formatDuration, planPrune } from "./plan-prune.js";
import { catalog, record as catalogRecord } from "./plan-run.fixtures.js";

const DAY = 86400;
const NOW = new Date("2026-06-30T00:00:00Z");

/** A catalog record of owner p/d (or `owner`) last updated at `updatedAt`. */
const record = (path: string, updatedAt: string, [pipeline, destination] = ["p", "d"]) =>
  catalogRecord(path, { owner: `${pipeline}/${destination}`, updated_at: updatedAt });

const state = (...outputs: OutputRecord[]) => catalog(outputs);

function plan(outputs: OutputRecord[], policy: PrunePolicy, now = NOW): string[] {
  return planPrune({
    state: state(...outputs),
    owner: { pipelineId: "p", destinationId: "d" },
    policy,
    now,
  }).planned.map((p) => p.path);
}

describe("planPrune", () => {
  const cases: Array<{
    name: string;
    outputs: OutputRecord[];
    policy: PrunePolicy;
    now?: Date;
    expected: string[];
  }> = [
    {
      name: "records older than max_age are planned, newer ones kept",
      outputs: [record("old", "2026-05-01T00:00:00Z"), record("new", "2026-06-29T00:00:00Z")],
      policy: { maxAgeSeconds: 30 * DAY, keepLatest: 0 },
      expected: ["old"],
    },
    {
      name: "exactly at the cutoff is not older, so it stays",
      outputs: [record("edge", "2026-05-31T00:00:00Z"), record("past", "2026-05-30T23:59:59Z")],
      policy: { maxAgeSeconds: 30 * DAY, keepLatest: 0 },
      expected: ["past"],
    },
    {
      name: "other owners' records are never planned, however old",
      outputs: [
        record("mine", "2020-01-01T00:00:00Z"),
        record("theirs", "2020-01-01T00:00:00Z", ["q", "d"]),
        record("same-pipeline-other-dest", "2020-01-01T00:00:00Z", ["p", "e"]),
      ],
      policy: { maxAgeSeconds: DAY, keepLatest: 0 },
      expected: ["mine"],
    },
    {
      name: "keep_latest keeps the N most recently updated even when old",
      outputs: [
        record("a", "2026-01-01T00:00:00Z"),
        record("b", "2026-01-03T00:00:00Z"),
        record("c", "2026-01-02T00:00:00Z"),
      ],
      policy: { maxAgeSeconds: DAY, keepLatest: 2 },
      expected: ["a"],
    },
    {
      name: "keep_latest counts recent records too, so fewer old ones are spared",
      outputs: [
        record("fresh", "2026-06-29T00:00:00Z"),
        record("old1", "2026-01-02T00:00:00Z"),
        record("old2", "2026-01-01T00:00:00Z"),
      ],
      policy: { maxAgeSeconds: 30 * DAY, keepLatest: 2 },
      expected: ["old2"],
    },
    {
      name: "ties in updated_at are broken by path: the smaller path is kept",
      outputs: [
        record("b", "2026-01-01T00:00:00Z"),
        record("a", "2026-01-01T00:00:00Z"),
        record("c", "2026-01-01T00:00:00Z"),
      ],
      policy: { maxAgeSeconds: DAY, keepLatest: 1 },
      expected: ["b", "c"],
    },
    {
      name: "keep_latest larger than the owner's records keeps everything",
      outputs: [record("a", "2020-01-01T00:00:00Z")],
      policy: { maxAgeSeconds: DAY, keepLatest: 5 },
      expected: [],
    },
    {
      name: "keep_latest is per owner: another owner's newer records do not count",
      outputs: [
        record("mine-old", "2026-01-01T00:00:00Z"),
        record("mine-older", "2025-01-01T00:00:00Z"),
        record("theirs-new", "2026-06-29T00:00:00Z", ["q", "d"]),
      ],
      policy: { maxAgeSeconds: DAY, keepLatest: 1 },
      expected: ["mine-older"],
    },
    {
      name: "a later now plans more",
      outputs: [record("a", "2026-06-20T00:00:00Z"), record("b", "2026-06-01T00:00:00Z")],
      policy: { maxAgeSeconds: 30 * DAY, keepLatest: 0 },
      now: new Date("2026-08-01T00:00:00Z"),
      expected: ["a", "b"],
    },
    {
      name: "an earlier now plans nothing (records from the future are not old)",
      outputs: [record("a", "2026-06-20T00:00:00Z")],
      policy: { maxAgeSeconds: 0, keepLatest: 0 },
      now: new Date("2026-01-01T00:00:00Z"),
      expected: [],
    },
    {
      name: "an empty state plans nothing",
      outputs: [],
      policy: { maxAgeSeconds: 0, keepLatest: 0 },
      expected: [],
    },
    {
      name: "planned paths come sorted by UTF-8 bytes",
      outputs: [
        record("é", "2020-01-01T00:00:00Z"),
        record("z", "2020-01-01T00:00:00Z"),
        record("Z", "2020-01-01T00:00:00Z"),
      ],
      policy: { maxAgeSeconds: DAY, keepLatest: 0 },
      expected: ["Z", "z", "é"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(plan(c.outputs, c.policy, c.now), c.expected));
  }

  it("each planned path says its age, the max_age and the keep rule", () => {
    const result = planPrune({
      state: state(record("a", "2026-05-20T00:00:00Z"), record("b", "2026-06-29T12:00:00Z")),
      owner: { pipelineId: "p", destinationId: "d" },
      policy: { maxAgeSeconds: 7 * DAY, keepLatest: 1 },
      now: NOW,
    });
    assert.equal(result.planned.length, 1);
    const [entry] = result.planned;
    assert.equal(entry?.updated_at, "2026-05-20T00:00:00Z");
    assert.equal(entry?.age, 41 * DAY);
    assert.match(entry?.reason ?? "", /updated 5w6d ago, older than max_age 1w/);
    assert.match(entry?.reason ?? "", /not among the 1 latest kept/);
  });

  it("a second plan over the pruned state plans nothing (idempotence)", () => {
    const outputs = [record("a", "2020-01-01T00:00:00Z"), record("b", "2026-06-29T00:00:00Z")];
    const first = plan(outputs, { maxAgeSeconds: DAY, keepLatest: 0 });
    const rest = outputs.filter((r) => !first.includes(r.path));
    assert.deepEqual(plan(rest, { maxAgeSeconds: DAY, keepLatest: 0 }), []);
  });
});

describe("formatDuration", () => {
  for (const [seconds, text] of [
    [0, "0s"],
    [59, "59s"],
    [90, "1m30s"],
    [DAY + 3600 + 61, "1d1h"],
    [14 * DAY, "2w"],
  ] as const) {
    it(`${seconds}s reads ${text}`, () => assert.equal(formatDuration(seconds), text));
  }
});

describe("planPrune on a root that folds case", () => {
  const outputs = [
    record("Old.html", "2020-01-01T00:00:00Z"),
    record("old.html", "2026-06-29T00:00:00Z", ["q", "d"]),
    record("other.html", "2020-01-01T00:00:00Z"),
  ];
  const input = (foldsCase: boolean) => ({
    state: state(...outputs),
    owner: { pipelineId: "p", destinationId: "d" },
    policy: { maxAgeSeconds: 30 * DAY, keepLatest: 0 },
    now: NOW,
    foldsCase,
  });

  it("names a planned delete that another record folds onto", () => {
    const folding = planPrune(input(true));
    assert.deepEqual(
      folding.caseClashes.map((clash) => clash.paths),
      [["Old.html", "old.html"]],
    );
    assert.match(
      folding.caseClashes[0]?.description ?? "",
      /Old\.html \(to be deleted, recorded\)/,
    );
  });

  it("finds none on a root that tells them apart", () => {
    const exact = planPrune(input(false));
    assert.deepEqual(exact.caseClashes, []);
    assert.deepEqual(
      exact.planned.map((p) => p.path),
      ["Old.html", "other.html"],
    );
  });
});
