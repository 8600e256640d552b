/** A helper thread's share of walkTreeOffThread: listed and sorted, answered packed. */
import type { JobResult } from "../threads.js";
import { packEntries, type WalkShare, walkShareSync } from "./_fs-walk.js";

export function runJob(input: unknown): JobResult {
  const packed = packEntries(walkShareSync(input as WalkShare));
  return { value: packed, transfer: [packed.sizes.buffer, packed.types.buffer] };
}
