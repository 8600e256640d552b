/** walkTreeOffThread's helper-thread job: one synchronous walk, answered packed. */
import type { JobResult } from "../threads.js";
import { packEntries, walkTreeSync } from "./_fs-walk.js";

export function runJob(input: unknown): JobResult {
  const packed = packEntries(walkTreeSync((input as { root: string }).root));
  return { value: packed, transfer: [packed.sizes.buffer, packed.types.buffer] };
}
