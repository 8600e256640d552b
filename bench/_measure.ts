/**
 * Running one timed command as its own process: wall time from spawn to exit,
 * peak RSS and CPU time from GNU time (`/usr/bin/time -f "%M %U %S"`) when it
 * is installed, stdout kept for checks. Nothing here decides what a good
 * number is.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";

export interface Command {
  cmd: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface Sample {
  seconds: number;
  /** Wall-clock start (epoch ms), to find what the run wrote. */
  startedAtMs: number;
  /** Peak resident set size in MB, or null when GNU time is missing. */
  peakRssMb: number | null;
  /**
   * User plus system CPU seconds of the command and every process it waited
   * for (a shell pipeline's too), or null when GNU time is missing. On two
   * cores a run cannot take less wall time than half of it.
   */
  cpuSeconds: number | null;
  stdout: string;
}

const GNU_TIME = "/usr/bin/time";

/** Whether `name` runs here (`name --version` exits 0). */
export function toolAvailable(name: string): boolean {
  return spawnSync(name, ["--version"], { stdio: "ignore" }).status === 0;
}

/** Flush dirty pages so that one sample's writeback does not land in the next one's time. */
export function flushDisks(): void {
  spawnSync("sync", [], { stdio: "ignore" });
}

/** Run `command` once and time it. Throws with its stderr when it exits non-zero. */
export async function measure(command: Command): Promise<Sample> {
  const rssFile = path.join(os.tmpdir(), `distributor-bench-rss-${process.pid}`);
  const withTime = existsSync(GNU_TIME);
  const [cmd, args] = withTime
    ? [GNU_TIME, ["-f", "%M %U %S", "-o", rssFile, command.cmd, ...command.args]]
    : [command.cmd, command.args];
  const startedAtMs = Date.now();
  const started = process.hrtime.bigint();
  const { code, stdout, stderr } = await runChild(cmd, args, command);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (code !== 0) {
    throw new Error(
      `${command.cmd} ${command.args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`,
    );
  }
  let peakRssMb: number | null = null;
  let cpuSeconds: number | null = null;
  if (withTime) {
    const lines = readFileSync(rssFile, "utf8").trim().split("\n");
    ({ peakRssMb, cpuSeconds } = parseGnuTime(lines[lines.length - 1] ?? ""));
    rmSync(rssFile, { force: true });
  }
  return { seconds, startedAtMs, peakRssMb, cpuSeconds, stdout };
}

/** The last line GNU time wrote for `-f "%M %U %S"`: peak KB, user and system seconds. */
export function parseGnuTime(line: string): {
  peakRssMb: number | null;
  cpuSeconds: number | null;
} {
  const match = /^(\d+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/.exec(line.trim());
  if (!match) return { peakRssMb: null, cpuSeconds: null };
  const [, rssKb, user, system] = match.map(Number) as [number, number, number, number];
  return { peakRssMb: rssKb / 1024, cpuSeconds: user + system };
}

let clockTicks: number | undefined;

/** The kernel's clock ticks per second, the unit of /proc's CPU times. */
function ticksPerSecond(): number {
  clockTicks ??= Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;
  return clockTicks;
}

/**
 * CPU seconds (user + system) used so far by the running processes whose name
 * matches `name` (Linux /proc), or null when there are none or no /proc: for a
 * server on this machine that the contenders talk to (case 6's local S3
 * server), whose work shares the cores with theirs.
 */
export function processCpuSeconds(name: RegExp): number | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry));
  } catch {
    return null;
  }
  let ticks = 0;
  let found = false;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    const parsed = parseProcStat(stat);
    if (parsed === null || !name.test(parsed.comm)) continue;
    ticks += parsed.cpuTicks;
    found = true;
  }
  return found ? ticks / ticksPerSecond() : null;
}

/**
 * CPU seconds the hypervisor has so far given to others while this VM wanted
 * to run ("steal", summed over every CPU), or null without /proc. The
 * benchmark VM's host is shared: a sample that lost CPU this way was slowed by
 * its neighbours, not by its own work, and its ratio says less.
 */
function stolenSeconds(): number | null {
  let stat: string;
  try {
    stat = readFileSync("/proc/stat", "utf8");
  } catch {
    return null;
  }
  const ticks = parseStealTicks(stat);
  return ticks === null ? null : ticks / ticksPerSecond();
}

/**
 * A meter of stolen CPU: what the host has taken since it was made, or null
 * when `read` (stolenSeconds, unless a test gives another) cannot tell.
 */
export function stealMeter(read: () => number | null = stolenSeconds): () => number | null {
  const start = read();
  return () => {
    const now = read();
    return start === null || now === null ? null : now - start;
  };
}

/** The steal ticks of `/proc/stat`'s first line, all CPUs together (proc(5)), or null. */
export function parseStealTicks(procStat: string): number | null {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
  const fields = /^cpu +(.*)$/m.exec(procStat)?.[1]?.split(/ +/);
  const steal = Number(fields?.[7]);
  return Number.isInteger(steal) ? steal : null;
}

/** The name and user + system clock ticks of one `/proc/<pid>/stat` line (proc(5)). */
export function parseProcStat(line: string): { comm: string; cpuTicks: number } | null {
  // "pid (comm) state ppid ...": comm may hold spaces and ")", so split after the last ")".
  const open = line.indexOf("(");
  const close = line.lastIndexOf(")");
  if (open < 0 || close < open) return null;
  const fields = line.slice(close + 2).split(" ");
  // utime and stime are fields 14 and 15, the 12th and 13th after comm.
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(cpuTicks) ? { comm: line.slice(open + 1, close), cpuTicks } : null;
}

function runChild(
  cmd: string,
  args: string[],
  command: Command,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: command.cwd,
      env: command.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
      }),
    );
  });
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Read the file `target`, or every file under the folder `target`, so that
 * its pages are in the page cache, as the benchmark assumes for all its
 * inputs. rclone's local backend advises the kernel to drop the pages of each
 * file it has read (POSIX_FADV_DONTNEED; `fincore` showed 30 of a 49.8 MB
 * file's MB left after one `rclone sync`), and the contender after it then
 * read from disk: distributor's case-2 rerun took 1.78-2.2 s right after
 * rclone against 0.96-1.3 s otherwise, and `sha256sum` 2.54-2.71 s against
 * about 1.65 s.
 */
export function warmPageCache(target: string): void {
  warmFiles(filesUnder(target));
}

/** `target` if it is a file, else every file under the folder `target`. */
export function filesUnder(target: string): string[] {
  return statSync(target).isFile()
    ? [target]
    : readdirSync(target, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Read every one of `files` to its end (see warmPageCache). */
export function warmFiles(files: readonly string[]): void {
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  for (const file of files) {
    const fd = openSync(file, "r");
    try {
      while (readSync(fd, buffer, 0, buffer.length, null) > 0);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * The files every contender runs from: Node.js, distributor's build (the CLI
 * bundle, and dist/src for case 7), package.json (read for the version), the
 * packages the bundle still loads from node_modules at run time (markdown-it
 * and its dependencies: the rest of node_modules, 183 MB of build and test
 * tools, is never read), and the anchors' programs. Warmed before each sample with
 * the inputs: once the samples' outputs fill the page cache, the kernel
 * evicts whatever was used least recently, and a case-2 rerun whose code
 * came from disk took 1.0-1.1 s against 0.85 s (three pairs, pages dropped
 * with POSIX_FADV_DONTNEED); in full benchmark runs its samples measured
 * 1.04-1.20 s where runs of their own between them took 0.87-0.93 s.
 */
export function programFiles(repoRoot: string): string[] {
  const found = spawnSync(
    "sh",
    ["-c", 'for tool in rclone sha256sum cp find xargs sh; do command -v "$tool"; done'],
    { encoding: "utf8" },
  );
  const tools = found.stdout
    .split("\n")
    .filter((line) => line.startsWith("/"))
    .map((line) => realpathSync(line));
  const modules = path.join(repoRoot, "node_modules");
  const markdownIt = JSON.parse(
    readFileSync(path.join(modules, "markdown-it/package.json"), "utf8"),
  ) as { dependencies?: Record<string, string> };
  return [
    realpathSync(process.execPath),
    path.join(repoRoot, "dist"),
    path.join(repoRoot, "package.json"),
    ...["markdown-it", ...Object.keys(markdownIt.dependencies ?? {})].map((name) =>
      path.join(modules, name),
    ),
    ...new Set(tools),
  ];
}

/** A shell command line (for floors built from coreutils pipelines). */
export function shell(script: string, env?: NodeJS.ProcessEnv): Command {
  return { cmd: "sh", args: ["-c", script], env };
}

/** Quote one word for `sh`. */
export function quote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}
