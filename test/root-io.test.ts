/**
 * readRoot on a real filesystem root: the state is read first and parsed while
 * the root is listed (on another thread when the state is large); whatever
 * path it takes, the snapshot is the root's listing and its classified state.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { readRoot } from "../src/execution/root-io.js";
import { STATE_FILE } from "../src/paths.js";
import type { CatalogState, OutputRecord } from "../src/state/types.js";
import { serializeState } from "../src/state/write.js";
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
});
