/**
 * `run --verify`: re-hash the stored bytes of every output the planner would
 * otherwise call unchanged (a record with the planned sha256 and size), so that
 * drifted files are rewritten. Only those candidates are read: verifying never
 * costs more than one read of what is already published.
 */

import { mapLimit } from "../concurrency.js";
import { digestStream } from "../hashing.js";
import type { PlannedOutput } from "../model.js";
import type { ClassifiedState } from "../state/types.js";
import type { StorageDriver } from "../storage/driver.js";

export async function digestsOfUnchanged(
  driver: StorageDriver,
  input: { state: ClassifiedState; outputs: readonly PlannedOutput[] },
): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  if (input.state.class !== "valid") return digests;
  const records = new Map(input.state.state.outputs.map((record) => [record.path, record]));
  const candidates = input.outputs.filter((output) => {
    const record = records.get(output.path);
    return record?.sha256 === output.sha256 && record.size === output.size;
  });
  await mapLimit(candidates, async (output) => {
    const entry = await driver.stat(output.path);
    if (entry?.type !== "file") return;
    const digest = await digestStream(
      (await driver.readStream(output.path)) as AsyncIterable<Uint8Array>,
    );
    digests.set(output.path, digest.sha256);
  });
  return digests;
}
