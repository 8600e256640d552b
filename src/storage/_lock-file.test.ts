import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import os from "node:os";
import { describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { deadPid } from "./_lock.fixtures.js";
import {
  currentLockHolder,
  formatUtcSeconds,
  isProcessAlive,
  isSameHolder,
  isStaleLock,
  isStaleLockHolder,
  MACHINE_ID,
  parseLockFile,
  parseLockHolder,
  serializeLockHolder,
} from "./_lock-file.js";

describe("lock file format", () => {
  it("formats timestamps as UTC seconds with Z", () => {
    assert.equal(
      formatUtcSeconds(new Date(Date.UTC(2026, 5, 4, 12, 3, 9, 987))),
      "2026-06-04T12:03:09Z",
    );
  });

  it("the current holder is this host and process", () => {
    const holder = currentLockHolder(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)));
    assert.deepEqual(holder, {
      hostname: os.hostname(),
      pid: process.pid,
      started_at: "2026-01-02T03:04:05Z",
    });
  });

  it("serializes to indented JSON with a trailing newline that parses back", () => {
    const holder = { hostname: "h", pid: 12, started_at: "2026-01-02T03:04:05Z" };
    const text = serializeLockHolder({ ...holder, extra: 1 } as typeof holder);
    const machine = MACHINE_ID === null ? "" : `,\n  "machine_id": "${MACHINE_ID}"`;
    assert.equal(
      text,
      `{\n  "hostname": "h",\n  "pid": 12,\n  "started_at": "2026-01-02T03:04:05Z"${machine}\n}\n`,
    );
    assert.deepEqual(parseLockHolder(text), holder);
  });

  it("round-trips the acquisition id, which plain holder parsing ignores", () => {
    const holder = { hostname: "h", pid: 12, started_at: "2026-01-02T03:04:05Z" };
    const text = serializeLockHolder(holder, "abc123");
    const machineId = MACHINE_ID;
    assert.deepEqual(parseLockFile(text), { holder, lockId: "abc123", machineId });
    assert.deepEqual(parseLockHolder(text), holder);
    assert.deepEqual(parseLockFile(serializeLockHolder(holder)), {
      holder,
      lockId: null,
      machineId,
    });
    assert.equal(parseLockFile("{}"), null);
  });

  it("parses a holder with unknown extra fields", () => {
    const parsed = parseLockHolder('{"hostname":"h","pid":3,"started_at":"x","note":"hi"}');
    assert.deepEqual(parsed, { hostname: "h", pid: 3, started_at: "x" });
  });

  it("returns null for anything that is not a readable holder", () => {
    const bad = [
      "",
      "not json",
      "[]",
      "null",
      '"text"',
      '{"pid":3,"started_at":"x"}',
      '{"hostname":"","pid":3,"started_at":"x"}',
      '{"hostname":"h","pid":"3","started_at":"x"}',
      '{"hostname":"h","pid":0,"started_at":"x"}',
      '{"hostname":"h","pid":-1,"started_at":"x"}',
      '{"hostname":"h","pid":1.5,"started_at":"x"}',
      '{"hostname":"h","pid":3}',
    ];
    for (const text of bad) assert.equal(parseLockHolder(text), null, text);
  });

  it("compares holders by host, pid and start time", () => {
    const a = { hostname: "h", pid: 1, started_at: "t" };
    assert.ok(isSameHolder(a, { ...a }));
    assert.ok(!isSameHolder(a, { ...a, pid: 2 }));
    assert.ok(!isSameHolder(a, { ...a, started_at: "u" }));
    assert.ok(!isSameHolder(a, { ...a, hostname: "g" }));
  });
});

describe("stale lock detection", () => {
  it("knows live and dead processes and never probes process groups", () => {
    assert.equal(isProcessAlive(process.pid), true);
    assert.equal(isProcessAlive(process.ppid), true);
    assert.equal(isProcessAlive(deadPid()), false);
    assert.equal(isProcessAlive(0), false);
    assert.equal(isProcessAlive(-1), false);
  });

  it("a zombie, exited but not yet reaped by its parent, is not alive", {
    skip: process.platform !== "linux" ? "zombies are read from /proc" : false,
  }, async () => {
    // The shell starts `sleep 0.05` and then becomes `sleep 5`, which never
    // reaps it: once it exits it stays a zombie until its parent ends.
    const parent = spawn("sh", ["-c", "sleep 0.05 & echo $!; exec sleep 5"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    try {
      const [line] = (await once(parent.stdout, "data")) as [Buffer];
      const pid = Number(line.toString().trim());
      assert.equal(isProcessAlive(pid), true, "running");
      const deadline = Date.now() + 5000;
      while (isProcessAlive(pid) && Date.now() < deadline) await delay(20);
      assert.match(
        readFileSync(`/proc/${pid}/stat`, "latin1"),
        /\) Z /,
        "a zombie, still signalable",
      );
      assert.equal(isProcessAlive(pid), false);
    } finally {
      parent.kill("SIGKILL");
    }
  });

  it("a holder is stale only when it is a dead process on this host", () => {
    const dead = { hostname: os.hostname(), pid: deadPid(), started_at: "t" };
    assert.equal(isStaleLockHolder(dead), true);
    assert.equal(isStaleLockHolder({ ...dead, hostname: "elsewhere" }), false);
    assert.equal(isStaleLockHolder({ ...dead, pid: process.ppid }), false);
  });

  it("a dead pid under our hostname but another machine's id is not stale: that machine's process table decides", () => {
    const dead = { hostname: os.hostname(), pid: deadPid(), started_at: "t" };
    const here = "a".repeat(32);
    const there = "b".repeat(32);
    assert.equal(isStaleLockHolder(dead, os.hostname(), { holder: there, ours: here }), false);
    assert.equal(isStaleLockHolder(dead, os.hostname(), { holder: here, ours: here }), true);
    // Without an id on either side, the hostname decides, as before.
    assert.equal(isStaleLockHolder(dead, os.hostname(), { holder: null, ours: here }), true);
    assert.equal(isStaleLockHolder(dead, os.hostname(), { holder: there, ours: null }), true);
  });

  it("reads the machine id out of the lock file's text", () => {
    const dead = { hostname: os.hostname(), pid: deadPid(), started_at: "t" };
    const text = (machineId?: string) =>
      JSON.stringify(machineId === undefined ? dead : { ...dead, machine_id: machineId });
    const stale = (lockText: string) => {
      const lock = parseLockFile(lockText);
      assert.ok(lock !== null, lockText);
      return isStaleLock(lock);
    };
    assert.equal(stale(text()), true, "an older lock: by name");
    if (MACHINE_ID !== null) {
      assert.equal(stale(text(MACHINE_ID)), true);
      assert.equal(stale(text("0".repeat(32))), false, "a twin machine's lock");
    } else {
      assert.equal(stale(text("0".repeat(32))), true, "no id here: by name");
    }
  });

  it("a lock with our own host and pid is never stale: it may be a twin container's", () => {
    const mine = { hostname: os.hostname(), pid: process.pid };
    for (const started of [new Date(performance.timeOrigin - 60_000), new Date()]) {
      assert.equal(isStaleLockHolder({ ...mine, started_at: formatUtcSeconds(started) }), false);
    }
  });
});
