/**
 * The least work a fresh publish of a bundle with Markdown to S3 can do on
 * Node.js: a reference for case 6, not a second implementation, and less than
 * the contract asks. Case 6's client shares the machine's two cores with the
 * S3 server, so what decides the row is the client's CPU beside the server's
 * and how well the two overlap; this program says what the runtime itself
 * needs for both, in the same minutes as distributor and rclone.
 *
 * In the order SPEC §2 and §6 set, each part the cheapest way found:
 *
 * 1. verification on this thread: every file read and hashed, its bytes kept
 *    (the benchmark's S is 52 MB; two worker threads cost more to start than
 *    hashing it takes);
 * 2. then the Markdown rendered with distributor's own markdown-it setup for
 *    SPEC §4's syntax, the lock (a PUT with `If-None-Match: *`), a state
 *    recording the copies (a PUT), and every output, 16 requests in flight
 *    over kept-alive connections;
 * 3. then the state of every output and the lock's DELETE.
 *
 * Sending the copies while the Markdown renders (a document at a time between
 * their answers) measured no faster on the benchmark's S: both cores are busy
 * once the PUTs start, the server's as much as the client's
 * (docs/performance.md, case 6).
 *
 * Every request is signed with AWS Signature Version 4 by distributor's own
 * signer for its direct PUTs (src/storage/_s3-sigv4.ts, the cheapest found),
 * carrying each body's verified SHA-256 as its payload hash, so the server
 * refuses bytes other than the verified ones, as distributor's PUTs do.
 *
 * Less than the contract asks: no listing of the prefix (it must hold
 * nothing yet), no claim of each output before its PUT beyond the first
 * state, a bare body per document (no title, style or link rewriting), no
 * retries, no metadata but the content type, no config, plan or report.
 *
 *   node dist/bench/s3-publish-floor.js <bundle dir> s3://<bucket>/<new prefix>
 *
 * The server and credentials come from S3_ENDPOINT (path-style addressing),
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION (default
 * us-east-1); a session token is not supported. It prints what it wrote and
 * its phase marks (milliseconds since the process started) as JSON.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { escapeUriPath } from "@smithy/core/protocols";
import { S3RequestSigner } from "../src/storage/_s3-sigv4.js";
import { createRenderer } from "../src/transform/markdown-to-html.js";
import {
  type FloorManifest,
  floorCatalog,
  floorPage,
  type ManifestFile,
  rejectedFiles,
  runFloorModule,
  sha256Of,
} from "./_floor-kit.js";

export interface S3PublishFloorResult {
  /** Outputs written (the bundle's files, with each Markdown file as HTML). */
  outputs: number;
  /** Files whose bytes did not hash to the listed digest, and entries the field checks reject. */
  bad: number;
  /** Milliseconds since the process started when each phase ended (state: the first one). */
  marks: { verified: number; state: number; written: number };
}

/** Where the floor writes and as whom. */
export interface S3Target {
  endpoint: string;
  bucket: string;
  prefix: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const IN_FLIGHT = 16;
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** Signed requests to one bucket: SigV4 for S3, path-style. */
class FloorS3 {
  readonly #target: S3Target;
  readonly #url: URL;
  readonly #agent: http.Agent;
  readonly #signer: S3RequestSigner;

  constructor(target: S3Target) {
    this.#target = target;
    this.#url = new URL(target.endpoint);
    if (this.#url.protocol !== "http:") throw new Error("the S3 floor speaks plain HTTP only");
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
    this.#signer = new S3RequestSigner(target.region);
  }

  /** `method` on `<prefix>/<path>`; resolves when the server answered 2xx. */
  request(
    method: "PUT" | "DELETE",
    path: string,
    body?: { bytes: Uint8Array; sha256Hex: string; contentType?: string; ifNoneMatch?: boolean },
  ): Promise<void> {
    const key = this.#target.prefix === "" ? path : `${this.#target.prefix}/${path}`;
    const uri = `${this.#url.pathname.replace(/\/$/, "")}/${this.#target.bucket}/${escapeUriPath(key)}`;
    const unsigned: Record<string, string> = {
      host: this.#url.host,
      "x-amz-content-sha256": body?.sha256Hex ?? EMPTY_SHA256,
      "content-length": String(body?.bytes.byteLength ?? 0),
    };
    if (body?.contentType) unsigned["content-type"] = body.contentType;
    if (body?.ifNoneMatch) unsigned["if-none-match"] = "*";
    const headers = this.#signer.sign(
      { method, path: uri, headers: unsigned },
      this.#target,
      new Date(),
    );
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          agent: this.#agent,
          hostname: this.#url.hostname,
          port: this.#url.port,
          method,
          path: uri,
          headers,
        },
        (response) => {
          response.resume();
          response.on("error", reject);
          response.on("end", () => {
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve();
            else reject(new Error(`${method} ${key}: HTTP ${status}`));
          });
        },
      );
      request.on("error", reject);
      request.end(body?.bytes);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** `s3://bucket/prefix` and the environment's server and credentials. */
export function s3TargetOf(url: string, env: NodeJS.ProcessEnv): S3Target {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  const { S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY } = env;
  if (!match || !S3_ENDPOINT || !AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY)
    throw new Error(
      "needs s3://<bucket>/<prefix>, S3_ENDPOINT, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
  return {
    endpoint: S3_ENDPOINT,
    bucket: match[1] as string,
    prefix: (match[2] as string).replace(/\/$/, ""),
    region: env.AWS_REGION ?? "us-east-1",
    accessKeyId: AWS_ACCESS_KEY_ID,
    secretAccessKey: AWS_SECRET_ACCESS_KEY,
  };
}

/** Run `put` on every item, `IN_FLIGHT` at a time; resolves when all are done. */
async function putAll<T>(items: readonly T[], put: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await put(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, items.length) }, lane));
}

const hexOf = (digest: string) => digest.slice("sha256:".length);

export async function s3PublishFloor(
  bundle: string,
  target: S3Target,
): Promise<S3PublishFloorResult> {
  // 1. Verification: every file read and hashed here, its bytes kept.
  const manifestBytes = readFileSync(`${bundle}/manifest.json`);
  const manifest = JSON.parse(manifestBytes.toString("utf8")) as FloorManifest;
  let bad = rejectedFiles(manifest.files);
  const bytes = new Map<string, Buffer>();
  if (bad === 0) {
    for (const file of manifest.files) {
      const read = readFileSync(`${bundle}/${file.path}`);
      if (sha256Of(read) !== file.sha256) bad++;
      bytes.set(file.path, read);
    }
  }
  const verifiedAt = performance.now();
  if (bad > 0) return { outputs: 0, bad, marks: { verified: verifiedAt, state: 0, written: 0 } };

  const s3 = new FloorS3(target);
  try {
    const markdown = manifest.files.filter((file) => file.path.endsWith(".md"));
    const copies = manifest.files.filter((file) => !file.path.endsWith(".md"));
    const put = (path: string, body: Uint8Array, sha256: string, contentType?: string) =>
      s3.request("PUT", path, { bytes: body, sha256Hex: hexOf(sha256), contentType });

    // 2. The Markdown rendered, then the lock, a state recording the copies,
    // and every output.
    const md = createRenderer(false);
    const html = markdown.map((file) => floorPage(md, file, bytes.get(file.path) as Buffer));
    const lockBody = Buffer.from(JSON.stringify({ pid: process.pid, started_at: new Date() }));
    await s3.request("PUT", ".distributor.lock", {
      bytes: lockBody,
      sha256Hex: hexOf(sha256Of(lockBody)),
      ifNoneMatch: true,
    });
    const catalog = floorCatalog(manifest, manifestBytes);
    const copyRecords = copies.map(catalog.copy);
    const putState = (records: { path: string }[]) => {
      const text = Buffer.from(catalog.stateText(records));
      return put(".distributor.json", text, sha256Of(text), "application/json");
    };
    await putState([...copyRecords]);
    const stateAt = performance.now();
    await putAll([...copies, ...html], (output) =>
      "bytes" in output
        ? put(output.path, output.bytes, output.sha256, "text/html; charset=utf-8")
        : put(output.path, bytes.get(output.path) as Buffer, output.sha256),
    );
    // 3. The state of every output, then the lock's release.
    const records = [
      ...copyRecords,
      ...html.map((page, i) => catalog.page(page, markdown[i] as ManifestFile)),
    ];
    await putState(records);
    await s3.request("DELETE", ".distributor.lock");
    return {
      outputs: records.length,
      bad,
      marks: { verified: verifiedAt, state: stateAt, written: performance.now() },
    };
  } finally {
    s3.close();
  }
}

await runFloorModule({
  url: import.meta.url,
  usage: "node dist/bench/s3-publish-floor.js <bundle dir> s3://<bucket>/<new prefix>",
  floor: (bundle, destination) => s3PublishFloor(bundle, s3TargetOf(destination, process.env)),
  exitCode: (report) => (report.bad === 0 ? 0 : 1),
});
