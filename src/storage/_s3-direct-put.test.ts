import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { S3Client } from "@aws-sdk/client-s3";
import { DirectPut } from "./_s3-direct-put.js";

describe("DirectPut", () => {
  it("reaches an endpoint given as an IPv6 literal, as the SDK does", async (t) => {
    const seen: { method?: string; url?: string; length: number }[] = [];
    const server = http.createServer((request, response) => {
      let length = 0;
      request.on("data", (chunk: Buffer) => {
        length += chunk.length;
      });
      request.on("end", () => {
        seen.push({ method: request.method, url: request.url, length });
        response.writeHead(200, { etag: '"0123"' });
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "::1", resolve));
    t.after(() => new Promise((resolve) => server.close(resolve)));
    const client = new S3Client({
      endpoint: `http://[::1]:${(server.address() as AddressInfo).port}`,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
    });
    t.after(() => client.destroy());
    const put = new DirectPut(client, { bucket: "b", maxConcurrency: 1, idleTimeoutMs: 1000 });
    await put.put({ key: "site/a.txt" }, new Uint8Array([1, 2, 3]));
    assert.deepEqual(seen, [{ method: "PUT", url: "/b/site/a.txt", length: 3 }]);
  });

  it("refuses credentials without a key id or secret before sending anything", async () => {
    let asked = 0;
    const client = new S3Client({
      // Nothing listens here: a request that left would fail differently.
      endpoint: "http://127.0.0.1:9",
      forcePathStyle: true,
      region: "us-east-1",
      credentials: async () => {
        asked++;
        return { accessKeyId: "AKIDEXAMPLE" } as never;
      },
    });
    const put = new DirectPut(client, { bucket: "b", maxConcurrency: 1, idleTimeoutMs: 1000 });
    try {
      await assert.rejects(
        put.put({ key: "k" }, new Uint8Array([1])),
        /Resolved credential object is not valid/,
      );
      assert.equal(asked, 1, "asked once: not retried");
    } finally {
      client.destroy();
    }
  });
});
