/**
 * S3 destinations under faults, through a fault-injecting proxy in front of the
 * real server: transient failures are retried and the run converges, a run
 * killed mid-upload reruns cleanly without --force, persistent failures are
 * `storage_error`s that name the object and the server's code but never the
 * credentials, a server that ignores conditional writes is detected and
 * announced, and verify trusts the digest metadata instead of downloading.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it, type TestContext } from "node:test";
import { DistributorError } from "../src/errors.js";
import { createS3Driver, type S3DriverOptions } from "../src/storage/s3.js";
import {
  ALPHA,
  ALPHA_FILES,
  ALPHA_OUTPUTS,
  type Destination,
  s3Kind,
  workspace,
} from "./helpers/destinations.js";
import { type FaultProxy, startFaultProxy } from "./helpers/fault-proxy.js";
import { cleanupTempDirs, runCli, sha256, spawnCli, tempDir } from "./helpers/fixtures.js";
import { createTestBucket, ensureS3Server, removeTestBucket } from "./s3-server.js";

interface RunJson {
  ok: boolean;
  results: Array<{
    pipeline_id: string;
    action: string;
    applied: boolean;
    deleted: string[];
    outputs: Array<{ path: string; sha256: string }>;
    error: { code: string; message: string; paths: string[] } | null;
  }>;
  error?: { code: string; message: string };
}

const kind = s3Kind();
after(async () => {
  await kind.cleanup();
  await cleanupTempDirs();
});

const visible = (files: string[]) => files.filter((file) => !file.includes(".distributor."));

/** A destination whose traffic goes through a fresh proxy, closed when the test ends. */
async function proxied(t: TestContext): Promise<{ proxy: FaultProxy; destination: Destination }> {
  const proxy = await startFaultProxy((await ensureS3Server()).endpoint);
  t.after(() => proxy.close());
  return { proxy, destination: await kind.create({ endpoint: proxy.endpoint }) };
}

/** Every planned output is stored with the digest the run reported. */
async function assertConverged(destination: Destination, expected: string[]): Promise<void> {
  assert.deepEqual(visible(await destination.listFiles()), expected);
  const state = await destination.readState();
  assert.deepEqual(
    state.outputs.map((record) => record.path),
    expected,
  );
  for (const record of state.outputs) {
    assert.equal(sha256(await destination.readFile(record.path)), record.sha256, record.path);
  }
}

const outcomes = (proxy: FaultProxy, outcome: number | "reset") =>
  proxy.requests.filter((request) => request.outcome === outcome).length;

describe("S3 under faults", { concurrency: 3 }, () => {
  it("retries connection resets and 503 SlowDown, and converges", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    proxy.resetNext(2, { method: "PUT", path: /\/alpha\// });
    proxy.slowDownNext(3, { method: "PUT" });
    proxy.slowDownNext(2, { method: "GET" });
    const result = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.equal(outcomes(proxy, "reset"), 2, "both resets happened");
    assert.equal(outcomes(proxy, 503), 5, "every SlowDown was answered");
    await assertConverged(destination, ALPHA_OUTPUTS);
    const data = await destination.readFile("alpha/data.txt");
    assert.equal(data.toString(), ALPHA_FILES["alpha/data.txt"]);
    const again = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(again.json.results[0]?.action, "skip_same");
  });

  /**
   * A driver on a fresh bucket behind a fault proxy, giving up after 300 ms of
   * silence unless `extra` says otherwise.
   */
  async function hungDriver(
    t: { after: (fn: () => unknown) => void },
    extra: Partial<S3DriverOptions> = {},
  ) {
    const server = await ensureS3Server();
    const proxy = await startFaultProxy(server.endpoint);
    t.after(() => proxy.close());
    const bucket = await createTestBucket();
    t.after(() => removeTestBucket(bucket));
    const driver = createS3Driver({
      bucket,
      prefix: "hung",
      region: server.region,
      endpoint: proxy.endpoint,
      forcePathStyle: true,
      idleTimeoutMs: 300,
      ...extra,
    });
    return { proxy, bucket, driver };
  }

  it("a server that stops answering fails the request (storage_error) instead of hanging", async (t) => {
    const { proxy, bucket, driver } = await hungDriver(t);
    proxy.delayResponses(30_000);
    const started = Date.now();
    await assert.rejects(driver.list(), (error: unknown) => {
      assert.ok(error instanceof DistributorError, String(error));
      assert.equal(error.code, "storage_error");
      assert.match(error.message, new RegExp(bucket));
      return true;
    });
    // Retries with backoff, each cut after 300 ms of silence: far below the 30 s stall.
    assert.ok(Date.now() - started < 20_000, `gave up after ${Date.now() - started} ms`);
  });

  it("a conditional write answered 409 ConditionalRequestConflict is retried, as AWS asks", async (t) => {
    const { proxy, driver } = await hungDriver(t);
    const state = new TextEncoder().encode('{"schema_version":4}\n');
    const conflict = { status: 409, code: "ConditionalRequestConflict" };
    proxy.errorNext(2, conflict, { method: "PUT", path: /\.distributor\.json$/ });
    const token = await driver.write(
      ".distributor.json",
      { type: "bytes", bytes: state },
      {
        ifMatch: null,
      },
    );
    assert.ok(token !== "", "written on the third attempt");
    assert.equal(outcomes(proxy, 409), 2);
    assert.deepEqual((await driver.read(".distributor.json"))?.bytes, state);
    // A key kept busy for good: a lost race (state_conflict, which a lock
    // turns into `locked`), not a storage failure with the wrong advice.
    proxy.errorNext(Number.POSITIVE_INFINITY, conflict, { method: "PUT" });
    const next = new TextEncoder().encode('{"schema_version":4,"next":true}\n');
    await assert.rejects(
      driver.write(".distributor.json", { type: "bytes", bytes: next }, { ifMatch: token }),
      (error: unknown) => error instanceof DistributorError && error.code === "state_conflict",
    );
  });

  it("a conditional write or lock whose response is lost is not mistaken for another writer's", async (t) => {
    const { proxy, driver } = await hungDriver(t);
    const state = new TextEncoder().encode('{"schema_version":4}\n');
    // The server creates the object, the response is lost, the retry gets 412.
    proxy.loseResponseNext(1, { method: "PUT", path: /\.distributor\.json$/ });
    const token = await driver.write(
      ".distributor.json",
      { type: "bytes", bytes: state },
      {
        ifMatch: null,
      },
    );
    assert.ok(token !== "");
    proxy.loseResponseNext(1, { method: "PUT", path: /\.distributor\.lock$/ });
    const lock = await driver.acquireLock();
    assert.equal(lock.holder.pid, process.pid);
    await lock.release();
    assert.equal(await driver.readLock(), null, "the lock was released");
    assert.ok(
      proxy.requests.filter((request) => request.outcome === "reset").length >= 2,
      "both responses were lost",
    );
    // Someone else's object is still a conflict.
    await rejectsWithCodeOf(
      driver.write(
        ".distributor.json",
        { type: "bytes", bytes: state.slice(1) },
        { ifMatch: null },
      ),
      "state_conflict",
    );
  });

  it("a conditional write answered 500 is another writer's only if the object changed", async (t) => {
    const { proxy, driver } = await hungDriver(t);
    const state = new TextEncoder().encode('{"schema_version":4}\n');
    const match = { method: "PUT", path: /\.distributor\.json$/ };
    // A server that fails every write: nothing changed, so no one else wrote.
    proxy.errorNext(Infinity, { status: 500, code: "InternalError" }, match);
    await assert.rejects(
      driver.write(".distributor.json", { type: "bytes", bytes: state }, { ifMatch: null }),
      (error: unknown) => {
        assert.ok(error instanceof DistributorError, String(error));
        assert.equal(error.code, "storage_error", error.message);
        assert.match(error.message, /500 InternalError/);
        return true;
      },
    );
    proxy.clear();
    const first = await driver.write(
      ".distributor.json",
      { type: "bytes", bytes: state },
      { ifMatch: null },
    );
    // RGW's answer to a writer that lost the race: the object is another version now.
    const theirs = await driver.write(
      ".distributor.json",
      { type: "bytes", bytes: state.slice(1) },
      { ifMatch: first },
    );
    assert.notEqual(theirs, first);
    // Every attempt answered 500 (the SDK's retry of a single one would get 412).
    proxy.errorNext(Infinity, { status: 500, code: "InternalError" }, match);
    const heads = () => proxy.requests.filter((r) => r.method === "HEAD").length;
    const headsBefore = heads();
    await rejectsWithCodeOf(
      driver.write(".distributor.json", { type: "bytes", bytes: state }, { ifMatch: first }),
      "state_conflict",
    );
    assert.ok(heads() > headsBefore, "the verdict came from a look at the object");
  });

  it("a multipart upload of changed bytes is source_invalid even when aborting it fails", async (t) => {
    const { proxy, driver } = await hungDriver(t, {
      multipartThreshold: 5 * 1024 * 1024,
      idleTimeoutMs: 60_000,
    });
    const dir = await tempDir("distributor-abort-");
    const file = path.join(dir, "big.bin");
    const verified = Buffer.alloc(12 * 1024 * 1024, 1);
    await writeFile(file, Buffer.alloc(12 * 1024 * 1024, 2));
    // AbortMultipartUpload is a DELETE with an uploadId.
    proxy.errorNext(Infinity, { status: 500, code: "InternalError" }, { method: "DELETE" });
    const content = {
      type: "file" as const,
      absPath: file,
      size: verified.byteLength,
      sha256: sha256(verified),
    };
    await rejectsWithCodeOf(
      driver.write("big.bin", content, { sha256: content.sha256 }),
      "source_invalid",
    );
    assert.ok(
      proxy.requests.some((request) => request.method === "DELETE"),
      "the abort was tried",
    );
  });

  it("a download cut in the middle is a storage_error naming the object, not an internal error", async (t) => {
    const { proxy, driver } = await hungDriver(t);
    await driver.write("big.bin", { type: "bytes", bytes: new Uint8Array(2 * 1024 * 1024) });
    proxy.cutBodyNext(1, 64 * 1024, { method: "GET" });
    const stream = (await driver.readStream("big.bin")) as AsyncIterable<Uint8Array>;
    await assert.rejects(
      (async () => {
        for await (const _chunk of stream);
      })(),
      (error: unknown) => {
        assert.ok(error instanceof DistributorError, String(error));
        assert.equal(error.code, "storage_error");
        assert.match(error.message, /big\.bin/);
        return true;
      },
    );
  });

  it("a small PUT to a server that stops answering fails (storage_error) instead of hanging", async (t) => {
    const { proxy, driver } = await hungDriver(t);
    proxy.delayResponses(30_000, { method: "PUT" });
    const started = Date.now();
    const body = { type: "bytes" as const, bytes: new TextEncoder().encode("<p>x</p>") };
    await assert.rejects(driver.write("page.html", body), (error: unknown) => {
      assert.ok(error instanceof DistributorError, String(error));
      assert.equal(error.code, "storage_error");
      assert.match(error.message, /hung\/page\.html: PutObject failed: TimeoutError/);
      return true;
    });
    assert.ok(Date.now() - started < 20_000, `gave up after ${Date.now() - started} ms`);
    // Every attempt reached the server and was cut, none answered.
    assert.ok(proxy.requests.filter((r) => r.method === "PUT").length >= 2, "it retried");
  });

  it("a run killed mid-upload reruns cleanly without --force", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    const files: Record<string, string> = {};
    for (let i = 0; i < 24; i++) files[`alpha/many/f${String(i).padStart(2, "0")}.txt`] = `${i}\n`;
    await ws.writeAlpha(files);
    proxy.delayResponses(400, { method: "PUT", path: /\/many\// });
    const child = spawnCli(["run", ...ALPHA], { cwd: ws.dir });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    const stored = () =>
      proxy.requests.filter((r) => r.path.includes("/many/") && r.outcome === 200).length;
    const deadline = Date.now() + 20_000;
    while (stored() < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    child.kill("SIGKILL");
    await exited;
    const atKill = stored();
    assert.ok(atKill >= 4 && atKill < 24, `killed mid-upload (${atKill} of 24 stored)`);
    assert.ok((await destination.listFiles()).includes(".distributor.lock"), "lock left behind");
    proxy.clear();
    const rerun = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(rerun.code, 0, `${rerun.stdout}\n${rerun.stderr}`);
    assert.match(rerun.stderr, /took over the stale lock/);
    await assertConverged(destination, Object.keys(files).sort());
    const verify = await ws.cli(["verify", ...ALPHA]);
    assert.equal(verify.code, 0, verify.stdout);
    const third = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(third.json.results[0]?.action, "skip_same");
  });

  it("a failed delete keeps its record: later pairs on the root wait for the rerun", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination, { workflowA: "replacement" });
    assert.equal((await ws.cli(["run"])).code, 0);
    const { "alpha/data.txt": _omitted, ...rest } = ALPHA_FILES;
    await ws.writeAlpha(rest);
    await ws.writeBeta({ "beta/b1.txt": "b1 changed\n", "beta/b2.txt": "b2\n" });
    // DeleteObjects is the only POST the run sends.
    proxy.errorNext(Infinity, { status: 403, code: "AccessDenied" }, { method: "POST" });
    const failed = await ws.cli<RunJson>(["run"]);
    assert.equal(failed.code, 1);
    const [alpha, beta] = failed.json.results ?? [];
    assert.equal(alpha?.error?.code, "storage_error");
    assert.deepEqual(alpha?.error?.paths, ["alpha/data.txt"]);
    assert.equal(beta?.pipeline_id, "beta");
    assert.equal(beta?.applied, false, "stopped: planned against a state without the kept record");
    const kept = await destination.readState();
    assert.ok(
      kept.outputs.some((record) => record.path === "alpha/data.txt"),
      "record kept",
    );
    proxy.clear();
    const rerun = await ws.cli<RunJson>(["run"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.deepEqual(rerun.json.results?.[0]?.deleted, ["alpha/data.txt"]);
    const state = await destination.readState();
    assert.equal(
      state.outputs.some((record) => record.path === "alpha/data.txt"),
      false,
    );
    assert.equal(
      state.outputs.find((record) => record.path === "beta/b1.txt")?.sha256,
      sha256("b1 changed\n"),
    );
  });

  it("a failed force_replace reports as deleted exactly what it deleted", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    assert.equal((await ws.cli(["run"])).code, 0);
    const force = ["run", ...ALPHA, "--force"];
    // The clear succeeds; writing one output fails: its old object was deleted all the same.
    proxy.errorNext(
      Infinity,
      { status: 403, code: "AccessDenied" },
      { method: "PUT", path: /index\.html$/ },
    );
    const writeFailed = await ws.cli<RunJson>(force);
    assert.equal(writeFailed.code, 1);
    const first = writeFailed.json.results?.[0];
    assert.equal(first?.error?.code, "storage_error");
    assert.ok(first?.deleted.includes("alpha/index.html"), JSON.stringify(first?.deleted));
    proxy.clear();
    assert.equal((await ws.cli(force)).code, 0);
    // The clear itself fails: nothing it names counts as deleted.
    proxy.errorNext(Infinity, { status: 403, code: "AccessDenied" }, { method: "POST" });
    const clearFailed = await ws.cli<RunJson>(force);
    assert.equal(clearFailed.code, 1);
    const second = clearFailed.json.results?.[0];
    assert.match(second?.error?.message ?? "", /force_replace could not clear/);
    for (const path of second?.error?.paths ?? []) {
      assert.ok(!second?.deleted.includes(path), `${path} reported deleted`);
    }
    assert.ok((second?.error?.paths.length ?? 0) > 0);
  });

  it("persistent failures are storage_errors naming the object and code, never credentials", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    const secrets = [process.env.AWS_SECRET_ACCESS_KEY, process.env.AWS_ACCESS_KEY_ID];
    assert.ok(
      secrets.every((secret) => secret && secret.length > 8),
      "credentials are set",
    );
    proxy.errorNext(Infinity, { status: 503, code: "SlowDown" }, { path: /index\.html$/ });
    const failed = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(failed.code, 1);
    const error = failed.json.results[0]?.error;
    assert.equal(error?.code, "storage_error");
    assert.ok(error?.message.includes(`${destination.root}alpha/index.html`), error?.message);
    assert.match(error?.message ?? "", /503 SlowDown/);
    proxy.clear();
    proxy.errorNext(
      Infinity,
      { status: 403, code: "AccessDenied" },
      { path: /distributor\.json$/ },
    );
    const denied = await runCli(["run", ...ALPHA], { cwd: ws.dir });
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /storage_error/);
    assert.ok(denied.stderr.includes(`${destination.root}.distributor.json`), denied.stderr);
    assert.match(denied.stderr, /403 AccessDenied/);
    for (const output of [failed.stdout, failed.stderr, denied.stdout, denied.stderr]) {
      for (const secret of secrets) assert.ok(!output.includes(secret as string), "no credential");
    }
    proxy.clear();
    const recovered = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(recovered.code, 0, "the lock was released on failure");
    await assertConverged(destination, ALPHA_OUTPUTS);
  });

  it("reconcile-state forgets a record only when its object is absent, not when a HEAD fails", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    assert.equal((await ws.cli<RunJson>(["run", ...ALPHA])).code, 0);
    const stateBefore = await destination.readStateText();
    await destination.deleteFile("alpha/two.html");
    // The listing no longer shows it; the stat that must confirm it is absent fails.
    proxy.errorNext(
      Infinity,
      { status: 403, code: "AccessDenied" },
      { method: "HEAD", path: /alpha\/two\.html$/ },
    );
    const failed = await runCli(["reconcile-state", ...ALPHA, "--json"], { cwd: ws.dir });
    assert.equal(failed.code, 1, failed.stdout);
    const report = JSON.parse(failed.stdout) as { ok: boolean; error: { code: string } };
    assert.equal(report.ok, false);
    assert.equal(report.error.code, "storage_error");
    assert.match(failed.stdout, /alpha\/two\.html/);
    assert.equal(await destination.readStateText(), stateBefore, "the record is kept");
    assert.ok(
      proxy.requests.some((r) => r.method === "HEAD" && r.outcome === 403),
      "the HEAD was refused",
    );
    proxy.clear();
    const repaired = await runCli(["reconcile-state", ...ALPHA, "--json"], { cwd: ws.dir });
    assert.equal(repaired.code, 0, repaired.stderr);
    assert.deepEqual(JSON.parse(repaired.stdout).removed, ["alpha/two.html"]);
  });

  it("a server that ignores conditional writes is detected, announced, and handled best effort", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    const normal = await ws.cli<RunJson>(["run", ...ALPHA, "--dry-run"]);
    assert.equal(normal.code, 0);
    assert.ok(!proxy.requests.some((r) => r.method === "PUT"), "a dry run never probes");
    proxy.stripConditions(true);
    const result = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /does not honour conditional writes.*best effort/);
    await assertConverged(destination, ALPHA_OUTPUTS);
    assert.ok(
      !(await destination.listFiles()).some((file) => file.startsWith(".distributor.probe-")),
      "the probe object is removed",
    );
    // The emulated If-None-Match still keeps a second writer out.
    const holder = {
      hostname: os.hostname(),
      pid: process.pid,
      started_at: "2026-06-04T12:00:00Z",
    };
    await destination.writeFile(".distributor.lock", JSON.stringify(holder));
    const locked = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(locked.json.error?.code, "locked", locked.stdout);
    await destination.deleteFile(".distributor.lock");
    proxy.stripConditions(false);
    const honoured = await ws.cli<RunJson>(["run", ...ALPHA]);
    assert.equal(honoured.code, 0);
    assert.doesNotMatch(honoured.stderr, /conditional writes/);
  });

  it("verify reads the digest metadata and downloads only objects without it", async (t) => {
    const { proxy, destination } = await proxied(t);
    const ws = await workspace(destination);
    assert.equal((await ws.cli(["run", ...ALPHA])).code, 0);
    const outputGets = () =>
      proxy.requests
        .filter((r) => r.method === "GET" && /\/alpha\/[^/]+$/.test(r.path))
        .map((r) => path.posix.basename(r.path));
    const before = proxy.requests.length;
    const clean = await ws.cli(["verify", ...ALPHA]);
    assert.equal(clean.code, 0, clean.stdout);
    assert.deepEqual(outputGets(), [], "no output was downloaded");
    const heads = proxy.requests
      .slice(before)
      .filter((r) => r.method === "HEAD" && r.path.includes("/alpha/"));
    assert.equal(heads.length, ALPHA_OUTPUTS.length, "one HeadObject per output");
    // Rewritten by another tool, same size, no sha256 metadata: hashed, and caught.
    await destination.writeFile(
      "alpha/data.txt",
      ALPHA_FILES["alpha/data.txt"]?.toUpperCase() ?? "",
    );
    const drifted = await ws.cli<{ modified: string[] }>(["verify", ...ALPHA]);
    assert.equal(drifted.code, 1);
    assert.deepEqual(drifted.json.modified, ["alpha/data.txt"]);
    assert.deepEqual(outputGets(), ["data.txt"]);
  });
});

async function rejectsWithCodeOf(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof DistributorError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  });
}
