/**
 * Destinations for end-to-end tests that must hold on every storage type: a
 * filesystem directory or a prefix of a bucket on the real S3 server. Each one
 * gives the `storage:` block for a config and direct access to what is stored
 * (list, read, write, delete, the state), bypassing distributor, so a test can
 * tamper with a destination and check the result the same way on both.
 */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createTestBucket, ensureS3Server, removeTestBucket, testS3Client } from "../s3-server.js";
import {
  listFiles,
  type readStateFile,
  runCliJson,
  tempDir,
  writeBundle,
  writeConfig,
} from "./fixtures.js";

export type StateJson = Awaited<ReturnType<typeof readStateFile>>;

/** One empty destination root of some storage type. Paths are relative to the root. */
export interface Destination {
  readonly kind: "filesystem" | "s3";
  /** YAML flow mapping for a config's `destinations.<id>.storage`. */
  readonly storageYaml: string;
  /** The root as distributor reports it (absolute directory, or `s3://bucket/prefix/`). */
  readonly root: string;
  /** Every file or object under the root (reserved names included), sorted. */
  listFiles(): Promise<string[]>;
  /** The stored bytes; rejects when absent. */
  readFile(path: string): Promise<Buffer>;
  /** Store bytes as another tool would (on S3: no distributor metadata). */
  writeFile(path: string, bytes: string | Uint8Array): Promise<void>;
  /** Remove the file or object; already absent is fine. */
  deleteFile(path: string): Promise<void>;
  /** `.distributor.json` exactly as stored. */
  readStateText(): Promise<string>;
  /** `.distributor.json` parsed. */
  readState(): Promise<StateJson>;
}

/** A storage type under test: makes fresh destinations and removes them all at the end. */
export interface DestinationKind {
  readonly name: "filesystem" | "s3" | "s3 (versioned bucket)";
  /** A new empty destination. `endpoint` (S3 only) sends distributor through e.g. a fault proxy. */
  create(options?: { endpoint?: string }): Promise<Destination>;
  /** Remove every destination this kind made (temp dirs, the test bucket). */
  cleanup(): Promise<void>;
}

const STATE = ".distributor.json";

/** Filesystem destinations: a fresh temp directory each (removed by fixtures' cleanupTempDirs too). */
export function filesystemKind(): DestinationKind {
  const roots: string[] = [];
  return {
    name: "filesystem",
    async create() {
      const root = path.join(await tempDir("distributor-dest-"), "public");
      roots.push(root);
      const file = (relative: string) => path.join(root, ...relative.split("/"));
      const destination: Destination = {
        kind: "filesystem",
        storageYaml: `{ type: filesystem, root: ${JSON.stringify(root)} }`,
        root,
        listFiles: () => listFiles(root),
        readFile: (relative) => readFile(file(relative)),
        async writeFile(relative, bytes) {
          await mkdir(path.dirname(file(relative)), { recursive: true });
          await writeFile(file(relative), bytes);
        },
        deleteFile: (relative) => rm(file(relative), { force: true }),
        readStateText: () => readFile(file(STATE), "utf8"),
        async readState() {
          return JSON.parse(await destination.readStateText()) as StateJson;
        },
      };
      return destination;
    },
    async cleanup() {
      await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
    },
  };
}

/**
 * S3 destinations on the real server: one test bucket per kind (made on first
 * use), a fresh random prefix per destination, so destinations never see each
 * other's objects. Credentials come from the environment ensureS3Server set.
 */
export function s3Kind(options: { versioned?: boolean } = {}): DestinationKind {
  let shared: Promise<{ bucket: string; client: S3Client; endpoint: string; region: string }>;
  let count = 0;
  const session = () => {
    shared ??= (async () => {
      const server = await ensureS3Server();
      const bucket = await createTestBucket(options);
      return { bucket, client: testS3Client(server), ...server };
    })();
    return shared;
  };
  return {
    name: options.versioned ? "s3 (versioned bucket)" : "s3",
    async create(createOptions = {}) {
      const { bucket, client, endpoint, region } = await session();
      count += 1;
      const prefix = `e2e-${count}-${Math.random().toString(36).slice(2, 8)}`;
      const storageYaml = `{ type: s3, bucket: ${bucket}, prefix: ${prefix}, region: ${region}, endpoint: ${JSON.stringify(createOptions.endpoint ?? endpoint)}, force_path_style: true }`;
      return s3Destination(client, { bucket, prefix, storageYaml });
    },
    async cleanup() {
      if (shared === undefined) return;
      const { bucket, client } = await shared;
      client.destroy();
      await removeTestBucket(bucket);
    },
  };
}

function s3Destination(
  client: S3Client,
  where: { bucket: string; prefix: string; storageYaml: string },
): Destination {
  const { bucket, prefix } = where;
  const Key = (relative: string) => `${prefix}/${relative}`;
  const destination: Destination = {
    kind: "s3",
    storageYaml: where.storageYaml,
    root: `s3://${bucket}/${prefix}/`,
    async listFiles() {
      const keys: string[] = [];
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/`, ContinuationToken }),
        );
        for (const object of page.Contents ?? []) keys.push(object.Key ?? "");
        ContinuationToken = page.NextContinuationToken;
      } while (ContinuationToken);
      return keys.map((key) => key.slice(prefix.length + 1)).sort();
    },
    async readFile(relative) {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: Key(relative) }));
      return Buffer.from((await out.Body?.transformToByteArray()) ?? []);
    },
    async writeFile(relative, bytes) {
      const Body = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: Key(relative), Body }));
    },
    async deleteFile(relative) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: Key(relative) }));
    },
    async readStateText() {
      return (await destination.readFile(STATE)).toString("utf8");
    },
    async readState() {
      return JSON.parse(await destination.readStateText()) as StateJson;
    },
  };
  return destination;
}

/**
 * Both storage types, in the order the matrix runs them, and S3 once more
 * with a versioned bucket: there the test server (Ceph RGW 16) ignores
 * `If-None-Match` and refuses every `If-Match`, so the whole matrix also runs
 * the best-effort state and lock against a real server (docs/storage-s3.md,
 * "Versioned buckets").
 */
export function destinationKinds(): DestinationKind[] {
  return [filesystemKind(), s3Kind(), s3Kind({ versioned: true })];
}

// ---- a two-owner workspace over one destination --------------------------------

/** `alpha` publishes through `site-a` (Markdown → HTML), `beta` through `site-b`; same root. */
export const ALPHA = ["--pipeline", "alpha", "--destination", "site-a"] as const;
export const BETA = ["--pipeline", "beta", "--destination", "site-b"] as const;

export const ALPHA_FILES: Readonly<Record<string, string>> = {
  "alpha/index.md": "# Alpha\n\nSee [two](two.md) and [data](data.txt).\n",
  "alpha/two.md": "# Two\n\nSecond page.\n",
  "alpha/data.txt": "alpha data\n",
};
export const ALPHA_OUTPUTS = ["alpha/data.txt", "alpha/index.html", "alpha/two.html"];
export const BETA_FILES: Readonly<Record<string, string>> = {
  "beta/b1.txt": "b1\n",
  "beta/b2.txt": "b2\n",
};

export interface WorkspaceOptions {
  /** site-a's workflow. Default additive. */
  workflowA?: "additive" | "replacement";
  /** site-a's `retention.prune` flow mapping, e.g. `{ max_age: 1d, keep_latest: 1 }`. */
  pruneA?: string;
  /** A second destination of alpha (`site-b2`) with this storage block: one run, two roots. */
  mirrorStorageYaml?: string;
}

export interface Workspace {
  /** Working directory with distributor.yaml and the bundles. */
  dir: string;
  destination: Destination;
  /** Run the CLI in `dir` with `--json`. */
  cli<T = Record<string, unknown>>(args: readonly string[]): Promise<CliJsonResult<T>>;
  /** Rewrite alpha's bundle (a new manifest) with these files. */
  writeAlpha(files: Record<string, string>): Promise<void>;
  /** Rewrite beta's bundle (a new manifest) with these files. */
  writeBeta(files: Record<string, string>): Promise<void>;
}

export type CliJsonResult<T> = Awaited<ReturnType<typeof runCliJson<T>>>;

/** A working directory whose config publishes alpha and beta into `destination`. */
export async function workspace(
  destination: Destination,
  options: WorkspaceOptions = {},
): Promise<Workspace> {
  const dir = await tempDir("distributor-e2e-");
  await writeBundle(path.join(dir, "bundle-alpha"), { ...ALPHA_FILES }, { id: "alpha.v1" });
  await writeBundle(path.join(dir, "bundle-beta"), { ...BETA_FILES }, { id: "beta.v1" });
  const mirror = options.mirrorStorageYaml;
  const retention = options.pruneA ? `\n    retention:\n      prune: ${options.pruneA}` : "";
  await writeConfig(
    dir,
    `pipelines:
  alpha:
    source: ./bundle-alpha
    destinations: [site-a${mirror ? ", site-b2" : ""}]
    transforms:
      - transform: markdown_to_html
  beta: { source: ./bundle-beta, destinations: [site-b] }
destinations:
  site-a:
    storage: ${destination.storageYaml}
    workflow: ${options.workflowA ?? "additive"}
    url: https://example.test/site/${retention}
  site-b:
    storage: ${destination.storageYaml}
${mirror ? `  site-b2:\n    storage: ${mirror}\n    url: https://example.test/site/\n` : ""}`,
  );
  let version = 1;
  return {
    dir,
    destination,
    cli: (args) => runCliJson(args, { cwd: dir }),
    async writeAlpha(files) {
      version += 1;
      await rm(path.join(dir, "bundle-alpha"), { recursive: true, force: true });
      await writeBundle(path.join(dir, "bundle-alpha"), files, { id: `alpha.v${version}` });
    },
    async writeBeta(files) {
      version += 1;
      await rm(path.join(dir, "bundle-beta"), { recursive: true, force: true });
      await writeBundle(path.join(dir, "bundle-beta"), files, { id: `beta.v${version}` });
    },
  };
}
