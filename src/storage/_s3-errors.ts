/**
 * How SDK failures of the S3 driver are classified and turned into
 * DistributorErrors. Classification is by property (HTTP status, error name,
 * network code), never by message text: S3-compatible servers such as Ceph RGW
 * send error bodies with an empty Message.
 */
import { DistributorError } from "../errors.js";

interface SdkErrorShape {
  name?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

function shape(error: unknown): SdkErrorShape {
  return typeof error === "object" && error !== null ? (error as SdkErrorShape) : {};
}

/** HTTP status of a failed SDK call, when the server answered at all. */
export function httpStatusOf(error: unknown): number | undefined {
  return shape(error).$metadata?.httpStatusCode;
}

/** The error's name as S3 reports it (`NoSuchKey`, `PreconditionFailed`, `ECONNREFUSED`...). */
export function errorNameOf(error: unknown): string {
  const { name, code, Code } = shape(error);
  // Network failures surface as plain Errors whose useful part is the errno code.
  if ((name === undefined || name === "Error") && typeof code === "string") return code;
  return name ?? Code ?? "UnknownError";
}

const NOT_FOUND_NAMES = new Set(["NotFound", "NoSuchKey"]);

/** True when the object is absent (HeadObject gives a bare 404 `NotFound`, GetObject `NoSuchKey`). */
export function isNotFound(error: unknown): boolean {
  if (NOT_FOUND_NAMES.has(errorNameOf(error))) return true;
  // A missing bucket is also a 404, and must not read as "the object is absent".
  return httpStatusOf(error) === 404 && errorNameOf(error) !== "NoSuchBucket";
}

/** True when a conditional request was refused because the precondition did not hold. */
export function isPreconditionFailed(error: unknown): boolean {
  return httpStatusOf(error) === 412 || errorNameOf(error) === "PreconditionFailed";
}

/** Error names of throttling: the server asks for fewer requests. */
const THROTTLED_NAMES = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "TooManyRequestsException",
]);
/** Error names worth another attempt besides network errors: throttling and request timing. */
const RETRYABLE_NAMES = new Set([...THROTTLED_NAMES, "RequestTimeout", "RequestTimeTooSkewed"]);
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "TimeoutError",
]);

/**
 * True for failures worth another attempt: throttling, 5xx and transient
 * network errors. Used where the SDK does not retry by itself (streamed
 * bodies, direct PUTs).
 */
export function isRetryable(error: unknown): boolean {
  const status = httpStatusOf(error);
  if (status !== undefined && (status >= 500 || status === 429)) return true;
  const name = errorNameOf(error);
  return RETRYABLE_NAMES.has(name) || NETWORK_CODES.has(name);
}

/**
 * Throttling, which the SDK's standard retry backs off from five times as
 * long as from other transient failures (500 ms base against 100 ms): the
 * server asked for less, and a quick retry only adds to its load.
 */
export function isThrottling(error: unknown): boolean {
  return httpStatusOf(error) === 429 || THROTTLED_NAMES.has(errorNameOf(error));
}

function hintFor(status: number | undefined, name: string): string {
  if (name === "NoSuchBucket") return "Check the bucket name and that it exists.";
  if (name === "XAmzContentSHA256Mismatch" || name === "BadDigest") {
    return "The bytes sent are not the ones verified: the source file changed after verification. Re-run once the bundle is complete.";
  }
  if (status === 403 || name === "InvalidAccessKeyId" || name === "SignatureDoesNotMatch") {
    return "Check the AWS credentials (environment or shared profile) and the bucket's permissions.";
  }
  if (name === "CredentialsProviderError") {
    return "Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE.";
  }
  if (status === undefined && NETWORK_CODES.has(name)) {
    return "Check the endpoint and the network, then retry.";
  }
  if (status !== undefined && status >= 500) return "The server failed; retry later.";
  return "Check the storage settings of this destination.";
}

/**
 * A failure without an HTTP answer (bad region, refused connection) was made by
 * the local SDK, whose message is safe and often the only clue.
 */
function clientSideDetail(error: unknown, name: string): string {
  const message = error instanceof Error ? error.message.split("\n")[0]?.slice(0, 200) : undefined;
  if (!message || message === name) return name;
  return `${name} (${message})`;
}

/**
 * `storage_error` for an unexpected SDK failure: names the object
 * (`s3://bucket/key`), the operation, the HTTP status and the error name, and
 * keeps the SDK error as `cause`. Never copies a server's message text, so no
 * request detail (signatures, credentials) can leak into reports.
 */
export function storageError(
  error: unknown,
  where: { operation: string; location: string; path?: string },
): DistributorError {
  const status = httpStatusOf(error);
  const name = errorNameOf(error);
  const what = status === undefined ? clientSideDetail(error, name) : `${status} ${name}`;
  return new DistributorError(
    "storage_error",
    `${where.location}: ${where.operation} failed: ${what}. ${hintFor(status, name)}`,
    { cause: error, paths: where.path === undefined ? [] : [where.path] },
  );
}

/**
 * AWS answers a conditional PUT that overlaps another operation on the same
 * key (a lock being deleted as the next run creates it) with 409
 * ConditionalRequestConflict, and asks for a retry: the condition was never
 * evaluated.
 */
export function isConditionalConflict(error: unknown): boolean {
  return httpStatusOf(error) === 409;
}

/**
 * True when a conditional PUT may have failed because another writer got
 * there first. RGW answers a writer that lost the race inside the cluster with
 * a 500, which never means the write happened (the driver then looks whether
 * the object changed, since a 500 is also what a failing server answers); AWS
 * answers If-Match on a missing key with 404 where RGW gives 412.
 */
export function isLostRace(error: unknown, ifMatch: string | null): boolean {
  const status = httpStatusOf(error);
  // A 409 still there after the retries: another writer keeps the key busy.
  if (isPreconditionFailed(error) || status === 500 || status === 409) return true;
  return ifMatch !== null && status === 404;
}
