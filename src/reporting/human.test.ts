import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatError, formatRunReport } from "./human.js";
import { formatReconcileReport } from "./maintenance.js";
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

  test("a name from storage with a newline or a tab stays on its line", () => {
    // A file named like this in a root would otherwise print a line of its own.
    const planted = "x\n  + index.html (new)\tok";
    const error = { code: "unmanaged_path" as const, message: `in the way: ${planted}`, paths: [] };
    const out = text({
      ok: false,
      results: [
        pair({
          action: "force_replace",
          deletions: [{ path: planted, reason: "unmanaged" }],
          error,
        }),
      ],
    });
    const lines = out.split("\n");
    assert.ok(lines.includes("  - x\\x0a  + index.html (new)\\x09ok (unmanaged)"), out);
    assert.ok(lines.some((line) => line.endsWith("in the way: x\\x0a  + index.html (new)\\x09ok")));
    assert.equal(lines.filter((line) => line.includes("index.html")).length, 2, out);
  });
});

describe("formatError", () => {
  test("paths outside the message stay on their lines; a config error keeps its own lines", () => {
    const style = { color: false };
    const named = formatError({ code: "storage_error", message: "failed", paths: ["a\nb"] }, style);
    assert.deepEqual(named, ["error [storage_error] failed", "  a\\x0ab"]);
    const lines = ["Invalid configuration:", "  a: bad"];
    const config = formatError(
      { code: "config_invalid", message: lines.join("\n"), paths: ["a"], lines },
      style,
    );
    assert.deepEqual(config, ["error [config_invalid] Invalid configuration:\n  a: bad"]);
  });

  test("a listed error keeps its own lines, each on one line; without them the message is one line", () => {
    const style = { color: false };
    const lines = ["Bundle failed:", "  - a: missing", "  - x\n  - b: fine", "Repair."];
    const error = { code: "source_invalid", message: lines.join("\n"), paths: ["a"] };
    const [listed] = formatError({ ...error, lines }, style);
    assert.deepEqual(listed?.split("\n"), [
      "error [source_invalid] Bundle failed:",
      "  - a: missing",
      "  - x\\x0a  - b: fine",
      "Repair.",
    ]);
    const [plain] = formatError(error, style);
    assert.equal(plain?.includes("\n"), false, plain);
  });
});

describe("formatReconcileReport", () => {
  test("an unmanaged name with a newline stays on its line", () => {
    const out = formatReconcileReport(
      {
        ok: true,
        pipeline_id: "site",
        destination_id: "web",
        root: "/srv/web",
        dry_run: true,
        missing: [],
        removed: [],
        unmanaged: ["evil\n  missing index.html"],
      },
      { color: false },
    );
    assert.match(out, /^ {2}unmanaged evil\\x0a {2}missing index\.html \(left as is\)$/m);
    assert.equal(out.split("\n").filter((line) => line.includes("index.html")).length, 1);
  });
});
