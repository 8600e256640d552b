import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { DistributorError } from "../errors.js";
import { copyVerified, readVerifiedSync, verifyingStream } from "./_source-read.js";

const digest = (bytes: Buffer) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
const VERIFIED = Buffer.from("0123456789");
const SOURCE = { size: 10, sha256: digest(VERIFIED) };

/** What a verifying stream lets through for these chunks, and its error if any. */
async function through(chunks: Buffer[]): Promise<{ passed: Buffer; error?: unknown }> {
  const out: Buffer[] = [];
  try {
    for await (const chunk of Readable.from(chunks).pipe(
      verifyingStream({ absPath: "/src/f", ...SOURCE }),
    )) {
      out.push(chunk as Buffer);
    }
    return { passed: Buffer.concat(out) };
  } catch (error) {
    return { passed: Buffer.concat(out), error };
  }
}

function isChanged(error: unknown): boolean {
  return error instanceof DistributorError && error.code === "source_invalid";
}

describe("verifyingStream", () => {
  it("passes the verified bytes through unchanged", async () => {
    const { passed, error } = await through([VERIFIED.subarray(0, 4), VERIFIED.subarray(4)]);
    assert.equal(error, undefined);
    assert.ok(passed.equals(VERIFIED));
  });

  it("never passes on the last bytes of other content, nor a byte past the verified size", async () => {
    const other = Buffer.from("0123456780");
    const changed = await through([other.subarray(0, 5), other.subarray(5)]);
    assert.ok(isChanged(changed.error));
    assert.ok(changed.passed.byteLength < 10, "the request never gets all its bytes");
    const grown = await through([VERIFIED.subarray(0, 8), Buffer.from("89abcdef")]);
    assert.ok(isChanged(grown.error));
    assert.ok(grown.passed.byteLength <= 10);
    const shrunk = await through([VERIFIED.subarray(0, 6)]);
    assert.ok(isChanged(shrunk.error));
    assert.ok(shrunk.passed.byteLength < 10);
  });
});

describe("copyVerified and readVerifiedSync", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "distributor-source-read-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("refuse a file that grew, without copying past the verified size", async () => {
    const source = path.join(dir, "grown.bin");
    await writeFile(source, Buffer.alloc(9 * 1024 * 1024, 1));
    const verified = Buffer.alloc(5 * 1024 * 1024, 1);
    const claim = { absPath: source, size: verified.byteLength, sha256: digest(verified) };
    const target = path.join(dir, "copy.bin");
    const handle = await open(target, "wx");
    try {
      await assert.rejects(copyVerified(claim, handle), isChanged);
    } finally {
      await handle.close();
    }
    assert.ok((await readFile(target)).byteLength <= verified.byteLength);
    assert.throws(() => readVerifiedSync(claim), isChanged);
    // The error lists the manifest path where the content names one.
    assert.throws(
      () => readVerifiedSync({ ...claim, sourcePath: "data/grown.bin" }),
      (error: unknown) =>
        isChanged(error) && (error as DistributorError).paths[0] === "data/grown.bin",
    );
  });

  it("copy a file of several chunks byte for byte, and refuse one changed in its last chunk", async () => {
    // 3.5 MiB of varying bytes: more than three copy chunks, the last one short.
    const bytes = Buffer.alloc(3.5 * 1024 * 1024);
    for (let i = 0; i < bytes.byteLength; i++) bytes[i] = (i * 31 + (i >> 12)) & 0xff;
    const source = path.join(dir, "chunks.bin");
    await writeFile(source, bytes);
    const claim = { absPath: source, size: bytes.byteLength, sha256: digest(bytes) };

    const copy = async (name: string) => {
      const handle = await open(path.join(dir, name), "wx");
      try {
        return await copyVerified(claim, handle);
      } finally {
        await handle.close();
      }
    };
    assert.equal(await copy("whole.bin"), bytes.byteLength);
    assert.ok((await readFile(path.join(dir, "whole.bin"))).equals(bytes));

    const changed = Buffer.from(bytes);
    changed.writeUInt8((bytes.at(-1) ?? 0) ^ 1, changed.byteLength - 1);
    await writeFile(source, changed);
    await assert.rejects(copy("changed.bin"), isChanged);
  });
});
