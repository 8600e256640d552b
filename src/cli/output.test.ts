import assert from "node:assert/strict";
import { test } from "node:test";
import { hasPrintedJson, printJson } from "./output.js";

test("--json prints one document: a second printJson prints nothing", (t) => {
  const written: string[] = [];
  t.mock.method(process.stdout, "write", (chunk: string) => {
    written.push(chunk);
    return true;
  });
  assert.equal(hasPrintedJson(), false);
  printJson({ ok: true });
  printJson({ ok: false, error: { code: "storage_error" } });
  t.mock.restoreAll();
  assert.equal(hasPrintedJson(), true);
  assert.deepEqual(written, [`${JSON.stringify({ ok: true }, null, 2)}\n`]);
});
