import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { paint } from "../reporting/human.js";
import { hasPrintedJson, printJson, terminalSafe } from "./output.js";

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

describe("terminalSafe", () => {
  const plain = { color: false };
  const colour = { color: true };

  test("shows the controls that rewrite or hide a line as escapes", () => {
    const planted = "ci-01\u001b[2K\rreports -> site: skip_same\u001b[8m\u0007\u009b\u202e";
    assert.equal(
      terminalSafe(planted, plain),
      "ci-01\\x1b[2K\\x0dreports -> site: skip_same\\x1b[8m\\x07\\x9b\\u202e",
    );
    assert.equal(terminalSafe(planted, colour), terminalSafe(planted, plain));
  });

  test("keeps newlines, tabs and ordinary text as they are", () => {
    const text = "a → b: 3 created\n\tdocs/é.html (new)\n";
    assert.equal(terminalSafe(text, plain), text);
  });

  test("keeps paint's own colours only while colour is on", () => {
    const painted = paint("failed", "red", colour);
    assert.equal(terminalSafe(painted, colour), painted);
    assert.equal(terminalSafe(painted, plain), "\\x1b[31mfailed\\x1b[0m");
  });
});
