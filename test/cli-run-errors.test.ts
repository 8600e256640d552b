/**
 * `distributor run` as a process: every error code a filesystem destination can
 * reach, with its exit code, its one JSON document, and proof that nothing was
 * written. No error may print a stack trace.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, describe, test } from "node:test";
import { MACHINE_ID } from "../src/storage/_lock-file.js";
import {
  CLI,
  cleanupTempDirs,
  listFiles,
  runCli,
  runCliJson,
  writeBundle,
} from "./helpers/fixtures.js";
import {
  deadPid,
  exists,
  hasStackTrace,
  lockText,
  onlyResult,
  publishedFiles,
  type RunJson,
  SITE_FILES,
  SITE_OUTPUTS,
  scenario,
} from "./helpers/scenario.js";

after(cleanupTempDirs);

/** An error that happens before planning: exactly `{ok:false, error:{code,message,paths}}`. */
function assertErrorOnly(json: RunJson, code: string): void {
  assert.deepEqual(Object.keys(json), ["ok", "error"], JSON.stringify(json));
  assert.equal(json.ok, false);
  assert.equal(json.error?.code, code, JSON.stringify(json));
  assert.deepEqual(Object.keys(json.error ?? {}).sort(), ["code", "message", "paths"]);
  assert.ok((json.error?.message.length ?? 0) > 10, "a message that says what is wrong");
}

describe("config_invalid", () => {
  test("an unknown key: exit 2, one JSON document naming the key path", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: {
        web: { root: path.join(base, "public"), workflw: "additive" } as never,
      },
    }));
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 2);
    assertErrorOnly(json, "config_invalid");
    assert.match(json.error?.message ?? "", /destinations\.web\.workflw/);
    assert.equal(hasStackTrace(stderr), false, stderr);
    const human = await s.run();
    assert.equal(human.code, 2);
    assert.match(human.stderr, /config_invalid/);
    assert.equal(hasStackTrace(human.stderr), false, human.stderr);
    assert.equal(await exists(s.root), false);
  });

  test("a destination that cannot be opened, with two pipelines: exit 2 after the sources verify, no crash", async () => {
    // Drivers are opened while the sources verify (for the early state
    // read); the error still comes out once, as the run's result. S3 keys
    // longer than 1024 bytes fail only when the driver is opened; nothing is
    // sent to the endpoint. (test/run-library.test.ts covers the promises.)
    const s = await scenario();
    const source = path.join(s.base, "bundle");
    await writeFile(
      s.config,
      JSON.stringify({
        pipelines: {
          one: { source, destinations: ["bucket"] },
          two: { source, destinations: ["bucket"] },
        },
        destinations: {
          bucket: {
            storage: {
              type: "s3",
              bucket: "b",
              prefix: "p".repeat(1020),
              endpoint: "http://127.0.0.1:9",
              force_path_style: true,
            },
            path: "site",
          },
        },
      }),
    );
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 2, stderr);
    assertErrorOnly(json, "config_invalid");
    assert.equal(hasStackTrace(stderr), false, stderr);
  });

  test("a missing config file is config_invalid (exit 2)", async () => {
    const s = await scenario();
    const { code, json } = await runCliJson<RunJson>([
      "run",
      "--config",
      path.join(s.base, "nope.yaml"),
    ]);
    assert.equal(code, 2);
    assertErrorOnly(json, "config_invalid");
  });
});

describe("usage", () => {
  test("an unknown flag: exit 2, usage", async () => {
    const s = await scenario();
    const { code, json, stderr } = await s.runJson(["--bogus"]);
    assert.equal(code, 2);
    assertErrorOnly(json, "usage");
    assert.match(json.error?.message ?? "", /--bogus/);
    assert.equal(hasStackTrace(stderr), false);
  });

  test("a mistyped flag or command: commander's suggestion on the error's one line", async () => {
    for (const [args, said] of [
      [
        ["run", "--jsn"],
        "unknown option '--jsn' (Did you mean --json?). See 'distributor --help'.",
      ],
      [["statsu"], "unknown command 'statsu' (Did you mean status?). See 'distributor --help'."],
    ] as const) {
      const human = await runCli(args);
      assert.equal(human.code, 2, args.join(" "));
      assert.equal(human.stderr, `error [usage] ${said}\n`);
      const { json } = await runCliJson<RunJson>(args);
      assert.equal(json.error?.message, said);
    }
  });

  test("no command after --, or help for an unknown command: exit 2, usage, one JSON document", async () => {
    for (const [args, said] of [
      [["--"], "no command."],
      [["help", "nosuch"], 'no command named "nosuch".'],
    ] as const) {
      const human = await runCli(args);
      assert.equal(human.code, 2, args.join(" "));
      assert.match(human.stderr, /usage/);
      assert.ok(human.stderr.includes(said), human.stderr);
      // --json before the words: after "--" it would be an argument.
      const { code, stdout } = await runCli(["--json", ...args]);
      const json = JSON.parse(stdout) as { ok: boolean; error?: { code: string } };
      assert.equal(code, 2, args.join(" "));
      assert.equal(json.ok, false);
      assert.equal(json.error?.code, "usage");
    }
    assert.equal((await runCli(["help", "run"])).code, 0, "help for a real command");
  });

  test("an unknown --pipeline: exit 2, usage naming it", async () => {
    const s = await scenario();
    const { code, json } = await s.runJson(["--pipeline", "nope"]);
    assert.equal(code, 2);
    assertErrorOnly(json, "usage");
    assert.match(json.error?.message ?? "", /nope/);
    assert.equal(await exists(s.root), false);
  });
});

describe("a source bundle and a destination root that overlap: usage, nothing read or written", () => {
  /** Every file under `dir` with its bytes: what a refused run must leave as it was. */
  async function snapshot(dir: string): Promise<Record<string, string>> {
    const files: Record<string, string> = {};
    for (const file of await listFiles(dir))
      files[file] = await readFile(path.join(dir, file), "utf8");
    return files;
  }

  /** run (also --force and --dry-run) and validate all refuse it, and the bundle stays as it was. */
  async function assertRefused(
    s: Awaited<ReturnType<typeof scenario>>,
    said: RegExp,
    runArgs: readonly string[] = [],
    bundle = path.join(s.base, "bundle"),
  ): Promise<void> {
    const before = await snapshot(bundle);
    for (const args of [
      [...runArgs],
      [...runArgs, "--dry-run"],
      [...runArgs, "--force", "--pipeline", "site", "--destination", "web"],
    ]) {
      const { code, json, stderr } = await s.runJson(args);
      assert.equal(code, 2, args.join(" "));
      assertErrorOnly(json, "usage");
      assert.match(json.error?.message ?? "", said);
      assert.equal(hasStackTrace(stderr), false, stderr);
    }
    const human = await s.run(runArgs);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /usage/);
    const validated = await runCliJson<RunJson>(["validate", "--config", s.config, ...runArgs]);
    assert.equal(validated.code, 2);
    assertErrorOnly(validated.json, "usage");
    assert.deepEqual(await snapshot(bundle), before, "the bundle is never modified");
  }

  test("the root is the bundle", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "bundle") } },
    }));
    await assertRefused(s, /is the pipeline's source bundle/);
  });

  test("the root is inside the bundle, spelt through a symlink to it", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "alias"), path: "out/site" } },
    }));
    await symlink(path.join(s.base, "bundle"), path.join(s.base, "alias"));
    await assertRefused(s, /is inside the pipeline's source bundle/);
    assert.equal(await exists(path.join(s.base, "bundle/out")), false);
  });

  test("the bundle is inside the root, from the config or from --source", async () => {
    const inRoot = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "public/incoming"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "public") } },
    }));
    await writeBundle(path.join(inRoot.base, "public/incoming"), SITE_FILES, { id: "site.v1" });
    const before = await snapshot(inRoot.root);
    for (const args of [[], ["--force", "--pipeline", "site", "--destination", "web"]]) {
      const { code, json } = await inRoot.runJson(args);
      assert.equal(code, 2, args.join(" "));
      assertErrorOnly(json, "usage");
      assert.match(json.error?.message ?? "", /is inside the destination root/);
    }
    assert.deepEqual(await snapshot(inRoot.root), before, "--force deleted nothing");

    // --source spells the root through a symlink to it.
    const s = await scenario();
    const drop = path.join(s.root, "drop");
    await writeBundle(drop, SITE_FILES, { id: "site.v1" });
    await symlink(s.root, path.join(s.base, "alias"));
    const spelt = path.join(s.base, "alias", "drop");
    await assertRefused(s, /is inside the destination root/, ["--source", spelt], drop);
  });

  test("folders that only share the start of a name are apart", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "bundle-site") } },
    }));
    const { code, json } = await s.runJson();
    assert.equal(code, 0, JSON.stringify(json));
    assert.deepEqual(await publishedFiles(path.join(s.base, "bundle-site")), SITE_OUTPUTS);
  });
});

describe("source_invalid", () => {
  test("hash mismatch, missing file and symlink are all named; nothing is written", async () => {
    const s = await scenario();
    const bundle = path.join(s.base, "bad");
    await writeBundle(bundle, { ...SITE_FILES, "gone.txt": "soon gone\n", "link.txt": "real\n" });
    await writeFile(path.join(bundle, "data/a.txt"), "tampered\n");
    await rename(path.join(bundle, "gone.txt"), path.join(s.base, "gone.txt"));
    await rename(path.join(bundle, "link.txt"), path.join(s.base, "link-target.txt"));
    await symlink(path.join(s.base, "link-target.txt"), path.join(bundle, "link.txt"));
    const manifestBefore = await readFile(path.join(bundle, "manifest.json"));
    const { code, json, stderr } = await s.runJson(["--source", bundle]);
    assert.equal(code, 1);
    assertErrorOnly(json, "source_invalid");
    assert.deepEqual([...(json.error?.paths ?? [])].sort(), ["data/a.txt", "gone.txt", "link.txt"]);
    assert.equal(hasStackTrace(stderr), false);
    assert.deepEqual(await listFiles(s.root), []);
    assert.deepEqual(await readFile(path.join(bundle, "manifest.json")), manifestBefore);
    const human = await s.run(["--source", bundle]);
    assert.equal(human.code, 1);
    for (const bad of ["data/a.txt", "gone.txt", "link.txt"])
      assert.match(human.stderr, new RegExp(bad));
  });
});

describe("output_collision", () => {
  test("page.md and page.html both planning page.html: exit 1, nothing written", async () => {
    const s = await scenario();
    const bundle = await s.bundle("collide", { "page.md": "# Page\n", "page.html": "<p>x</p>\n" });
    const { code, json } = await s.runJson(["--source", bundle]);
    assert.equal(code, 1);
    assertErrorOnly(json, "output_collision");
    assert.ok(json.error?.paths.includes("page.html"), JSON.stringify(json.error));
    assert.ok(
      json.error?.message.startsWith(`Pipeline "site" (bundle ${bundle}): Several planned outputs`),
      json.error?.message,
    );
    // The human form keeps the list's lines, the first naming the pipeline.
    const human = await s.run(["--source", bundle]);
    assert.match(
      human.stderr,
      /^error \[output_collision\] Pipeline "site" \(bundle .*\): Several planned outputs .*\n {2}- page\.html: /m,
    );
    assert.deepEqual(await listFiles(s.root), []);
  });

  test("x.md rendered to x.html next to x.html/y.txt: exit 1 before anything is written", async () => {
    const s = await scenario();
    const bundle = await s.bundle("folder", { "x.md": "# X\n", "x.html/y.txt": "y\n" });
    const { code, json } = await s.runJson(["--source", bundle]);
    assert.equal(code, 1);
    assertErrorOnly(json, "output_collision");
    assert.deepEqual(json.error?.paths, ["x.html"]);
    assert.deepEqual(await listFiles(s.root), []);
  });
});

describe("transform_failed", () => {
  test("Markdown that is not UTF-8: exit 1, transform_failed naming the file", async () => {
    const s = await scenario();
    const bundle = await s.bundle("latin1", {
      "ok.md": "# fine\n",
      "bad.md": Uint8Array.from([0x23, 0x20, 0xff, 0xfe, 0x41, 0x0a]),
    });
    const { code, json, stderr } = await s.runJson(["--source", bundle]);
    assert.equal(code, 1);
    assertErrorOnly(json, "transform_failed");
    assert.ok(json.error?.paths.includes("bad.md"), JSON.stringify(json.error));
    assert.equal(hasStackTrace(stderr), false);
    assert.deepEqual(await listFiles(s.root), []);
  });
});

describe("unsafe_path", () => {
  test("a symlinked directory on a planned path's parent: nothing written through it", async () => {
    const s = await scenario();
    assert.equal((await s.runJson()).code, 0);
    const target = path.join(s.base, "outside");
    await mkdir(target);
    await writeFile(path.join(target, "sentinel.txt"), "do not touch\n");
    await rename(path.join(s.root, "docs"), path.join(s.base, "docs-moved"));
    await symlink(target, path.join(s.root, "docs"));
    const v2 = await s.bundle("v2", { ...SITE_FILES, "docs/guide.md": "# Guide\n\nv2\n" });
    const { code, json, stderr } = await s.runJson(["--source", v2]);
    assert.equal(code, 1, JSON.stringify(json));
    assert.equal(json.ok, false);
    const codes = [json.error?.code, ...(json.results ?? []).map((r) => r.error?.code)];
    assert.ok(codes.includes("unsafe_path"), JSON.stringify(json));
    assert.equal(hasStackTrace(stderr), false);
    assert.deepEqual(await listFiles(target), ["sentinel.txt"]);
    assert.equal(await readFile(path.join(target, "sentinel.txt"), "utf8"), "do not touch\n");
  });
});

describe("locked", () => {
  test("a lock held by a live process: exit 1 naming the holder; the lock stays", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    const lock = lockText(process.pid, "2026-02-03T04:05:06Z");
    await writeFile(path.join(s.root, ".distributor.lock"), lock);
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 1);
    const error = json.error ?? json.results?.[0]?.error;
    assert.equal(error?.code, "locked", JSON.stringify(json));
    assert.match(error?.message ?? "", new RegExp(`pid ${process.pid}`));
    assert.match(error?.message ?? "", /2026-02-03T04:05:06Z/);
    assert.equal(hasStackTrace(stderr), false);
    assert.equal(await readFile(path.join(s.root, ".distributor.lock"), "utf8"), lock);
    assert.deepEqual(await listFiles(s.root), [".distributor.lock"]);
    const human = await s.run();
    assert.equal(human.code, 1);
    assert.match(human.stderr + human.stdout, /locked/);
  });

  test("what a planted lock or state says reaches the terminal as escapes, never as controls", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    // Anyone who can write to the root can plant these: raw, the CR and the
    // escape sequences would erase the line and print a fake verdict.
    const fake = "ci-01\u001b[2K\rweb: skip_same (nothing to do)\u001b[8m";
    const lock = JSON.stringify({
      hostname: fake,
      pid: process.pid,
      started_at: "2026-01-01T00:00:00Z",
    });
    await writeFile(path.join(s.root, ".distributor.lock"), lock);
    // V8's JSON.parse error quotes the start of the bytes.
    await writeFile(path.join(s.root, ".distributor.json"), "X\u001b[2K\rall outputs match");
    const status = await runCli(["status", "--config", s.config]);
    const run = await s.run();
    assert.equal(run.code, 1);
    const verify = await runCli(["verify", "--config", s.config]);
    assert.equal(verify.code, 1);
    for (const [name, text, shown] of [
      ["status", status.stdout, "ci-01\\x1b[2K\\x0dweb: skip_same"],
      ["run", run.stderr + run.stdout, "ci-01\\x1b[2K\\x0dweb: skip_same"],
      ["verify", verify.stderr + verify.stdout, "X\\x1b[2K\\x0dall"],
    ] as const) {
      assert.ok(
        !text.includes("\u001b") && !text.includes("\r"),
        `${name}: ${JSON.stringify(text)}`,
      );
      assert.ok(text.includes(shown), `${name}: ${text}`);
    }
    // --json keeps the holder's name as it is, escaped the JSON way.
    const { json } = await s.runJson();
    const error = json.error ?? json.results?.[0]?.error;
    assert.ok(error?.message.includes(fake), JSON.stringify(json));
  });

  test("a newline in what a planted lock or state says never starts a line of its own in status", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    const forged = "site → web: state valid, 0 owned outputs, unlocked";
    const lock = JSON.stringify({
      hostname: `ci-01\n${forged}`,
      pid: process.pid,
      started_at: "2026-01-01T00:00:00Z",
    });
    await writeFile(path.join(s.root, ".distributor.lock"), lock);
    await writeFile(path.join(s.root, ".distributor.json"), `X\n${forged}`);
    const status = await runCli(["status", "--config", s.config]);
    const lines = status.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2, status.stdout);
    assert.match(lines[0] ?? "", /^site → web: state invalid .*locked by ci-01\\x0asite → web/);
    assert.match(lines[1] ?? "", /^ {2}root /);
  });

  test("a newline in a stale lock or in the root never starts a line of its own in run, verify or prune", async () => {
    const fake = "  + index.html (new)";
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: {
        web: { root: path.join(base, `public\n${fake}`), retention: { prune: { max_age: "1d" } } },
      },
    }));
    const root = path.join(s.base, `public\n${fake}`);
    await mkdir(root, { recursive: true });
    // A stale lock of this host: taken over with a warning that quotes it.
    const pid = await deadPid();
    const stale = JSON.parse(lockText(pid)) as Record<string, unknown>;
    const lock = { ...stale, started_at: "2026-01-01T00:00:00Z\nFAKE: all good" };
    if (MACHINE_ID !== null) Object.assign(lock, { machine_id: MACHINE_ID });
    await writeFile(path.join(root, ".distributor.lock"), JSON.stringify(lock));
    const run = await s.run();
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const warning = run.stderr.split("\n").filter((line) => line !== "");
    assert.equal(warning.length, 1, run.stderr);
    assert.match(warning[0] ?? "", /^warning: took over the stale lock .*\\x0aFAKE: all good/);
    const forged = (text: string) => text.split("\n").some((line) => line.startsWith(fake));
    assert.ok(!forged(run.stdout), run.stdout);
    assert.match(run.stdout, /root .*public\\x0a {2}\+ index\.html \(new\)/);
    for (const command of ["verify", "prune"]) {
      const result = await runCli([command, "--config", s.config]);
      assert.ok(!forged(result.stdout), `${command}: ${result.stdout}`);
      assert.match(result.stdout, /public\\x0a/, command);
    }
  });

  test("a lock of another machine that shares our hostname is never taken over", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    const pid = await deadPid();
    // Dead here, but this pid may be alive on the machine that wrote it.
    const lock = `${JSON.stringify({ ...JSON.parse(lockText(pid)), machine_id: "0".repeat(32) })}\n`;
    await writeFile(path.join(s.root, ".distributor.lock"), lock);
    const { code, json } = await s.runJson();
    if (MACHINE_ID === null) {
      // Without a machine id here, the hostname decides, as for older locks.
      assert.equal(code, 0, JSON.stringify(json));
      return;
    }
    assert.equal(code, 1, JSON.stringify(json));
    assert.equal((json.error ?? json.results?.[0]?.error)?.code, "locked", JSON.stringify(json));
    assert.equal(await readFile(path.join(s.root, ".distributor.lock"), "utf8"), lock);
  });

  test("a lock of a dead process on this host is taken over with a warning", async () => {
    const s = await scenario();
    await mkdir(s.root, { recursive: true });
    const pid = await deadPid();
    await writeFile(path.join(s.root, ".distributor.lock"), lockText(pid));
    const { code, json, stderr } = await s.runJson();
    assert.equal(code, 0, JSON.stringify(json));
    assert.equal(onlyResult(json).action, "publish_new");
    assert.match(stderr, /warning/i);
    assert.match(stderr, new RegExp(`pid ${pid}`));
    assert.equal(await exists(path.join(s.root, ".distributor.lock")), false);
    assert.deepEqual(await publishedFiles(s.root), SITE_OUTPUTS);
  });
});

/** `run --dry-run` and `run` both fail with storage_error, exit 1, a message holding `text`, no stack. */
async function assertStorageErrorSaying(
  s: Awaited<ReturnType<typeof scenario>>,
  text: string,
): Promise<void> {
  for (const args of [["--dry-run"], []]) {
    const { code, json, stderr } = await s.runJson(args);
    assert.equal(code, 1, `run ${args.join(" ")}`);
    assertErrorOnly(json, "storage_error");
    assert.ok(json.error?.message.includes(text), json.error?.message);
    assert.equal(hasStackTrace(stderr), false, stderr);
  }
}

describe("storage_error", () => {
  test("a run that fails halfway, then the previous bundle again: every file it overwrote is restored, none skipped", async () => {
    // Each text has one size in both versions: only the digest tells them apart.
    const texts = (version: number) =>
      Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [
          `a-${String(i).padStart(2, "0")}.txt`,
          `v${version} ${i}\n`,
        ]),
      );
    const s = await scenario();
    const v1 = await s.bundle("v1", { ...texts(1), "big.bin": "small\n" }, "site.v1");
    const v2 = await s.bundle(
      "v2",
      { ...texts(2), "big.bin": new Uint8Array(3_000_000).fill(7) },
      "site.v2",
    );
    assert.equal((await s.runJson(["--source", v1])).code, 0);
    // A file size limit (ulimit -f, in blocks of 512 or 1024 bytes) fails
    // the write of big.bin with EFBIG, after the small files are written.
    const failed = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const args = [CLI, "run", "--config", s.config, "--source", v2, "--json"];
      const child = spawn(
        "sh",
        ["-c", 'ulimit -f 1000 && exec "$0" "$@"', process.execPath, ...args],
        {
          env: { ...process.env, NO_COLOR: "1" },
          stdio: ["ignore", "pipe", "ignore"],
        },
      );
      let stdout = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
      });
      child.on("close", (code) => resolve({ code, stdout }));
    });
    assert.equal(failed.code, 1, failed.stdout);
    const failedPair = onlyResult(JSON.parse(failed.stdout) as RunJson);
    assert.equal(failedPair.error?.code, "storage_error", failed.stdout);
    assert.deepEqual(failedPair.error?.paths, ["big.bin"]);
    const names = Object.keys(texts(1));
    const contents = async () =>
      Promise.all(names.map((name) => readFile(path.join(s.root, name), "utf8")));
    // The test means something only if the failed run overwrote files first.
    assert.ok(
      (await contents()).some((text) => text.startsWith("v2 ")),
      "some v2 file was written",
    );
    const back = await s.runJson(["--source", v1]);
    assert.equal(back.code, 0, JSON.stringify(back.json));
    assert.notEqual(onlyResult(back.json).action, "skip_same");
    assert.deepEqual(await contents(), Object.values(texts(1)));
    const verify = await runCli(["verify", "--config", s.config]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });

  test("a rendered page whose name is too long for a folder: refused before anything is written, dry run too", async () => {
    // 252 + ".md" is a name the bundle's own folder holds; + ".html" is 257 bytes.
    const long = `${"s".repeat(252)}.md`;
    const s = await scenario();
    await writeBundle(path.join(s.base, "bundle"), { ...SITE_FILES, [`docs/${long}`]: "# Hi\n" });
    for (const args of [[], ["--dry-run"]]) {
      const { code, json, stderr } = await s.runJson(args);
      assert.equal(code, 1, args.join(" "));
      assertErrorOnly(json, "storage_error");
      assert.match(
        json.error?.message ?? "",
        /is 257 bytes, and a folder holds names of at most 255/,
      );
      assert.deepEqual(json.error?.paths, [`docs/${"s".repeat(252)}.html`]);
      assert.equal(hasStackTrace(stderr), false, stderr);
    }
    assert.equal(await exists(s.root), false, "nothing written, not even the root");
    // One byte shorter fits, and publishes.
    await rm(path.join(s.base, "bundle"), { recursive: true });
    await writeBundle(path.join(s.base, "bundle"), {
      ...SITE_FILES,
      [`docs/${"s".repeat(250)}.md`]: "# Hi\n",
    });
    const fits = await s.runJson();
    assert.equal(fits.code, 0, JSON.stringify(fits.json));
    assert.equal(await exists(path.join(s.root, `docs/${"s".repeat(250)}.html`)), true);
  });

  test("a destination root that is a regular file: exit 1, storage_error naming it, no stack", async () => {
    const s = await scenario();
    await writeFile(s.root, "not a directory\n");
    await assertStorageErrorSaying(
      s,
      `the destination root ${s.root} is a file (or something else that is not a folder). Point the destination's storage root at a folder, or move ${s.root} out of the way.`,
    );
    assert.equal(await readFile(s.root, "utf8"), "not a directory\n");
  });

  test("verify and reconcile-state on a root that is a regular file: storage_error, not no_state", async () => {
    const s = await scenario();
    await writeFile(s.root, "not a directory\n");
    for (const command of [["verify"], ["reconcile-state"]]) {
      const { code, json, stderr } = await runCliJson<RunJson>([...command, "--config", s.config]);
      assert.equal(code, 1, `${command[0]}: ${stderr}`);
      assert.equal(json.error?.code, "storage_error", `${command[0]}: ${JSON.stringify(json)}`);
      assert.ok(
        json.error?.message.includes(`the destination root ${s.root} is a file`),
        JSON.stringify(json),
      );
    }
    assert.equal(await readFile(s.root, "utf8"), "not a directory\n");
  });

  test("a destination root below a regular file: the message names the file in the way", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web"] } },
      destinations: { web: { root: path.join(base, "a-file", "public") } },
    }));
    const inTheWay = path.join(s.base, "a-file");
    await writeFile(inTheWay, "not a directory\n");
    await assertStorageErrorSaying(
      s,
      `${inTheWay}, on the way to the destination root ${path.join(inTheWay, "public")}, is a file (or something else that is not a folder). Point the destination's storage root at a folder, or move ${inTheWay} out of the way.`,
    );
    assert.equal(await readFile(inTheWay, "utf8"), "not a directory\n");
  });

  test("status with one root that is a regular file: that pair's row has the error, the others are shown", async () => {
    const s = await scenario((base) => ({
      pipelines: { site: { source: path.join(base, "bundle"), destinations: ["web", "broken"] } },
      destinations: {
        web: { root: path.join(base, "public") },
        broken: { root: path.join(base, "broken") },
      },
    }));
    await writeFile(path.join(s.base, "broken"), "not a directory\n");
    const published = await s.runJson(["--destination", "web"]);
    assert.equal(published.code, 0, published.stdout);
    const json = await runCliJson<StatusJson>(["status", "--config", s.config]);
    assert.equal(json.code, 1, "a root that cannot be read is a storage error");
    assert.equal(json.json.ok, false);
    const [web, broken] = json.json.pairs;
    assert.deepEqual(
      [web?.destination_id, web?.state, web?.outputs, web?.error],
      ["web", "valid", SITE_OUTPUTS.length, null],
    );
    assert.deepEqual([broken?.destination_id, broken?.state], ["broken", null]);
    assert.equal(broken?.error?.code, "storage_error");
    assert.match(broken?.error?.message ?? "", /the destination root .*broken is a file/);
    const human = await runCli(["status", "--config", s.config]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /site → web: state valid, 4 owned outputs/);
    assert.match(human.stdout, /site → broken: error \[storage_error\]/);
    assert.equal(hasStackTrace(human.stderr), false, human.stderr);
  });
});

interface StatusJson {
  ok: boolean;
  pairs: {
    destination_id: string;
    state: string | null;
    outputs: number;
    error: { code: string; message: string } | null;
  }[];
}
