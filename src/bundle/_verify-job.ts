/**
 * A verification shard as a helper-thread job (see threads.ts): checks the
 * files it is given and answers with their problems, in order (see
 * _parallel-checks.ts). With `claims`, it takes its files from the front of
 * the shard while the calling thread may take the last ones from the back,
 * and answers for the files it took: the first ones, in order.
 */
import { type JobResult, takeFront } from "../threads.js";
import { FileChecker } from "./_file-checks.js";
import type { ShardInput } from "./_parallel-checks.js";

export function runJob(input: unknown): JobResult {
  const { root, files, claims } = input as ShardInput;
  const checker = new FileChecker(root);
  if (claims === undefined) return { value: checker.checkAll(files) };
  const problems: (string | null)[] = [];
  for (let index = takeFront(claims); index !== undefined; index = takeFront(claims)) {
    problems.push(checker.check(files[index] as (typeof files)[number]));
  }
  return { value: problems };
}
