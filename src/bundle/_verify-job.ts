/**
 * A verification shard as a helper-thread job (see threads.ts): takes its
 * files from the front of the shard while the calling thread may take the
 * last ones from the back (see _parallel-checks.ts), and answers with the
 * problems of the files it took: the first ones, in order.
 */
import { type JobResult, takeFront } from "../threads.js";
import { FileChecker } from "./_file-checks.js";
import { packedCount, packedFile } from "./_packed-files.js";
import type { ShardInput } from "./_parallel-checks.js";

export function runJob(input: unknown): JobResult {
  const { root, files, claims, store } = input as ShardInput;
  const checker = new FileChecker(root, store);
  const count = packedCount(files);
  if (count < 0) throw new Error("not a packed shard");
  const problems: (string | null)[] = [];
  for (let index = takeFront(claims); index !== undefined; index = takeFront(claims)) {
    // Never past the shard: a shorter answer has the rest checked by the caller.
    if (index >= count) break;
    problems.push(checker.check(packedFile(files, index)));
  }
  return { value: problems };
}
