/**
 * Process-wide registry of held root locks, so that every exit path (normal
 * return, thrown error, SIGINT, SIGTERM) releases them. The CLI installs the
 * signal handlers; library callers get release-on-error from `withLocks`.
 */

import type { LockHandle, StorageDriver } from "../storage/driver.js";
import { assertWritesAllowed, stopWrites } from "../storage/filesystem.js";

/**
 * Locks held or being taken. An acquisition is registered before it starts: the
 * lock file is visible while it is still being written and fsynced, and a signal
 * in that window must still release it once the acquisition settles.
 */
const held = new Set<Promise<LockHandle>>();

export interface LockOptions {
  /**
   * Warnings for stderr: a stale lock of a dead local process taken over
   * (SPEC §6), or a driver falling back to best effort (S3 without conditional writes).
   */
  onWarning?: (message: string) => void;
}

/**
 * Take the lock of every driver's root (in root order, so two runs over the same
 * roots contend on the same first lock), run `body`, then release them all,
 * whatever happens. If any lock is held elsewhere, the ones taken are released
 * and `LockedError` propagates.
 */
export async function withLocks<T>(
  drivers: readonly StorageDriver[],
  body: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const taken: { acquisition: Promise<LockHandle>; root: string }[] = [];
  try {
    for (const driver of [...drivers].sort((a, b) => (a.root < b.root ? -1 : 1))) {
      const acquisition = driver.acquireLock({
        onStaleLock: (stale) =>
          options.onWarning?.(
            `warning: took over the stale lock of ${driver.root} held by ${stale.hostname} pid ${stale.pid} (started ${stale.started_at}); that process is gone`,
          ),
        // Drivers that must fall back to best effort say so (S3 without conditional writes).
        onWarning: options.onWarning,
      });
      held.add(acquisition);
      taken.push({ acquisition, root: driver.root });
      await acquisition;
    }
    return await body();
  } finally {
    // Last taken, first released, one after another: a root nested in
    // another sorts after it, and a root folder created for its lock is
    // removed on release only when empty (_fs-lock.ts), which the outer
    // one is only once the nested one's folder is gone.
    for (const { acquisition, root } of taken.reverse()) {
      await releaseOne(acquisition).catch((error: unknown) => {
        // The run's outcome stands; the lock left behind would refuse every
        // later run of the root, so the operator must hear of it.
        const reason = error instanceof Error ? error.message : String(error);
        options.onWarning?.(
          `warning: could not release the lock of ${root} (${reason}); once no run holds it, delete its .distributor.lock by hand`,
        );
      });
    }
  }
}

/**
 * Releases under way. A signal handler that finds a lock already being
 * released (by `withLocks` returning as the signal's wait ends) must still
 * wait for that release before the process exits, or the lock stays behind.
 */
const releasing = new Map<Promise<LockHandle>, Promise<void>>();

/**
 * Release one acquisition, once: a second call (withLocks and a signal
 * handler at the same moment) gets the release already under way, so the
 * lock file is never read and removed twice (the second removal could hit
 * a lock another run took in between).
 */
function releaseOne(acquisition: Promise<LockHandle>): Promise<void> {
  const pending = releasing.get(acquisition);
  if (pending) return pending;
  held.delete(acquisition);
  const release = (async () => {
    const handle = await acquisition.catch(() => null);
    await handle?.release();
  })();
  releasing.set(acquisition, release);
  const done = () => releasing.delete(acquisition);
  release.then(done, done);
  return release;
}

/**
 * Release every lock this process holds or is taking, and wait for releases
 * already under way (signal handlers). Never throws.
 */
export async function releaseAllLocks(): Promise<void> {
  for (const acquisition of [...held]) void releaseOne(acquisition);
  await Promise.allSettled([...releasing.values()]);
}

/** `promise`, or nothing once `ms` have passed. */
function atMost(promise: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
    promise.then(resolve, resolve);
  });
}

/** Writes and deletes of apply steps in progress (see unlessStopped). */
let inFlight = 0;
const onSettled: (() => void)[] = [];
/**
 * How long a signal waits for writes already sent before releasing the locks.
 * An S3 request cannot be taken back once sent; its timeouts bound it anyway.
 */
export const STOP_WAIT_MS = 10_000;

/**
 * Run one storage write or delete of an apply step, unless a signal has stopped
 * the process: then nothing starts and it throws storage_error. The signal
 * handler waits for the steps already started before it releases the locks,
 * on every storage type (stopWrites covers only the filesystem's own threads).
 */
export async function unlessStopped<T>(step: () => Promise<T>): Promise<T> {
  assertWritesAllowed();
  inFlight++;
  try {
    return await step();
  } finally {
    inFlight--;
    if (inFlight === 0) for (const settle of onSettled.splice(0)) settle();
  }
}

function stepsSettled(): Promise<void> {
  if (inFlight === 0) return Promise.resolve();
  return atMost(new Promise((resolve) => onSettled.push(resolve)), STOP_WAIT_MS);
}

let handlersInstalled = false;
let signalExitCode: number | null = null;

/**
 * 128+signal once SIGINT/SIGTERM was received, else null. A run that fails
 * because its writes were stopped by the signal still exits with this code.
 */
export function interruptedExitCode(): number | null {
  return signalExitCode;
}

/**
 * On SIGINT/SIGTERM: stop writes (no apply step starts any more, and the
 * filesystem's worker threads end), wait up to STOP_WAIT_MS for the steps
 * already started, release held locks, then exit with 128+signal. So nothing
 * this process started is still being written under a root once its lock is
 * gone (short of an S3 request outliving that wait). The plan's crash-safe
 * ordering makes an interrupted run converge on the next plain run.
 *
 * A second signal while that happens (an impatient Ctrl-C) does not cut it
 * short: Node's default would end the process at once and leave the locks
 * behind. It gets `onRepeat` instead; SIGKILL still ends the process. Both
 * waits are bounded by STOP_WAIT_MS, so the process exits within about
 * twice that.
 */
export function installSignalHandlers(
  onSignal?: (signal: NodeJS.Signals) => void,
  onRepeat?: (signal: NodeJS.Signals) => void,
  /** Last words before the exit, once the locks are released (the CLI's --json document). */
  beforeExit?: (signal: NodeJS.Signals) => Promise<void>,
): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.on(signal, () => {
      // Already stopping: signalExitCode is set by the first signal.
      if (signalExitCode !== null) {
        onRepeat?.(signal);
        return;
      }
      signalExitCode = code;
      onSignal?.(signal);
      // Releasing is bounded too: a storage that hangs (an S3 endpoint
      // retrying with backoff, a dead network mount) must not keep the
      // process from exiting; the next run takes a dead holder's lock over.
      void stopWrites()
        .then(stepsSettled)
        .then(() => atMost(releaseAllLocks(), STOP_WAIT_MS))
        .then(() => atMost(beforeExit?.(signal) ?? Promise.resolve(), STOP_WAIT_MS))
        .finally(() => process.exit(code));
    });
  }
}
