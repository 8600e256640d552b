/**
 * Entry point of a filesystem write worker (see _fs-write-pool.ts): runs each
 * small write it is sent with the same synchronous steps as the main thread.
 */
import { parentPort } from "node:worker_threads";
import { DistributorError } from "../errors.js";
import { writeSmallSync } from "./_fs-write.js";
import type { SmallWrite, SmallWriteAnswer } from "./_fs-write-pool.js";

parentPort?.on("message", (request: SmallWrite & { id: number }) => {
  let answer: SmallWriteAnswer;
  try {
    answer = { id: request.id, token: writeSmallSync(request.root, request.relPath, request) };
  } catch (error) {
    answer = {
      id: request.id,
      error:
        error instanceof DistributorError
          ? { code: error.code, message: error.message, paths: error.paths }
          : { message: String(error), paths: [] },
    };
  }
  parentPort?.postMessage(answer);
});
