/** Test fixtures for the lock code. */
import { spawnSync } from "node:child_process";

/** The pid of a process on this host that has certainly exited. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}
