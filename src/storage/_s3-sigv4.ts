/**
 * AWS Signature Version 4, header form, for the one request shape the direct
 * PUTs send (_s3-direct-put.ts): no query string, a path already escaped as
 * sent (S3 signs it as is), lowercase header names that are all signed, and
 * the payload's SHA-256 in `x-amz-content-sha256`. Every other request goes
 * through the SDK and its own signer.
 *
 * Why not the SDK's SignatureV4 here too: for each request it copies the
 * request, runs its headers through code written for every AWS service and
 * for presigning, and hashes through async wrappers; on the benchmark's S
 * (1,000 PUTs to a local S3 server sharing the two cores) it cost 0.3 s of
 * CPU and 0.3 s of wall time more than this (case 6 in
 * docs/performance.md), much of it V8 compiling that general code. This is
 * the algorithm of the AWS documentation for that one shape; the tests
 * check its signatures against the SDK's for the same requests.
 */
import { createHash, createHmac } from "node:crypto";

export interface SigningCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface RequestToSign {
  method: string;
  /** The path as sent, already escaped. */
  path: string;
  /** Lowercase names; all of them are signed. Must hold `host` and `x-amz-content-sha256`. */
  headers: Record<string, string>;
}

const ALGORITHM = "AWS4-HMAC-SHA256";

/** `20261202T081929Z`: SigV4's date, to the second. */
function amzDate(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-:]/g, "")}Z`;
}

/** A header value as SigV4 canonicalizes it: line breaks and runs of blanks become one space, trimmed. */
function canonicalValue(value: string): string {
  return value
    .replace(/[\r\n]/g, " ")
    .replace(/[ \t]+/g, " ")
    .replace(/^ | $/g, "");
}

export class S3RequestSigner {
  readonly #region: string;
  /** The signing key of one day for one secret: derived once, not per request. */
  #key: { day: string; secret: string; bytes: Buffer } | undefined;

  constructor(region: string) {
    this.#region = region;
  }

  /** `request`'s headers with `x-amz-date`, the session token if any, and `authorization` added. */
  sign(
    request: RequestToSign,
    credentials: SigningCredentials,
    signingDate: Date,
  ): Record<string, string> {
    const date = amzDate(signingDate);
    const day = date.slice(0, 8);
    const headers: Record<string, string> = { ...request.headers, "x-amz-date": date };
    if (credentials.sessionToken) headers["x-amz-security-token"] = credentials.sessionToken;
    const names = Object.keys(headers).sort();
    const signedHeaders = names.join(";");
    const canonicalRequest = [
      request.method,
      request.path,
      "", // no query string
      ...names.map((name) => `${name}:${canonicalValue(headers[name] as string)}`),
      "",
      signedHeaders,
      headers["x-amz-content-sha256"],
    ].join("\n");
    const scope = `${day}/${this.#region}/s3/aws4_request`;
    const stringToSign = [
      ALGORITHM,
      date,
      scope,
      createHash("sha256").update(canonicalRequest).digest("hex"),
    ].join("\n");
    const signature = createHmac("sha256", this.#signingKey(day, credentials.secretAccessKey))
      .update(stringToSign)
      .digest("hex");
    headers.authorization = `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return headers;
  }

  #signingKey(day: string, secret: string): Buffer {
    const cached = this.#key;
    if (cached?.day === day && cached.secret === secret) return cached.bytes;
    let bytes = createHmac("sha256", `AWS4${secret}`).update(day).digest();
    for (const part of [this.#region, "s3", "aws4_request"]) {
      bytes = createHmac("sha256", bytes).update(part).digest();
    }
    this.#key = { day, secret, bytes };
    return bytes;
  }
}
