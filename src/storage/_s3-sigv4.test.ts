import assert from "node:assert/strict";
import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { describe, it } from "node:test";
import { escapeUriPath } from "@smithy/core/protocols";
import { SignatureV4 } from "@smithy/signature-v4";
import { type RequestToSign, S3RequestSigner, type SigningCredentials } from "./_s3-sigv4.js";

type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytesOf(data: SourceData): string | Uint8Array {
  if (typeof data === "string") return data;
  return ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : new Uint8Array(data);
}

/** SHA-256 and HMAC-SHA256 in the shape the SDK's signer takes (`new sha256(key?)`). */
class NodeSha256 {
  readonly #hash: Hash | Hmac;
  constructor(key?: SourceData) {
    this.#hash = key === undefined ? createHash("sha256") : createHmac("sha256", bytesOf(key));
  }
  update(data: SourceData): void {
    this.#hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.#hash.digest();
  }
}

/** The Authorization header the SDK's signer gives the same request, configured as the driver had it. */
async function sdkAuthorization(
  request: RequestToSign,
  credentials: SigningCredentials,
  region: string,
  date: Date,
): Promise<Record<string, string>> {
  const signer = new SignatureV4({
    service: "s3",
    region,
    credentials,
    sha256: NodeSha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: "http:",
      hostname: "127.0.0.1",
      port: 7480,
      path: request.path,
      query: {},
      headers: { ...request.headers },
    },
    { signingDate: date },
  );
  return signed.headers as Record<string, string>;
}

const CREDENTIALS: SigningCredentials = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};

function putRequest(key: string, extra: Record<string, string> = {}): RequestToSign {
  return {
    method: "PUT",
    path: `/bucket/${escapeUriPath(key)}`,
    headers: {
      host: "127.0.0.1:7480",
      "content-length": "11",
      "x-amz-content-sha256": createHash("sha256").update("hello world").digest("hex"),
      ...extra,
    },
  };
}

describe("S3RequestSigner", () => {
  const cases: [string, RequestToSign, SigningCredentials, string][] = [
    ["a plain key", putRequest("site/index.html"), CREDENTIALS, "us-east-1"],
    [
      "a key that needs escaping, with metadata and a content type",
      putRequest("docs/ü ber (1)/a+b&c=d's*.html", {
        "content-type": "text/html; charset=utf-8",
        "x-amz-meta-sha256": `sha256:${"ab".repeat(32)}`,
      }),
      CREDENTIALS,
      "eu-central-1",
    ],
    [
      "header values with line breaks, tabs and runs of spaces",
      putRequest("k", { "content-type": "  text/plain;\t\tcharset=utf-8 \r\n" }),
      CREDENTIALS,
      "us-east-1",
    ],
    [
      "temporary credentials (a session token is sent and signed)",
      putRequest("k"),
      { ...CREDENTIALS, sessionToken: "FwoGZXIvYXdzEXAMPLE//token+/=" },
      "us-west-2",
    ],
  ];
  for (const [what, request, credentials, region] of cases) {
    it(`signs ${what} as the SDK's SignatureV4 does`, async () => {
      const date = new Date("2026-12-02T08:19:29.123Z");
      const ours = new S3RequestSigner(region).sign(request, credentials, date);
      assert.deepEqual(ours, await sdkAuthorization(request, credentials, region, date));
      assert.equal(ours["x-amz-date"], "20261202T081929Z");
    });
  }

  it("derives a new signing key for a new day and for new credentials", async () => {
    const signer = new S3RequestSigner("us-east-1");
    const request = putRequest("k");
    const rotated = { accessKeyId: "AKIDOTHER", secretAccessKey: "another-secret" };
    for (const [iso, credentials] of [
      ["2026-12-02T23:59:59Z", CREDENTIALS],
      ["2026-12-03T00:00:01Z", CREDENTIALS],
      ["2026-12-03T00:00:02Z", rotated],
      ["2026-12-03T00:00:03Z", CREDENTIALS],
    ] as const) {
      const date = new Date(iso);
      assert.deepEqual(
        signer.sign(request, credentials, date),
        await sdkAuthorization(request, credentials, "us-east-1", date),
        iso,
      );
    }
  });

  it("leaves the caller's headers as they were", () => {
    const request = putRequest("k");
    const before = { ...request.headers };
    new S3RequestSigner("us-east-1").sign(request, CREDENTIALS, new Date());
    assert.deepEqual(request.headers, before);
  });
});
