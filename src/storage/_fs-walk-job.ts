/** A helper thread's share of walkTreeOffThread: listed and sorted, answered packed. */
import type { JobResult } from "../threads.js";
import { packPart, type WalkShare, walkShareSync } from "./_fs-walk.js";

export function runJob(input: unknown): JobResult {
  const { packed, transfer } = packPart(walkShareSync(input as WalkShare));
  return { value: packed, transfer };
}
