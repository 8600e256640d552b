/**
 * What the configured S3 client puts on the wire, seen by a plain HTTP server
 * on loopback standing in for S3 (the real one is in test/storage-s3.test.ts).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { withRetries } from "./_s3-client.js";
import { createS3Driver } from "./s3.js";

test("DeleteObjects carries the Content-MD5 of its body, which some S3-compatible servers require", async (t) => {
  const seen: { headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(200, { "content-type": "application/xml" });
      response.end('<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  // Credentials only sign the request; this server does not check them.
  process.env.AWS_ACCESS_KEY_ID ??= "test-key";
  process.env.AWS_SECRET_ACCESS_KEY ??= "test-secret";
  const driver = createS3Driver({
    bucket: "b",
    prefix: "site",
    region: "us-east-1",
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forcePathStyle: true,
  });
  const results = await driver.deleteMany(["a.txt", "docs/b.html"]);
  assert.deepEqual(results, [{ path: "a.txt" }, { path: "docs/b.html" }]);
  assert.equal(seen.length, 1, "one batch");
  const [request] = seen;
  assert.ok(request?.body.toString().includes("<Key>site/docs/b.html</Key>"), "the batch itself");
  assert.equal(
    request?.headers["content-md5"],
    createHash("md5")
      .update(request?.body ?? "")
      .digest("base64"),
  );
});

test("retries back off from throttling five times as long as from other failures, as the SDK does", async (t) => {
  const waits: number[] = [];
  t.mock.method(Math, "random", () => 1);
  t.mock.method(globalThis, "setTimeout", (callback: () => void, ms: number) => {
    waits.push(ms);
    callback();
    return 0;
  });
  const failing = (error: object) => async () => {
    throw Object.assign(new Error("refused"), error);
  };
  const slowDown = { name: "SlowDown", $metadata: { httpStatusCode: 503 } };
  const unavailable = { name: "ServiceUnavailable", $metadata: { httpStatusCode: 503 } };
  await assert.rejects(withRetries(failing(slowDown)), /refused/);
  assert.deepEqual(waits, [1000, 2000, 4000, 8000]);
  waits.length = 0;
  await assert.rejects(withRetries(failing(unavailable)), /refused/);
  assert.deepEqual(waits, [200, 400, 800, 1600]);
});
