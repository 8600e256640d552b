/**
 * Entry point of a filesystem write worker (see _fs-write-pool.ts): runs each
 * small write of a batch it is sent, in order, with the same synchronous steps
 * as the main thread, and answers the batch with one message.
 */
import { parentPort } from "node:worker_threads";
import { DistributorError } from "../errors.js";
import { batchCache, type WriteCache, writeSmallSync } from "./_fs-write.js";
import {
  type SmallWrite,
  type SmallWriteAnswer,
  type SmallWriteAnswers,
  type SmallWriteBatch,
  writesOf,
} from "./_fs-write-pool.js";

function answerTo(request: SmallWrite, cache: WriteCache): SmallWriteAnswer {
  try {
    return writeSmallSync(request.root, request.relPath, request, cache);
  } catch (error) {
    return {
      error:
        error instanceof DistributorError
          ? { code: error.code, message: error.message, paths: error.paths }
          : { message: String(error), paths: [] },
    };
  }
}

// A batch that cannot be read here would never be answered: end the thread,
// and the pool hands its writes back to their callers.
parentPort?.on("messageerror", () => process.exit(1));

parentPort?.on("message", (batch: SmallWriteBatch) => {
  // Folders found to be real directories, or held open, for this batch
  // only: its writes share their folders, and the batch takes milliseconds.
  const cache = batchCache();
  let answers: SmallWriteAnswers;
  try {
    answers = writesOf(batch).map((request) => answerTo(request, cache));
  } finally {
    cache.close();
  }
  parentPort?.postMessage(answers);
});
