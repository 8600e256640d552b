/**
 * outputDifferences must name exactly the fields in which the record recordFor
 * would build differs from the recorded one: it is recordFor's rules, applied
 * without building the record (a fast path for large unchanged catalogs).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { PlannedOutput } from "../model.js";
import type { OutputRecord } from "../state/types.js";
import { outputDifferences, type RecordContext, recordFor } from "./_records.js";
import { EARLIER, ME, NOW, OLD_SOURCE, planned, SOURCE } from "./plan-run.fixtures.js";

/** The reference: build the record, then compare it field by field in report order. */
function referenceDifferences(
  output: PlannedOutput,
  context: RecordContext,
  record: OutputRecord,
): string[] {
  const built = recordFor(output, context, {
    created_at: record.created_at,
    updated_at: record.updated_at,
  });
  const differs: string[] = [];
  if (built.pipeline_id !== record.pipeline_id || built.destination_id !== record.destination_id) {
    differs.push("owner");
  }
  if (JSON.stringify(built.source) !== JSON.stringify(record.source)) differs.push("source");
  for (const key of ["kind", "source_path", "transform", "url", "sha256", "size"] as const) {
    if (built[key] !== record[key]) differs.push(key);
  }
  // recordFor sets no field beyond these and the path and timestamps.
  const known = ["path", "pipeline_id", "destination_id", "source", "created_at", "updated_at"];
  const compared = ["kind", "source_path", "transform", "url", "sha256", "size"];
  assert.deepEqual(
    Object.keys(built).filter((key) => !known.includes(key) && !compared.includes(key)),
    [],
  );
  return differs;
}

const contexts: RecordContext[] = [
  { owner: ME, source: SOURCE, now: NOW },
  { owner: ME, source: SOURCE, now: NOW, urlBase: "https://example.test/site" },
  { owner: { pipelineId: "other", destinationId: "site" }, source: OLD_SOURCE, now: NOW },
];

const outputs: PlannedOutput[] = [
  planned("a b/é.txt"),
  planned("guide.html", { from: "guide.md" }),
  planned("guide.html", { from: "other.md", content: "other" }),
];

describe("outputDifferences", () => {
  it("agrees with building the record and comparing it, for every pairing of outputs and records", () => {
    let compared = 0;
    let differing = 0;
    for (const recordedWith of contexts) {
      for (const recordedOutput of outputs) {
        const record = recordFor(recordedOutput, recordedWith, {
          created_at: EARLIER,
          updated_at: EARLIER,
        });
        for (const context of contexts) {
          for (const output of outputs) {
            const expected = referenceDifferences(output, context, record);
            assert.deepEqual(outputDifferences(output, context, record), expected);
            compared += 1;
            if (expected.length > 0) differing += 1;
          }
        }
      }
    }
    // The pairings cover both outcomes, every field among them.
    assert.equal(compared, 81);
    assert.ok(differing > 0 && differing < compared);
  });

  it("names each field that differs, in report order", () => {
    const context: RecordContext = {
      owner: ME,
      source: SOURCE,
      now: NOW,
      urlBase: "https://x.test",
    };
    const output = planned("guide.html", { from: "guide.md" });
    const record = recordFor(output, context, { created_at: EARLIER, updated_at: EARLIER });
    assert.deepEqual(outputDifferences(output, context, record), []);
    const changed: OutputRecord = {
      ...record,
      pipeline_id: "other",
      source: { ...record.source, id: "old" },
      source_path: "old.md",
      url: "https://x.test/old.html",
      sha256: `sha256:${"1".repeat(64)}`,
      size: record.size + 1,
    };
    assert.deepEqual(outputDifferences(output, context, changed), [
      "owner",
      "source",
      "source_path",
      "url",
      "sha256",
      "size",
    ]);
    const asSource: OutputRecord = { ...record, kind: "source" };
    delete asSource.source_path;
    delete asSource.transform;
    assert.deepEqual(outputDifferences(output, context, asSource), [
      "kind",
      "source_path",
      "transform",
    ]);
  });
});
