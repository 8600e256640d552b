import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { tokenOfEtag, withRetries } from "./_s3-client.js";
import { errorNameOf, isLostRace, isNotFound, isRetryable, storageError } from "./_s3-errors.js";

/** An SDK service error as the client throws it (RGW sends an empty Message). */
function sdkError(name: string, status?: number): Error {
  const error = new Error("") as Error & { $metadata: { httpStatusCode?: number } };
  error.name = name;
  error.$metadata = { httpStatusCode: status };
  return error;
}

function networkError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:9`), { code });
}

describe("classification", () => {
  test("absent objects: NoSuchKey, HEAD's bare NotFound, any 404 but a missing bucket", () => {
    assert.equal(isNotFound(sdkError("NoSuchKey", 404)), true);
    assert.equal(isNotFound(sdkError("NotFound", 404)), true);
    assert.equal(isNotFound(sdkError("UnknownError", 404)), true);
    assert.equal(isNotFound(sdkError("NoSuchBucket", 404)), false);
    assert.equal(isNotFound(sdkError("AccessDenied", 403)), false);
  });

  test("a lost conditional race: 412, RGW's 500, and 404 only for If-Match", () => {
    assert.equal(isLostRace(sdkError("PreconditionFailed", 412), null), true);
    assert.equal(isLostRace(sdkError("UnknownError", 500), null), true);
    assert.equal(isLostRace(sdkError("NoSuchKey", 404), "etag"), true);
    assert.equal(isLostRace(sdkError("NoSuchKey", 404), null), false);
    assert.equal(isLostRace(sdkError("AccessDenied", 403), "etag"), false);
  });

  test("retryable: 5xx, 429, throttling names and network codes; not 4xx", () => {
    assert.equal(isRetryable(sdkError("InternalError", 503)), true);
    assert.equal(isRetryable(sdkError("TooMany", 429)), true);
    assert.equal(isRetryable(sdkError("SlowDown")), true);
    assert.equal(isRetryable(networkError("ECONNRESET")), true);
    assert.equal(isRetryable(sdkError("AccessDenied", 403)), false);
    assert.equal(isRetryable(new DistributorError("state_conflict", "x")), false);
  });

  test("a network failure is named by its errno code", () => {
    assert.equal(errorNameOf(networkError("ECONNREFUSED")), "ECONNREFUSED");
  });
});

describe("storageError", () => {
  test("names location, operation, status and error name, keeps the cause", () => {
    const cause = sdkError("AccessDenied", 403);
    const error = storageError(cause, {
      operation: "PutObject",
      location: "s3://b/p/k",
      path: "k",
    });
    assert.equal(error.code, "storage_error");
    assert.match(
      error.message,
      /^s3:\/\/b\/p\/k: PutObject failed: 403 AccessDenied\. Check the AWS credentials/,
    );
    assert.equal(error.cause, cause);
    assert.deepEqual(error.paths, ["k"]);
  });

  test("never copies a server's message text", () => {
    const cause = sdkError("SignatureDoesNotMatch", 403);
    cause.message = "secret-looking server text";
    assert.doesNotMatch(
      storageError(cause, { operation: "GetObject", location: "s3://b/" }).message,
      /secret/,
    );
  });

  test("a failure without an HTTP answer keeps the SDK's local message", () => {
    const error = storageError(networkError("ECONNREFUSED"), {
      operation: "HeadObject",
      location: "s3://b/",
    });
    assert.match(
      error.message,
      /HeadObject failed: ECONNREFUSED \(connect ECONNREFUSED 127\.0\.0\.1:9\)\. Check the endpoint/,
    );
  });
});

describe("tokens and retries", () => {
  test("ETag tokens drop the quotes; an empty ETag is no token", () => {
    assert.equal(tokenOfEtag('"abc-3"'), "abc-3");
    assert.equal(tokenOfEtag(""), null);
    assert.equal(tokenOfEtag(undefined), null);
  });

  test("withRetries retries retryable failures and gives up on the others", async () => {
    let calls = 0;
    const result = await withRetries(async () => {
      calls++;
      if (calls < 3) throw sdkError("SlowDown", 503);
      return "done";
    });
    assert.equal(result, "done");
    assert.equal(calls, 3);

    calls = 0;
    await assert.rejects(
      withRetries(async () => {
        calls++;
        throw sdkError("AccessDenied", 403);
      }),
      (error: unknown) => (error as Error).name === "AccessDenied",
    );
    assert.equal(calls, 1);
  });
});
