/**
 * Entry point of a helper thread (see threads.ts): runs one job at a time,
 * loading each job module once, and posts back its value. A job that throws
 * answers with an error marker, which the caller treats as a broken answer and
 * redoes on its own thread (where the error is reported properly). A job sent
 * with a follow-up (threads.ts: FollowUp) answers only once the follow-up ran.
 */
import { parentPort, receiveMessageOnPort } from "node:worker_threads";
import {
  FOLLOW_UP_PENDING,
  FOLLOW_UP_SENT,
  type FollowUpEnd,
  type HelperMessage,
  JOB_FAILED,
  type JobResult,
} from "./threads.js";

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

/**
 * Wait until the caller decides on the follow-up, run it if there is one and
 * post its answer on its port. A follow-up that fails answers nothing: the
 * caller does that work itself.
 */
async function runFollowUp({ port, state }: FollowUpEnd): Promise<void> {
  try {
    Atomics.wait(state, 0, FOLLOW_UP_PENDING);
    if (Atomics.load(state, 0) !== FOLLOW_UP_SENT) return;
    const received = receiveMessageOnPort(port)?.message as { job: string; input: unknown };
    if (received === undefined) return;
    const { value, transfer = [] } = (await jobModule(received.job))(received.input);
    port.postMessage(value, transfer);
  } catch {
    // Nothing answered: the caller does the follow-up's work.
  } finally {
    port.close();
  }
}

parentPort?.on("message", async (message: HelperMessage) => {
  if ("preload" in message) {
    // A module that fails to load fails its first job instead.
    jobModule(message.preload).catch(() => {});
    return;
  }
  const { job, input, followUp } = message;
  try {
    const { value, transfer = [] } = (await jobModule(job))(input);
    if (followUp) await runFollowUp(followUp);
    parentPort?.postMessage(value, transfer);
  } catch {
    // The caller redoes the job, and the follow-up's work, itself.
    followUp?.port.close();
    parentPort?.postMessage({ [JOB_FAILED]: true });
  }
});
