/**
 * The two sides of bench/compare.ts: which build, Node.js binary and Node.js
 * flags run distributor, and the benchmark's command rewritten for them.
 */
import path from "node:path";
import { REPO_ROOT } from "./_kit.js";
import type { Command } from "./_measure.js";

export interface Side {
  build: string;
  node: string;
  flags: string[];
}

/** The command line of one side: `--x-build`, `--x-node` and `--x-flags` over this checkout's defaults. */
export function sideOf(values: Record<string, string | undefined>, name: "a" | "b"): Side {
  const flags = values[`${name}-flags`]?.trim();
  return {
    build: path.resolve(values[`${name}-build`] ?? REPO_ROOT),
    node: values[`${name}-node`] ?? process.execPath,
    flags: flags ? flags.split(/\s+/) : [],
  };
}

/**
 * The benchmark's command for distributor (bench/_kit.ts, distributorRun),
 * run by this side's build, Node.js and flags instead.
 */
export function sideCommand(side: Side, ours: Command): Command {
  const [script, ...runArgs] = ours.args;
  if (script !== path.join(REPO_ROOT, "bin/distributor.js"))
    throw new Error(`not a distributor command: ${[ours.cmd, ...ours.args].join(" ")}`);
  return {
    ...ours,
    cmd: side.node,
    args: [...side.flags, path.join(side.build, "bin/distributor.js"), ...runArgs],
  };
}

/** How a side is named in the comparison's output. */
export function describeSide(side: Side): string {
  const flags = side.flags.length > 0 ? ` ${side.flags.join(" ")}` : "";
  return `${side.node}${flags} ${path.join(side.build, "bin/distributor.js")}`;
}
