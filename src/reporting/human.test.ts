import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatRunReport } from "./human.js";
import type { PairResult, RunReport } from "./report.js";

function pair(overrides: Partial<PairResult>): PairResult {
  return {
    pipeline_id: "site",
    destination_id: "web",
    root: "/srv/web",
    state: "valid",
    action: "upsert_additive",
    applied: true,
    source: { id: "site.v1", digest: `sha256:${"0".repeat(64)}`, created: "2026-06-04T11:55:00Z" },
    outputs: [],
    deleted: [],
    deletions: [],
    counts: { created: 2, updated: 1, unchanged: 0, deleted: 0 },
    bytes: 10,
    duration_ms: 3,
    error: null,
    ...overrides,
  };
}

const text = (report: Partial<RunReport> & { results: PairResult[] }) =>
  formatRunReport(
    { ok: true, dry_run: false, distributor_version: "0", ...report },
    { color: false },
  );

describe("formatRunReport", () => {
  test('"would" only in a dry run', () => {
    assert.match(text({ dry_run: true, results: [pair({ applied: false })] }), /would create 2/);
    assert.doesNotMatch(text({ results: [pair({})] }), /would/);
  });

  test("a real run says which pairs were not carried out, and why, without 'would'", () => {
    const error = { code: "storage_error" as const, message: "disk full", paths: ["a.txt"] };
    const out = text({
      ok: false,
      results: [
        pair({ applied: false, error }),
        pair({ destination_id: "mirror", applied: false }),
      ],
    });
    assert.match(out, /web: upsert_additive \(failed while applying: see the error\) — create 2/);
    assert.match(out, /mirror: upsert_additive \(not applied: another pair failed\) — create 2/);
    assert.doesNotMatch(out, /would/);
  });

  test("a refused plan needs no note: its action says it", () => {
    const error = { code: "unmanaged_path" as const, message: "in the way", paths: ["x"] };
    const out = text({
      ok: false,
      results: [
        pair({
          action: "fail_unmanaged",
          applied: false,
          error,
          counts: { created: 0, updated: 0, unchanged: 0, deleted: 0 },
        }),
      ],
    });
    assert.match(out, /web: fail_unmanaged — create 0/);
    assert.match(out, /Nothing was written: a pair failed planning\./);
  });
});
