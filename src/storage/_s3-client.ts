/**
 * The S3 client the driver talks through, configured for S3-compatible servers
 * (Ceph RGW, MinIO, R2) as well as AWS, plus the small protocol helpers the
 * driver shares: ETag tokens and retries for requests the SDK does not repeat.
 */
import { createHash } from "node:crypto";
import { S3Client } from "@aws-sdk/client-s3";
import { isRetryable, isThrottling } from "./_s3-errors.js";

/** Attempts per request (the SDK's standard retry mode: backoff with jitter on throttling and 5xx). */
const MAX_ATTEMPTS = 5;

export interface S3ClientSettings {
  region?: string;
  endpoint?: string;
  forcePathStyle?: boolean;
  maxConcurrency: number;
  /** Socket idle time before a request fails; also bounds connecting. */
  idleTimeoutMs: number;
}

/**
 * A client whose credentials come from the standard AWS chain only (environment,
 * shared profile, instance role). Checksums are computed only where an
 * operation requires them: the default trailing checksums (aws-chunked bodies)
 * are rejected by several S3-compatible servers for streamed bodies (RGW: 411
 * MissingContentLength).
 */
export function createS3Client(settings: S3ClientSettings): S3Client {
  const client = new S3Client({
    region: settings.region,
    endpoint: settings.endpoint,
    forcePathStyle: settings.forcePathStyle,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    retryMode: "standard",
    maxAttempts: MAX_ATTEMPTS,
    requestHandler: {
      // Without these the SDK waits forever on a server that stops answering.
      connectionTimeout: Math.min(settings.idleTimeoutMs, 10_000),
      socketTimeout: settings.idleTimeoutMs,
      httpAgent: { keepAlive: true, maxSockets: settings.maxConcurrency },
      httpsAgent: { keepAlive: true, maxSockets: settings.maxConcurrency },
    },
  });
  // Per-request work no server needs: building and escaping the User-Agent,
  // Lambda's trace header, and logging to the no-op logger. About a tenth of
  // the SDK's CPU per PutObject, which dominates publishing many small files.
  for (const name of UNNEEDED_MIDDLEWARE) client.middlewareStack.remove(name);
  addDeleteObjectsMd5(client);
  return client;
}

/**
 * DeleteObjects must carry an integrity header. The SDK now sends a CRC32
 * one, which AWS and RGW accept but several S3-compatible servers (older
 * MinIO, Dell ECS) refuse with 400 MissingContentMD5: every batch delete,
 * so no prune, replacement or force could ever delete there. Content-MD5 of
 * the same body satisfies both (the SDK's own MD5 fallback, which also
 * drops the CRC32 header; keeping it costs nothing where it is understood).
 */
function addDeleteObjectsMd5(client: S3Client): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown };
      if (context.commandName === "DeleteObjectsCommand" && request.headers !== undefined) {
        const body = request.body;
        if (typeof body === "string" || body instanceof Uint8Array) {
          request.headers["content-md5"] = createHash("md5").update(body).digest("base64");
        }
      }
      return next(args);
    },
    { step: "build", name: "distributorDeleteObjectsMd5" },
  );
}

const UNNEEDED_MIDDLEWARE = [
  "getUserAgentMiddleware",
  "recursionDetectionMiddleware",
  "loggerMiddleware",
];

/** The version token of an ETag: quotes stripped (RGW compares If-Match raw); `null` when empty. */
export function tokenOfEtag(etag: string | undefined): string | null {
  const token = (etag ?? "").replaceAll('"', "");
  return token === "" ? null : token;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Run `attempt` up to {@link MAX_ATTEMPTS} times while it fails retryably, with
 * exponential backoff and full jitter: the SDK's standard retry, for requests
 * the SDK does not send itself or cannot repeat (a streamed body is consumed,
 * so each attempt must open a fresh one; see also _s3-direct-put.ts). Errors
 * that are not retryable (including DistributorErrors) pass through at once.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  retryable: (error: unknown) => boolean = isRetryable,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (n >= MAX_ATTEMPTS || !retryable(error)) throw error;
      const base = isThrottling(error) ? 500 : 100;
      await sleep(Math.random() * Math.min(20_000, base * 2 ** n));
    }
  }
}
