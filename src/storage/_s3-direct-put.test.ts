import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { S3Client } from "@aws-sdk/client-s3";
import { DirectPut } from "./_s3-direct-put.js";

describe("DirectPut", () => {
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
