/**
 * Entry point of a helper thread (see threads.ts): runs one job at a time,
 * loading each job module once, and posts back its value. A job that throws
 * answers with an error marker, which the caller treats as a broken answer and
 * redoes on its own thread (where the error is reported properly).
 */
import { parentPort } from "node:worker_threads";
import { type HelperMessage, JOB_FAILED, type JobResult } from "./threads.js";

type RunJob = (input: unknown) => JobResult;

const modules = new Map<string, Promise<RunJob>>();

function jobModule(url: string): Promise<RunJob> {
  let loaded = modules.get(url);
  if (!loaded) {
    loaded = import(url).then((module: { runJob: RunJob }) => module.runJob);
    modules.set(url, loaded);
  }
  return loaded;
}

parentPort?.on("message", async (message: HelperMessage) => {
  if ("preload" in message) {
    // A module that fails to load fails its first job instead.
    jobModule(message.preload).catch(() => {});
    return;
  }
  const { job, input } = message;
  try {
    const { value, transfer = [] } = (await jobModule(job))(input);
    parentPort?.postMessage(value, transfer);
  } catch {
    parentPort?.postMessage({ [JOB_FAILED]: true });
  }
});
