/**
 * A verification shard as a helper-thread job (see threads.ts): checks the
 * files it is given and answers with their problems, in order (see
 * _parallel-checks.ts).
 */
import type { JobResult } from "../threads.js";
import { FileChecker } from "./_file-checks.js";
import type { ShardInput } from "./_parallel-checks.js";

export function runJob(input: unknown): JobResult {
  const { root, files } = input as ShardInput;
  return { value: new FileChecker(root).checkAll(files) };
}
