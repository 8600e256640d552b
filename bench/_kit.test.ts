import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { expectWritten, writtenSince } from "./_kit.js";
import type { Sample } from "./_measure.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "distributor-kit-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A root with an old file and, written "during the sample", a page and the state. */
function root(): { root: string; sample: Sample } {
  const at = mkdtempSync(path.join(dir, "root-"));
  mkdirSync(path.join(at, "docs"));
  for (const name of ["old.txt", "docs/page.html", ".distributor.json"]) {
    writeFileSync(path.join(at, name), name);
  }
  const startedAtMs = Date.now() - 1_000;
  // Written before the sample started: not the sample's doing.
  const before = new Date(startedAtMs - 60_000);
  utimesSync(path.join(at, "old.txt"), before, before);
  const sample = { seconds: 1, startedAtMs, peakRssMb: null, cpuSeconds: null, stdout: "" };
  return { root: at, sample: sample as Sample };
}

test("writtenSince lists, sorted, the files modified since the sample started", () => {
  const { root: at, sample } = root();
  assert.deepEqual(writtenSince(at, sample.startedAtMs), [".distributor.json", "docs/page.html"]);
});

test("expectWritten checks a count, or exactly which paths", () => {
  const { root: at, sample } = root();
  assert.equal(expectWritten(at, 2)?.(sample), null);
  assert.equal(expectWritten(at, 0)?.(sample), "wrote 2 files, expected 0");
  assert.equal(expectWritten(at, () => ["docs/page.html", ".distributor.json"])?.(sample), null);
  assert.equal(
    expectWritten(at, () => ["docs/other.html", ".distributor.json"])?.(sample),
    "wrote .distributor.json, docs/page.html, expected .distributor.json, docs/other.html",
  );
});
