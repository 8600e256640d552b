/**
 * Each root's state, read and classified early: while helper threads verify
 * the source. SPEC §6 reads the state under the lock, after verification; a
 * state of 100,000 outputs (54 MB) then takes the calling thread about 0.4 s
 * to parse and check while the helpers sit idle. Read early, that work
 * overlaps verification instead.
 *
 * The plan still uses the state as read under the lock: `readRoot` reads the
 * bytes again there and takes the early classification only if they are the
 * same bytes, so a state that changed in between (another run finishing) is
 * classified again from what is there now. Reading is the only thing done
 * early; nothing is written, and errors are left for the read under the lock
 * to meet and report.
 *
 * run.ts reads early from filesystem roots only: there a second read costs a
 * copy from the page cache, where on S3 it would download the state twice.
 */
import { STATE_FILE } from "../paths.js";
import { classifyState } from "../state/read.js";
import type { ClassifiedState } from "../state/types.js";
import type { StorageDriver, StoredBytes } from "../storage/driver.js";

interface Classified {
  bytes: Uint8Array;
  state: ClassifiedState;
}

export class EarlyStates {
  readonly #drivers: Promise<readonly StorageDriver[]>;
  /** Per root: its classification, once done. */
  readonly #byRoot = new Map<string, Classified>();
  /** Roots whose state was asked for: a read still pending must not classify any more. */
  readonly #taken = new Set<string>();
  #started = false;
  #closed = false;
  /** Settles once every read started has been classified or has failed. */
  #reads: Promise<unknown> = Promise.resolve();

  /**
   * `drivers`: the roots to read, once opened. If opening them fails, nothing
   * is read early; the caller awaits the same promise and reports the error.
   */
  constructor(drivers: Promise<readonly StorageDriver[]>) {
    this.#drivers = drivers;
    drivers.catch(() => {});
  }

  /**
   * Start reading each root's state (only the first call does anything).
   * Each is classified as soon as its bytes arrive, at a turn of this
   * thread's event loop (verification on this thread yields every 20 ms).
   */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#reads = this.#drivers.then(
      (list) => Promise.all(list.map((driver) => this.#read(driver))),
      () => {},
    );
  }

  /** No read still pending classifies anything any more (the run is over). */
  close(): void {
    this.#closed = true;
    this.#byRoot.clear();
  }

  /** Every early read is done (classified, or failed): for tests. */
  async settled(): Promise<void> {
    await this.#reads;
  }

  /**
   * The early classification of `root`'s state if it was made from exactly
   * `bytes` (null: no state there now); undefined otherwise (not read yet,
   * failed, or other bytes). Each root's is handed out once: a second plan of
   * the root classifies anew.
   */
  take(root: string, bytes: Uint8Array | null): ClassifiedState | undefined {
    this.#taken.add(root);
    const early = this.#byRoot.get(root);
    this.#byRoot.delete(root);
    return early && bytes && sameBytes(early.bytes, bytes) ? early.state : undefined;
  }

  async #read(driver: StorageDriver): Promise<void> {
    let stored: StoredBytes | null;
    try {
      stored = await driver.read(STATE_FILE);
    } catch {
      return; // A symlink, a directory or an unreadable state: readRoot finds out.
    }
    if (stored === null || this.#closed || this.#taken.has(driver.root)) return;
    const state = classifyState({ bytes: stored.bytes });
    this.#byRoot.set(driver.root, { bytes: stored.bytes, state });
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return (
    a.byteLength === b.byteLength &&
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
    )
  );
}
