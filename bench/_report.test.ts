import assert from "node:assert/strict";
import { test } from "node:test";
import { spreadNote } from "./_report.js";

test("spreadNote flags samples 1.5x or more apart, and only those", () => {
  assert.equal(spreadNote([4.7, 42, 11.7], "s"), "4.70–42.00 s: the median may not be typical");
  assert.equal(spreadNote([1.0, 1.49], "s"), null);
  assert.equal(spreadNote([1.0, 1.5], "MB/s"), "1.00–1.50 MB/s: the median may not be typical");
  assert.equal(spreadNote([3], "s"), null, "one sample has no spread");
  assert.equal(spreadNote([], "s"), null);
});
