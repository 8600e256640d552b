/**
 * Entry point of a verification worker thread: checks the shard of files it is
 * given and posts back their problems, in order (see _parallel-checks.ts).
 */
import { parentPort, workerData } from "node:worker_threads";
import { FileChecker } from "./_file-checks.js";
import type { ShardInput } from "./_parallel-checks.js";

const { root, files } = workerData as ShardInput;
parentPort?.postMessage(new FileChecker(root).checkAll(files));
