/**
 * readRoot on a real filesystem root: the state is read first and parsed while
 * the root is listed (on another thread when the state is large); whatever
 * path it takes, the snapshot is the root's listing and its classified state.
 * A state read early (EarlyStates, while the source verifies) is used only
 * when the bytes under the lock are the same.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rename, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { setImmediate, setTimeout } from "node:timers/promises";
import { EarlyStates } from "../src/execution/early-state.js";
import { readRoot, readState } from "../src/execution/root-io.js";
import { STATE_FILE } from "../src/paths.js";
import type { CatalogState, OutputRecord } from "../src/state/types.js";
import { serializeState } from "../src/state/write.js";
import type { StorageDriver } from "../src/storage/driver.js";
import { createFilesystemDriver } from "../src/storage/filesystem.js";

const DIGEST = `sha256:${"c".repeat(64)}`;
const AT = "2026-06-04T12:00:00Z";

function stateWith(count: number): CatalogState {
  const outputs: OutputRecord[] = Array.from({ length: count }, (_, index) => ({
    path: `pages/${String(index).padStart(6, "0")}.txt`,
    pipeline_id: "site",
    destination_id: "web",
    source: { id: "site.v1", digest: DIGEST, created: AT },
    kind: "source",
    sha256: DIGEST,
    size: 1,
    created_at: AT,
    updated_at: AT,
  }));
  return {
    schema_version: 4,
    created_at: AT,
    updated_at: AT,
    state: { mode: "catalog" },
    outputs,
  };
}

async function rootWith(files: Record<string, string | Uint8Array>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), "distributor-root-io-"));
  for (const [relative, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
    await writeFile(path.join(root, relative), content);
  }
  return root;
}

describe("readRoot", () => {
  test("a state large enough to list alongside: the same listing and a valid state", async () => {
    const bytes = serializeState(stateWith(20_000));
    assert.ok(bytes.byteLength > 4 * 1024 * 1024, "above the threshold");
    const root = await rootWith({ [STATE_FILE]: bytes, "pages/000001.txt": "x", "a.txt": "a" });
    const driver = createFilesystemDriver({ root });
    const snapshot = await readRoot(driver);
    assert.deepEqual(snapshot.listing, await driver.list());
    assert.equal(snapshot.state.class, "valid");
    assert.equal(snapshot.state.class === "valid" && snapshot.state.state.outputs.length, 20_000);
    assert.ok(snapshot.stateToken);
  });

  test("a small state, a missing one, and one that is not a file", async () => {
    const small = await rootWith({ [STATE_FILE]: serializeState(stateWith(2)), "a.txt": "a" });
    assert.equal((await readRoot(createFilesystemDriver({ root: small }))).state.class, "valid");

    const none = await rootWith({ "a.txt": "a" });
    const missing = await readRoot(createFilesystemDriver({ root: none }));
    assert.deepEqual([missing.state.class, missing.stateToken], ["missing", null]);
    assert.deepEqual(
      missing.listing.map((entry) => entry.path),
      ["a.txt"],
    );

    const linked = await rootWith({ "real.json": serializeState(stateWith(1)) });
    await symlink(path.join(linked, "real.json"), path.join(linked, STATE_FILE));
    const viaLink = await readRoot(createFilesystemDriver({ root: linked }));
    assert.equal(viaLink.state.class, "invalid", "a symlinked state is never read");
    assert.equal(viaLink.stateToken, null);

    // A directory at the state path is not a regular file (SPEC §5): invalid,
    // whether it holds something (listed by its content) or nothing.
    const folder = await rootWith({ [`${STATE_FILE}/inside.txt`]: "x" });
    const asFolder = await readRoot(createFilesystemDriver({ root: folder }));
    assert.equal(asFolder.state.class, "invalid");
    assert.deepEqual(
      asFolder.listing.map((entry) => entry.path),
      [`${STATE_FILE}/inside.txt`],
    );
    const emptyFolder = await rootWith({ "a.txt": "a" });
    await mkdir(path.join(emptyFolder, STATE_FILE));
    const asEmptyFolder = await readRoot(createFilesystemDriver({ root: emptyFolder }));
    assert.equal(asEmptyFolder.state.class, "invalid");
    assert.deepEqual(
      asEmptyFolder.listing.map((entry) => [entry.path, entry.type]),
      [
        [STATE_FILE, "directory"],
        ["a.txt", "file"],
      ],
    );
  });

  /**
   * A filesystem root dressed as a remote one (S3's capability), whose state
   * read answers only after a few turns of the event loop, as a request would.
   */
  function remoteRoot(
    root: string,
    events: string[],
    listing?: () => Promise<never>,
  ): StorageDriver {
    const local = createFilesystemDriver({ root });
    return Object.assign(Object.create(local) as StorageDriver, {
      capabilities: { ...local.capabilities, remote: true },
      async read(relative: string) {
        events.push("read asked");
        for (let turn = 0; turn < 5; turn++) await setImmediate();
        events.push("read answered");
        return local.read(relative);
      },
      list() {
        events.push("list asked");
        return listing ? listing() : local.list();
      },
    });
  }

  test("a remote root: the listing is asked for while the state read is in flight", async () => {
    const root = await rootWith({ [STATE_FILE]: serializeState(stateWith(2)), "a.txt": "a" });
    const events: string[] = [];
    const snapshot = await readRoot(remoteRoot(root, events));
    assert.deepEqual(events, ["list asked", "read asked", "read answered"]);
    assert.equal(snapshot.state.class, "valid");
    assert.deepEqual(snapshot.listing, await createFilesystemDriver({ root }).list());
  });

  test("a remote root whose listing fails while the state is read: that failure, raised once", async () => {
    const root = await rootWith({ [STATE_FILE]: serializeState(stateWith(2)) });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const events: string[] = [];
      const failing = () => Promise.reject(new Error("503 SlowDown"));
      await assert.rejects(readRoot(remoteRoot(root, events, failing)), /SlowDown/);
      await setTimeout(20);
      assert.deepEqual(events, ["list asked", "read asked", "read answered"]);
      assert.deepEqual(unhandled, [], "the listing's failure waited for readRoot to report it");
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("EarlyStates", () => {
  async function readEarly(...roots: string[]): Promise<EarlyStates> {
    const early = new EarlyStates(
      Promise.resolve(roots.map((root) => createFilesystemDriver({ root }))),
    );
    early.start();
    await early.settled();
    return early;
  }

  test("hands out the classification made from the same bytes, once", async () => {
    const bytes = serializeState(stateWith(3));
    const root = await rootWith({ [STATE_FILE]: bytes });
    const early = await readEarly(root);
    const state = early.take(root, Uint8Array.from(bytes));
    assert.equal(state?.class, "valid");
    assert.equal(state?.class === "valid" && state.state.outputs.length, 3);
    assert.equal(early.take(root, bytes), undefined, "a second plan of the root parses anew");
  });

  test("other bytes, no state now, or no early read: nothing to hand out", async () => {
    const bytes = serializeState(stateWith(3));
    const root = await rootWith({ [STATE_FILE]: bytes });
    const other = serializeState(stateWith(4));
    assert.equal((await readEarly(root)).take(root, other), undefined);
    assert.equal((await readEarly(root)).take(root, null), undefined);
    // The same length, one byte different.
    const flipped = Uint8Array.from(bytes);
    flipped[flipped.length - 2] = 0x20;
    assert.equal((await readEarly(root)).take(root, flipped), undefined);
    const unstarted = new EarlyStates(Promise.resolve([createFilesystemDriver({ root })]));
    assert.equal(unstarted.take(root, bytes), undefined, "never started");
  });

  test("a missing, symlinked or unreadable state and a failed opening are left for the lock", async () => {
    const none = await rootWith({ "a.txt": "a" });
    const linked = await rootWith({ "real.json": serializeState(stateWith(1)) });
    await symlink(path.join(linked, "real.json"), path.join(linked, STATE_FILE));
    const folder = await rootWith({ [`${STATE_FILE}/inside.txt`]: "x" });
    const early = await readEarly(none, linked, folder);
    for (const root of [none, linked, folder]) assert.equal(early.take(root, null), undefined);

    // Rejected before anything awaits it: no unhandled rejection either.
    const failed = new EarlyStates(Promise.reject(new Error("cannot open")));
    await setImmediate();
    failed.start();
    await failed.settled();
    assert.equal(failed.take(none, null), undefined);
  });

  test("readRoot plans against the state under the lock when it changed since the early read", async () => {
    const root = await rootWith({ [STATE_FILE]: serializeState(stateWith(3)) });
    const driver = createFilesystemDriver({ root });
    const early = await readEarly(root);
    // Another run finished in between: a new state, replaced atomically.
    await writeFile(path.join(root, "next.json"), serializeState(stateWith(5)));
    await rename(path.join(root, "next.json"), path.join(root, STATE_FILE));
    const snapshot = await readRoot(driver, early);
    assert.equal(snapshot.state.class === "valid" && snapshot.state.state.outputs.length, 5);
    assert.equal(snapshot.stateToken, (await driver.read(STATE_FILE))?.token);
  });

  test("readRoot with an unchanged state: the early classification, and the token read under the lock", async () => {
    const bytes = serializeState(stateWith(20_000));
    const root = await rootWith({ [STATE_FILE]: bytes, "a.txt": "a" });
    const driver = createFilesystemDriver({ root });
    let handedOut: unknown;
    class Watched extends EarlyStates {
      override take(...args: Parameters<EarlyStates["take"]>) {
        handedOut = super.take(...args);
        return handedOut as ReturnType<EarlyStates["take"]>;
      }
    }
    const early = new Watched(Promise.resolve([driver]));
    early.start();
    await early.settled();
    const snapshot = await readRoot(driver, early);
    assert.ok(handedOut, "the early classification was handed out");
    assert.equal(snapshot.state, handedOut, "and used, not parsed again");
    assert.deepEqual(snapshot, await readRoot(driver));
  });

  for (const end of ["take", "close"] as const) {
    test(`a read still pending at ${end}() classifies nothing when it arrives`, async () => {
      const bytes = serializeState(stateWith(3));
      const root = await rootWith({ [STATE_FILE]: bytes });
      const driver = createFilesystemDriver({ root });
      let arrive = () => {};
      let classified = false;
      // The real read, held back until after take() or close(); the bytes
      // are only looked at to be classified.
      const slow: StorageDriver = {
        ...driver,
        read: async (relPath) => {
          const stored = await driver.read(relPath);
          await new Promise<void>((resolve) => {
            arrive = resolve;
          });
          if (stored === null) return null;
          return {
            token: stored.token,
            get bytes() {
              classified = true;
              return stored.bytes;
            },
          };
        },
      };
      const early = new EarlyStates(Promise.resolve([slow]));
      early.start();
      await setTimeout(50);
      if (end === "take") assert.equal(early.take(root, bytes), undefined, "not read yet");
      else early.close();
      arrive();
      await early.settled();
      assert.equal(classified, false);
      assert.equal(early.take(root, bytes), undefined);
    });
  }
});

describe("a state this process may not read", () => {
  test("is invalid (SPEC §5: unreadable), for run and for the maintenance commands", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "distributor-unreadable-"));
    await writeFile(path.join(root, STATE_FILE), serializeState(stateWith(1)));
    const real = createFilesystemDriver({ root });
    // As a filesystem driver answers for a 0600 file of another user (tests
    // run as root here, who may read anything).
    const denied = Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
    const driver: StorageDriver = Object.assign(Object.create(real), {
      read: async () => {
        throw Object.assign(new Error("storage_error"), { cause: denied });
      },
    });
    const snapshot = await readRoot(driver);
    assert.deepEqual(snapshot.state, { class: "invalid", reason: "unreadable (EACCES)" });
    assert.deepEqual((await readState(driver)).state, snapshot.state);
    // Any other failure to read stays a storage error.
    const broken: StorageDriver = Object.assign(Object.create(real), {
      read: async () => {
        throw Object.assign(new Error("EIO"), { cause: { code: "EIO" } });
      },
    });
    await assert.rejects(readRoot(broken), /EIO/);
    await assert.rejects(readState(broken), /EIO/);
  });
});
