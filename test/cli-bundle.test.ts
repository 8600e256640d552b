/**
 * The CLI runs from the esbuild bundle in dist/cli (scripts/bundle-cli.mjs).
 * Helper threads and write workers fall back to the main thread when they
 * cannot start, silently by design, so a bundle that lost one of them would
 * still pass every CLI test, only slower: these tests start the bundled
 * threads themselves.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { type TransferListItem, Worker } from "node:worker_threads";
import { packFiles } from "../src/bundle/_packed-files.js";
import { sha256Hex } from "../src/hashing.js";
import type { PackedPart } from "../src/storage/_fs-walk.js";
import {
  batchOf,
  type SmallWriteAnswers,
  type SmallWriteBatch,
} from "../src/storage/_fs-write-pool.js";
import { FollowUp, newWorkClaims, takeBack, takeFront } from "../src/threads.js";
import type { RenderShareAnswer } from "../src/transform/_render-job.js";
import { ownCodeDigest, rendererCodeDigest } from "../src/transform/_renderer-fingerprint.js";
import { cleanupTempDirs, REPO_ROOT, tempDir } from "./helpers/fixtures.js";

const BUNDLE = path.join(REPO_ROOT, "dist/cli");

function bundleFiles(): { name: string; text: string }[] {
  return readdirSync(BUNDLE)
    .filter((name) => name.endsWith(".js"))
    .map((name) => ({ name, text: readFileSync(path.join(BUNDLE, name), "utf8") }));
}

/** Post one message to a new worker running `entry`, and return its first answer. */
async function askWorker(
  entry: string,
  message: unknown,
  transfer: TransferListItem[] = [],
): Promise<unknown> {
  const worker = new Worker(pathToFileURL(path.join(BUNDLE, entry)));
  try {
    return await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`worker exited (${code}) without answering`)));
      worker.postMessage(message, transfer);
    });
  } finally {
    await worker.terminate();
  }
}

describe("the CLI bundle (dist/cli)", () => {
  let dir: string;
  before(async () => {
    dir = await tempDir("distributor-bundle-");
  });
  after(cleanupTempDirs);

  it("has every module it starts by URL next to the code that starts it", () => {
    const named = new Set<string>();
    for (const { text } of bundleFiles()) {
      for (const match of text.matchAll(/new URL\("\.\/([\w-]+\.js)", import\.meta\.url\)/g)) {
        named.add(match[1] as string);
      }
    }
    // The helper thread, the verification, walk and render jobs, the write worker.
    assert.deepEqual([...named].sort(), [
      "_fs-walk-job.js",
      "_fs-write-worker.js",
      "_helper-thread.js",
      "_render-job.js",
      "_verify-job.js",
    ]);
    const present = new Set(readdirSync(BUNDLE));
    for (const name of named) assert.ok(present.has(name), `${name} is in dist/cli`);
  });

  it("takes the AWS SDK from its ES module builds, which esbuild can trim", () => {
    // The CommonJS build of the S3 client is built whole when the S3 driver
    // loads: 1.09 MB against 309 KB (docs/performance.md, item 45).
    const cjs = bundleFiles().flatMap(({ name, text }) =>
      [...text.matchAll(/^\/\/ node_modules\/(@aws-sdk|@smithy)\/[\w-]+\/dist-cjs\//gm)].map(
        (match) => `${name}: ${match[0]}`,
      ),
    );
    assert.deepEqual(cjs, []);
    const s3 = bundleFiles().find(({ text }) =>
      text.includes("// node_modules/@aws-sdk/client-s3/"),
    );
    assert.ok(s3, "the S3 client is in the bundle");
    assert.ok(s3.text.includes("// node_modules/@aws-sdk/client-s3/dist-es/"), s3.name);
  });

  it("computes the render cache's keys from the same renderer code digest as dist/src", () => {
    const texts = bundleFiles().map((file) => file.text);
    const own = ownCodeDigest();
    assert.match(own, /^[0-9a-f]{64}$/);
    assert.ok(
      texts.some((text) => text.includes(JSON.stringify(own))),
      "the bundle carries the digest of dist/src's renderer modules",
    );
    // markdown-it is loaded from node_modules when a run renders, not bundled:
    // its installed versions are looked up at run time, never baked in, so an
    // upgrade after the build cannot reuse renders of the older code.
    const digest = rendererCodeDigest();
    assert.notEqual(digest, own, "the installed markdown-it versions count");
    assert.ok(
      texts.every((text) => !text.includes(JSON.stringify(digest))),
      "no digest of the installed packages is baked into the bundle",
    );
    assert.ok(
      texts.every((text) => !text.includes("DISTRIBUTOR_RENDERER_CODE_DIGEST")),
      "no module reads the digest from a global at run time",
    );
  });

  it("verifies files on a bundled helper thread with the bundled job", async () => {
    const good = Buffer.from("good bytes\n");
    await writeFile(path.join(dir, "good.txt"), good);
    await writeFile(path.join(dir, "bad.txt"), "not what the manifest says\n");
    const files = [
      { path: "good.txt", size: good.length, sha256: `sha256:${sha256Hex(good)}` },
      { path: "bad.txt", size: 27, sha256: `sha256:${"0".repeat(64)}` },
      { path: "missing.txt", size: 1, sha256: `sha256:${"0".repeat(64)}` },
    ];
    const verify = (input: object) =>
      askWorker("_helper-thread.js", {
        job: pathToFileURL(path.join(BUNDLE, "_verify-job.js")).href,
        input: { root: dir, files: packFiles(files), ...input },
      });
    const answer = await verify({ claims: newWorkClaims(3) });
    assert.ok(Array.isArray(answer), `an answer per file, got ${JSON.stringify(answer)}`);
    assert.equal(answer.length, 3, "nothing taken from the back: every file");
    assert.equal(answer[0], null);
    assert.match(String(answer[1]), /^sha256 mismatch/);
    assert.equal(answer[2], "missing");
    // Taking from the front of a shard this thread shares: the last file is ours.
    const claims = newWorkClaims(3);
    assert.equal(takeBack(claims), 2);
    const shared = await verify({ claims });
    assert.ok(Array.isArray(shared), `an answer for the front, got ${JSON.stringify(shared)}`);
    assert.equal(shared.length, 2);
    assert.equal(shared[0], null);
    assert.match(String(shared[1]), /^sha256 mismatch/);
  });

  it("renders documents on a bundled helper thread, as a follow-up of the bundled verification job", async () => {
    const root = path.join(dir, "render");
    await mkdir(root);
    const docs = ["a.md", "b.md"].map((name) => {
      const bytes = Buffer.from(`# ${name}\n\n[other](${name === "a.md" ? "b" : "a"}.md)\n`);
      return { name, bytes, sha256: `sha256:${sha256Hex(bytes)}` };
    });
    for (const { name, bytes } of docs) await writeFile(path.join(root, name), bytes);
    const files = docs.map(({ name, bytes, sha256 }) => ({
      path: name,
      size: bytes.length,
      sha256,
    }));
    const followUp = new FollowUp();
    const claims = newWorkClaims(2);
    assert.equal(takeFront(claims), 0, "this thread takes a.md");
    followUp.send(new URL(pathToFileURL(path.join(BUNDLE, "_render-job.js"))), {
      root,
      files: packFiles(files),
      claims,
      allowHtml: new Uint8Array(2),
      transformed: [
        ["a.md", "a.html"],
        ["b.md", "b.html"],
      ],
    });
    const { end } = followUp;
    const problems = await askWorker(
      "_helper-thread.js",
      {
        job: pathToFileURL(path.join(BUNDLE, "_verify-job.js")).href,
        input: { root, files: packFiles(files), claims: newWorkClaims(2) },
        followUp: end,
      },
      [end.port],
    );
    assert.deepEqual(problems, [null, null], "the verification job's answer");
    const answer = followUp.answer() as RenderShareAnswer;
    assert.equal(answer?.length, 1, `one page, got ${JSON.stringify(answer)}`);
    assert.equal(answer[0]?.index, 1);
    const html = new TextDecoder().decode(answer[0]?.page.bytes);
    assert.match(html, /<title>b\.md<\/title>/);
    assert.match(html, /<a href="a\.html">other<\/a>/);
  });

  it("lists a folder on a bundled helper thread with the bundled walk job", async () => {
    const root = path.join(dir, "walk");
    await mkdir(path.join(root, "sub"), { recursive: true });
    await writeFile(path.join(root, "sub/one.txt"), "1");
    await writeFile(path.join(root, "two.txt"), "22");
    const answer = (await askWorker("_helper-thread.js", {
      job: pathToFileURL(path.join(BUNDLE, "_fs-walk-job.js")).href,
      input: { root, leaves: ["two.txt"], dirs: ["sub"], claims: newWorkClaims(2) },
    })) as PackedPart;
    assert.deepEqual(answer.entries.paths.split("\0"), ["sub/one.txt", "two.txt"]);
    assert.deepEqual([...answer.entries.sizes], [1, 2]);
    assert.deepEqual([...answer.done], [0, 1], "the directory, then the top-level file");
  });

  it("writes a batch on a bundled write worker", async () => {
    const root = path.join(dir, "root");
    const write = (name: string, token: boolean) => ({
      root,
      relPath: `docs/${name}`,
      target: path.join(root, "docs", name),
      content: { type: "bytes" as const, bytes: Buffer.from(`${name} written by the bundle\n`) },
      ...(token ? { token: true as const } : {}),
    });
    const batch: SmallWriteBatch = batchOf([write("a.txt", true), write("b.txt", false)]);
    const answers = (await askWorker("_fs-write-worker.js", batch)) as SmallWriteAnswers;
    assert.equal(answers.length, 2, "one answer per write, in order");
    assert.equal(typeof answers[0], "string", "a token where asked for");
    assert.equal(answers[1], null, "none where not");
    for (const name of ["a.txt", "b.txt"]) {
      const written = await readFile(path.join(root, "docs", name), "utf8");
      assert.equal(written, `${name} written by the bundle\n`);
    }
  });
});
