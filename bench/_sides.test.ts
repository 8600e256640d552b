import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { distributorRun, REPO_ROOT } from "./_kit.js";
import { describeSide, sideCommand, sideOf } from "./_sides.js";

test("a side defaults to this checkout, this Node.js and no flags", () => {
  assert.deepEqual(sideOf({}, "a"), { build: REPO_ROOT, node: process.execPath, flags: [] });
});

test("a side's build, Node.js and space-separated flags come from its own options", () => {
  const values = {
    "a-build": "/elsewhere/checkout",
    "b-build": "/other",
    "b-node": "/opt/node22/bin/node",
    "b-flags": "  --max-semi-space-size=64   --no-opt ",
  };
  assert.deepEqual(sideOf(values, "b"), {
    build: "/other",
    node: "/opt/node22/bin/node",
    flags: ["--max-semi-space-size=64", "--no-opt"],
  });
  assert.equal(sideOf(values, "a").build, "/elsewhere/checkout");
  assert.equal(sideOf(values, "a").node, process.execPath);
  assert.equal(sideOf({ "a-build": "relative/dir" }, "a").build, path.resolve("relative/dir"));
});

test("a side runs the benchmark's own distributor command with its build, Node.js and flags", () => {
  const ours = distributorRun("/case/rerun.yaml", "/case/render-cache", "/bundle");
  const side = { build: "/other", node: "/opt/node", flags: ["--no-opt"] };
  const theirs = sideCommand(side, ours);
  assert.equal(theirs.cmd, "/opt/node");
  assert.deepEqual(theirs.args, ["--no-opt", "/other/bin/distributor.js", ...ours.args.slice(1)]);
  assert.ok(theirs.args.includes("--quiet") && theirs.args.includes("/bundle"));
  // The environment (the case's own render cache) is kept.
  assert.equal(theirs.env?.DISTRIBUTOR_CACHE_DIR, "/case/render-cache");
  assert.match(describeSide(side), /^\/opt\/node --no-opt \/other\/bin\/distributor\.js$/);
});

test("a command that is not distributor's is refused, not run with the wrong program", () => {
  const side = { build: "/other", node: "/opt/node", flags: [] };
  assert.throws(
    () => sideCommand(side, { cmd: "sh", args: ["-c", "sha256sum x"] }),
    /not a distributor command: sh -c sha256sum x/,
  );
});
