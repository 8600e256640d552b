import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { appendFile, mkdtemp, open, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { readWhole } from "./_fs-read.js";

async function fileWith(bytes: Uint8Array): Promise<string> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), "distributor-read-")), "f.bin");
  await writeFile(file, bytes);
  return file;
}

async function readAt(file: string, size: number): Promise<Uint8Array> {
  const handle = await open(file, "r");
  try {
    return await readWhole(handle, size);
  } finally {
    await handle.close();
  }
}

test("readWhole: every byte of empty, small and multi-megabyte files", async () => {
  for (const size of [0, 1, 4095, 3 * 1024 * 1024 + 7]) {
    const bytes = randomBytes(size);
    assert.deepEqual(
      Buffer.from(await readAt(await fileWith(bytes), size)),
      bytes,
      `${size} bytes`,
    );
  }
});

test("readWhole: a file that grew or shrank since its size was taken is read to its end", async () => {
  const first = randomBytes(100_000);
  const file = await fileWith(first);
  const more = randomBytes(250_000);
  await appendFile(file, more);
  assert.deepEqual(Buffer.from(await readAt(file, first.length)), Buffer.concat([first, more]));
  assert.deepEqual(Buffer.from(await readAt(file, 1_000_000)), Buffer.concat([first, more]));
});

test("readWhole: the bytes are a copy of their own, not a view of a shared pool", async () => {
  const bytes = await readAt(await fileWith(Buffer.from("small")), 5);
  assert.equal(bytes.byteOffset, 0);
  assert.equal(bytes.buffer.byteLength, 6, "the one spare byte only");
});
