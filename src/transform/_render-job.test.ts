import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { writeTestBundle } from "../bundle/testing.js";
import { openBundle } from "../bundle/verify.js";
import { sha256Digest } from "../hashing.js";
import type { ManifestFile, SourceBundle } from "../model.js";
import { newWorkClaims, takeFront } from "../threads.js";
import {
  pagesOf,
  type RenderShareAnswer,
  renderDocument,
  renderShareInput,
  runJob,
} from "./_render-job.js";

const TRANSFORMED = new Map([
  ["a.md", "a.html"],
  ["b.md", "b.html"],
  ["c.md", "c.html"],
]);

async function threeDocuments(): Promise<SourceBundle> {
  const dir = await writeTestBundle({
    "a.md": "# A\n\n[to b](b.md#x) <i>raw</i>",
    "b.md": "# B\n\nhttps://example.org",
    "c.md": "# C\n\n[to a](a.md) <i>raw</i>",
  });
  return openBundle(dir);
}

const allowHtml = (file: ManifestFile) => file.path === "c.md";

function runShare(bundle: SourceBundle, takenHere: number): RenderShareAnswer {
  const claims = newWorkClaims(bundle.files.length);
  for (let i = 0; i < takenHere; i++) takeFront(claims);
  const input = renderShareInput(bundle.dir, bundle.files, claims, allowHtml, TRANSFORMED);
  const { value, transfer } = runJob(input);
  const answer = value as RenderShareAnswer;
  assert.deepEqual(
    transfer,
    answer.map(({ page }) => page.bytes.buffer),
    "every page's buffer is moved, not copied",
  );
  assert.equal(takeFront(claims), undefined, "the list is done");
  return answer;
}

describe("the render job", () => {
  test("takes documents from the back, rendering them as this thread does", async () => {
    const bundle = await threeDocuments();
    const answer = runShare(bundle, 1);
    assert.deepEqual(
      answer.map(({ index }) => index),
      [2, 1],
      "the first was taken here",
    );
    for (const { index, page } of answer) {
      const file = bundle.files[index] as ManifestFile;
      const content = await readFile(path.join(bundle.dir, file.path));
      assert.deepEqual(
        page,
        renderDocument(file, content, { allowHtml: allowHtml(file) }, TRANSFORMED),
      );
    }
    const c = new TextDecoder().decode(answer[0]?.page.bytes);
    assert.match(c, /<a href="a\.html">to a<\/a> <i>raw<\/i>/, "links rewritten, allow_html kept");
  });

  test("a document that fails its check or cannot be rendered is left to this thread", async () => {
    const bundle = await threeDocuments();
    await writeFile(path.join(bundle.dir, "a.md"), "# changed");
    await writeFile(path.join(bundle.dir, "c.md"), Buffer.from([0x23, 0x20, 0xff]));
    // Same sizes, so that only the digest and the decoding fail.
    const answer = runShare(
      {
        ...bundle,
        files: bundle.files.map((file) =>
          file.path === "c.md"
            ? { ...file, size: 3, sha256: sha256Digest(new Uint8Array([0x23, 0x20, 0xff])) }
            : file,
        ),
      },
      0,
    );
    assert.deepEqual(
      answer.map(({ index }) => index),
      [1],
    );
  });

  test("with every document taken already, the job answers at once with nothing", async () => {
    const bundle = await threeDocuments();
    assert.deepEqual(runShare(bundle, 3), []);
  });

  test("pagesOf keeps well-formed pages within the list and ignores the rest", () => {
    const page = { bytes: new Uint8Array([1]), sha256: "sha256:x" };
    const pages = pagesOf(
      [
        [{ index: 0, page }],
        "not a list",
        [
          { index: 3, page },
          { index: -1, page },
          { index: 1.5, page },
          { index: 1, page: { bytes: [1], sha256: "sha256:x" } },
          { index: 2, page: { bytes: new Uint8Array([2]) } },
          null,
          { index: 2, page },
        ],
      ],
      3,
    );
    assert.deepEqual([...pages.keys()], [0, 2]);
    assert.deepEqual(pages.get(2), page);
  });
});
