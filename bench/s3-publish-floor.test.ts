import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { writeTestBundle } from "../src/bundle/testing.js";
import {
  createTestBucket,
  ensureS3Server,
  removeTestBucket,
  type S3Server,
  testS3Client,
} from "../test/s3-server.js";
import { type S3Target, s3PublishFloor, s3TargetOf } from "./s3-publish-floor.js";

let server: S3Server;
let bucket: string;
const made: string[] = [];
before(async () => {
  server = await ensureS3Server();
  bucket = await createTestBucket();
});
after(async () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  await removeTestBucket(bucket);
});

// Above what one socket write sends, so that the body goes out in pieces.
const LARGE = Buffer.alloc(600 * 1024, 7);

async function bundle(): Promise<string> {
  const dir = await writeTestBundle({
    "index.md": "# Title\n\nSee www.example.com and [b](b/page.md).\n",
    "b/page.md": "| a | b |\n|---|---|\n| 1 | 2 |\n",
    // Characters SigV4's canonical path must escape, or the server refuses the signature.
    "b/c (1)/data file's*.csv": "x,y\n1,2\n",
    "b/large.bin": LARGE,
    "top.txt": "top",
  });
  made.push(dir);
  return dir;
}

let prefixes = 0;
function target(): S3Target {
  return s3TargetOf(`s3://${bucket}/floor-${++prefixes}/`, process.env);
}

async function objectsUnder(prefix: string): Promise<string[]> {
  const client = testS3Client(server);
  try {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/` }),
    );
    return (page.Contents ?? []).map((object) => (object.Key as string).slice(prefix.length + 1));
  } finally {
    client.destroy();
  }
}

async function objectBytes(key: string): Promise<Buffer> {
  const client = testS3Client(server);
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from((await object.Body?.transformToByteArray()) ?? []);
  } finally {
    client.destroy();
  }
}

test("the S3 floor PUTs every file, the Markdown as HTML, and a state recording them", async () => {
  const source = await bundle();
  const to = target();
  const result = await s3PublishFloor(source, to);
  assert.deepEqual({ outputs: result.outputs, bad: result.bad }, { outputs: 5, bad: 0 });
  assert.deepEqual((await objectsUnder(to.prefix)).sort(), [
    ".distributor.json",
    "b/c (1)/data file's*.csv",
    "b/large.bin",
    "b/page.html",
    "index.html",
    "top.txt",
  ]);
  for (const copied of ["b/c (1)/data file's*.csv", "b/large.bin", "top.txt"]) {
    assert.deepEqual(
      await objectBytes(`${to.prefix}/${copied}`),
      readFileSync(path.join(source, copied)),
    );
  }
  const page = (await objectBytes(`${to.prefix}/b/page.html`)).toString("utf8");
  assert.match(page, /<table>/);
  const index = (await objectBytes(`${to.prefix}/index.html`)).toString("utf8");
  assert.match(index, /<h1 id="title">Title<\/h1>/);
  const state = JSON.parse((await objectBytes(`${to.prefix}/.distributor.json`)).toString("utf8"));
  assert.deepEqual(
    state.outputs.map((record: { path: string }) => record.path),
    ["b/c (1)/data file's*.csv", "b/large.bin", "b/page.html", "index.html", "top.txt"],
  );
});

test("the S3 floor writes nothing when a file does not match its digest", async () => {
  const source = await bundle();
  writeFileSync(path.join(source, "top.txt"), "TOP");
  const to = target();
  const result = await s3PublishFloor(source, to);
  assert.deepEqual(result, {
    outputs: 0,
    bad: 1,
    marks: { verified: result.marks.verified, state: 0, written: 0 },
  });
  assert.deepEqual(await objectsUnder(to.prefix), []);
});

test("the S3 floor writes nothing under a lock another run holds", async () => {
  const source = await bundle();
  const to = target();
  const client = testS3Client(server);
  try {
    await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: `${to.prefix}/.distributor.lock`, Body: "{}" }),
    );
  } finally {
    client.destroy();
  }
  await assert.rejects(s3PublishFloor(source, to), /\.distributor\.lock: HTTP 412/);
  assert.deepEqual(await objectsUnder(to.prefix), [".distributor.lock"]);
});

test("s3TargetOf reads the bucket and prefix, and needs the server and credentials", () => {
  const env = { S3_ENDPOINT: "http://127.0.0.1:1", AWS_ACCESS_KEY_ID: "a" };
  assert.throws(() => s3TargetOf("s3://b/p", env), /AWS_SECRET_ACCESS_KEY/);
  assert.deepEqual(s3TargetOf("s3://b/p/q/", { ...env, AWS_SECRET_ACCESS_KEY: "s" }), {
    endpoint: "http://127.0.0.1:1",
    bucket: "b",
    prefix: "p/q",
    region: "us-east-1",
    accessKeyId: "a",
    secretAccessKey: "s",
  });
  assert.throws(() => s3TargetOf("/tmp/out", { ...env, AWS_SECRET_ACCESS_KEY: "s" }), /s3:\/\//);
});
