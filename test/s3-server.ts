/**
 * The real S3 server every S3 test runs against. `ensureS3Server` uses the one
 * named by S3_ENDPOINT when it answers, and otherwise starts the shared test
 * service (a Ceph RGW on loopback) next to the repository. When neither works
 * it throws: S3 tests fail loudly, they are never skipped.
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  S3Client,
} from "@aws-sdk/client-s3";

export interface S3Server {
  endpoint: string;
  region: string;
}

// The compiled file is dist/test/s3-server.js: the repository is two levels up.
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const START_SCRIPT = path.join(sharedDir(), "services", "s3", "start");

/**
 * The shared test services, found as .ci/run finds them: DISTRIBUTOR_SHARED_DIR,
 * else ../shared next to the repository, else next to the repository this
 * clone was cloned from (a clone made in a temp dir). The first that exists,
 * else ../shared, which the error message then names.
 */
function sharedDir(): string {
  const beside = path.join(REPO_ROOT, "..", "shared");
  const candidates = [process.env.DISTRIBUTOR_SHARED_DIR, beside, _originShared()];
  for (const candidate of candidates) {
    if (candidate && existsSync(path.join(candidate, "services", "s3", "start"))) return candidate;
  }
  return beside;
}

function _originShared(): string | undefined {
  try {
    const origin = execFileSync("git", ["remote", "get-url", "origin"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    // Only a local path has services beside it; a URL has none.
    return path.isAbsolute(origin) ? path.join(origin, "..", "shared") : undefined;
  } catch {
    return undefined;
  }
}

let server: Promise<S3Server> | undefined;

/** A client for test setup and inspection, signed with the environment's credentials. */
export function testS3Client(target: S3Server): S3Client {
  return new S3Client({
    endpoint: target.endpoint,
    region: target.region,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

async function answers(target: S3Server): Promise<boolean> {
  const client = testS3Client(target);
  try {
    await client.send(new ListBucketsCommand({}));
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

function currentTarget(): S3Server | null {
  const endpoint = process.env.S3_ENDPOINT;
  if (!endpoint) return null;
  return { endpoint, region: process.env.AWS_REGION ?? "us-east-1" };
}

async function startService(): Promise<void> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)("bash", [START_SCRIPT], {
      cwd: REPO_ROOT,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 600_000,
    }));
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.slice(-2000) ?? String(error);
    throw new Error(`S3 tests need a server: ${START_SCRIPT} failed:\n${detail}`);
  }
  for (const line of stdout.split("\n")) {
    const match = /^export ([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match?.[1] && match[2] !== undefined)
      process.env[match[1]] = match[2].replace(/^'(.*)'$/, "$1");
  }
}

/**
 * The S3 server to test against, started if needed (once per process). Throws
 * when no server can be reached or started: S3 tests must fail, never skip.
 */
export function ensureS3Server(): Promise<S3Server> {
  server ??= (async () => {
    const existing = currentTarget();
    if (existing && (await answers(existing))) return existing;
    await startService();
    const started = currentTarget();
    if (!started || !(await answers(started))) {
      throw new Error(
        `S3 tests need a server: after ${START_SCRIPT}, ListBuckets at ${started?.endpoint ?? "(no S3_ENDPOINT exported)"} still fails.`,
      );
    }
    return started;
  })();
  return server;
}

/**
 * Create a bucket with a unique name (`dist-test-<random>`) and return its
 * name. `versioned`: with versioning enabled, as many operators keep the
 * buckets they publish to (RGW then ignores conditional writes: see
 * docs/storage-s3.md, "Versioned buckets").
 */
export async function createTestBucket(options: { versioned?: boolean } = {}): Promise<string> {
  const target = await ensureS3Server();
  const bucket = `dist-test-${randomBytes(6).toString("hex")}`;
  const client = testS3Client(target);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    if (options.versioned) {
      await client.send(
        new PutBucketVersioningCommand({
          Bucket: bucket,
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
    }
  } finally {
    client.destroy();
  }
  return bucket;
}

/**
 * Empty a test bucket (objects, every version and delete marker of a
 * versioned one, and unfinished multipart uploads) and delete it.
 */
export async function removeTestBucket(bucket: string): Promise<void> {
  const client = testS3Client(await ensureS3Server());
  try {
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    for (const upload of uploads.Uploads ?? []) {
      await client.send(
        new AbortMultipartUploadCommand({
          Bucket: bucket,
          Key: upload.Key,
          UploadId: upload.UploadId,
        }),
      );
    }
    for (;;) {
      // Versions and delete markers: a plain listing would leave them, and
      // the bucket would not delete.
      const page = await client.send(new ListObjectVersionsCommand({ Bucket: bucket }));
      const objects = [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])].map((version) => ({
        Key: version.Key,
        VersionId: version.VersionId,
      }));
      if (objects.length === 0) break;
      await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects } }));
    }
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}
