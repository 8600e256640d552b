/**
 * Opens the driver for a destination's resolved root (SPEC §3: `<root>/<path>` on
 * a filesystem, `s3://<bucket>/<prefix>/<path>/` on S3). The S3 driver is loaded
 * lazily so filesystem runs never pay for loading the AWS SDK.
 */
import path from "node:path";
import type { DestinationConfig } from "../config/types.js";
import { joinClean } from "../paths.js";
import type { StorageDriver } from "./driver.js";
import { createFilesystemDriver } from "./filesystem.js";

export async function openDestination(destination: DestinationConfig): Promise<StorageDriver> {
  const storage = destination.storage;
  if (storage.type === "filesystem") {
    return createFilesystemDriver({ root: path.join(storage.root, destination.path) });
  }
  const { createS3Driver } = await import("./s3.js");
  return createS3Driver({
    bucket: storage.bucket,
    prefix: joinClean(storage.prefix, destination.path),
    region: storage.region,
    endpoint: storage.endpoint,
    forcePathStyle: storage.forcePathStyle,
    maxConcurrency: storage.maxConcurrency,
  });
}
