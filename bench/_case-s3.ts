/**
 * Case 6: S to S3 against `rclone copy` to the same server. Needs a running S3
 * server whose endpoint and credentials are in the environment (S3_ENDPOINT,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION), e.g. the repository's
 * local test server. Every sample publishes to a fresh prefix; the bucket is
 * emptied before and after the case, because the local test server keeps its
 * objects in a few GiB of RAM and stalls when that fills up.
 */

import path from "node:path";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { createS3Client } from "../src/storage/_s3-client.js";
import { createS3Driver } from "../src/storage/s3.js";
import {
  type BenchCase,
  distributorRun,
  renderCacheDir,
  s3PublishFloorContender,
  writeConfig,
} from "./_kit.js";
import { processCpuSeconds } from "./_measure.js";
import { setAside } from "./_trash.js";
import type { Workload } from "./workload.js";

const BUCKET = "distributor-bench";

async function createBucket(endpoint: string): Promise<void> {
  // The same switch the CLI sets: keep the SDK's Node-version notice out of the report.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  // distributor's own client: its timeouts make a server that stops answering
  // (the local test server does when its in-memory store is full) fail the
  // case instead of hanging the run.
  const client = createS3Client({
    endpoint,
    forcePathStyle: true,
    region: process.env.AWS_REGION ?? "us-east-1",
    maxConcurrency: 1,
    idleTimeoutMs: 60_000,
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error;
  } finally {
    client.destroy();
  }
}

/** Delete every object in the bench bucket (earlier runs included). */
async function emptyBucket(endpoint: string): Promise<void> {
  const driver = createS3Driver({
    bucket: BUCKET,
    prefix: "",
    endpoint,
    forcePathStyle: true,
    region: process.env.AWS_REGION ?? "us-east-1",
  });
  await driver.deleteAll();
}

/** rclone's environment: this rclone's S3 backend fails when AWS_CA_BUNDLE is set. */
function rcloneEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.AWS_CA_BUNDLE;
  return env;
}

export function s3Case(s: () => Workload, work: string): BenchCase {
  const endpoint = process.env.S3_ENDPOINT;
  const run = `${Date.now()}`;
  let sample = 0;
  let rcloneSample = 0;
  let floorSample = 0;
  const config = path.join(work, "s3.yaml");
  return {
    id: "6",
    title: "S to S3",
    unit: "s",
    runs: 5,
    setup: async () => {
      if (!endpoint)
        throw new Error("no S3 server: start one and export S3_ENDPOINT and AWS_* credentials");
      await createBucket(endpoint);
      await emptyBucket(endpoint);
    },
    inputs: () => [s().dir],
    // The repository's test server (../shared/services/s3) when it runs here.
    serverCpuSeconds: () => processCpuSeconds(/^(radosgw|ceph-osd|ceph-mon|ceph-mgr)$/),
    teardown: async () => {
      if (endpoint) await emptyBucket(endpoint);
    },
    subject: {
      label: "distributor",
      before: () => {
        sample++;
        // A fresh publish of a new bundle: nothing rendered before.
        setAside(renderCacheDir(work));
        writeConfig(config, {
          source: s().dir,
          storage: {
            type: "s3",
            bucket: BUCKET,
            prefix: `run-${run}`,
            endpoint,
            force_path_style: true,
          },
          path: `distributor-${sample}`,
        });
      },
      command: () => distributorRun(config, renderCacheDir(work)),
    },
    comparisons: [
      {
        anchor: {
          label: "rclone copy",
          requires: "rclone",
          before: () => {
            rcloneSample++;
          },
          command: () => ({
            cmd: "rclone",
            env: rcloneEnv(),
            args: [
              ...[
                "--config",
                "/dev/null",
                "copy",
                s().dir,
                `:s3:${BUCKET}/run-${run}/rclone-${rcloneSample}`,
              ],
              ...[
                "--s3-provider=Ceph",
                "--s3-env-auth",
                `--s3-endpoint=${endpoint}`,
                "--s3-force-path-style=true",
              ],
            ],
          }),
        },
        target: "≤ 0.7×",
        ratioMax: 0.7,
      },
      {
        anchor: s3PublishFloorContender(
          () => s().dir,
          () => `s3://${BUCKET}/run-${run}/floor-${++floorSample}`,
        ),
        target: "context",
      },
    ],
  };
}
