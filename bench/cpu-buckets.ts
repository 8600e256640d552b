/**
 * Whole-process CPU by kind of work, from a `perf` profile of one run.
 *
 * The main-thread CPU profiles (`--cpu-prof`) that found the earlier speed-ups
 * miss what runs beside the main thread: helper and write threads, libuv's
 * pool, and V8's own threads (optimizing compiler, concurrent GC). On two
 * cores those compete with the work, so docs/performance.md ("Where the CPU
 * goes") counts them all:
 *
 *   perf record -F 1999 -g -o run.data -- node --perf-basic-prof bin/distributor.js run …
 *   perf script -i run.data -F tid,pid,ip,sym | node dist/bench/cpu-buckets.js 1999
 *
 * Each sample goes to the first bucket its call stack matches, in the order
 * of BUCKETS: a system call wins over the JavaScript that made it, and V8's
 * compiler and collector over the code they serve.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** One sampled call stack, innermost frame first; kernel frames marked. */
export interface Sample {
  frames: { symbol: string; kernel: boolean }[];
}

export const BUCKETS = [
  "system calls: open, stat, create, rename, list, close",
  "system calls: read",
  "system calls: write",
  "page faults and other kernel work",
  "SHA-256",
  "V8 optimizing compiler",
  "V8 parsing and bytecode",
  "V8 garbage collection",
  "JSON.parse",
  "JavaScript and runtime",
] as const;
export type Bucket = (typeof BUCKETS)[number];

const FILE_CALLS = new Set([
  "openat",
  "open",
  "close",
  "statx",
  "newfstatat",
  "newfstat",
  "newlstat",
  "getdents64",
  "rename",
  "renameat",
  "renameat2",
  "mkdir",
  "mkdirat",
  "unlink",
  "unlinkat",
  "rmdir",
  "link",
  "linkat",
  "fsync",
  "fdatasync",
]);
const READ_CALLS = new Set(["read", "pread64", "readv", "preadv", "preadv2"]);
const WRITE_CALLS = new Set(["write", "pwrite64", "writev", "pwritev", "pwritev2"]);
/**
 * Kernel entry points that name the call when the syscall's own frame is not
 * in the stack (perf loses it on some paths).
 */
const KERNEL_ENTRIES: Record<string, string> = {
  ksys_read: "read",
  ksys_pread64: "pread64",
  ksys_write: "write",
  ksys_pwrite64: "pwrite64",
  do_sys_openat2: "openat",
  do_renameat2: "rename",
  do_mkdirat: "mkdir",
  vfs_statx: "statx",
};

function systemCall(sample: Sample): string | undefined {
  for (const { symbol, kernel } of sample.frames) {
    const call = /^__(?:x64|do)_sys_(\w+)/.exec(symbol)?.[1];
    if (call) return call;
    if (kernel && symbol in KERNEL_ENTRIES) return KERNEL_ENTRIES[symbol];
  }
  return undefined;
}

export function bucketOf(sample: Sample): Bucket {
  const call = systemCall(sample);
  if (call !== undefined) {
    if (FILE_CALLS.has(call)) return BUCKETS[0];
    if (READ_CALLS.has(call)) return BUCKETS[1];
    if (WRITE_CALLS.has(call)) return BUCKETS[2];
    return BUCKETS[3];
  }
  const symbols = sample.frames.map((frame) => frame.symbol);
  const stack = symbols.join(" ");
  if (sample.frames[0]?.kernel) {
    if (/generic_perform_write|ext4_buffered_write|vfs_write/.test(stack)) return BUCKETS[2];
    if (/filemap_read|vfs_read/.test(stack)) return BUCKETS[1];
    return BUCKETS[3];
  }
  if (symbols[0]?.includes("sha256")) return BUCKETS[4];
  if (/OptimizingCompileDispatcher|compiler::/.test(stack)) return BUCKETS[5];
  if (/Parser::|PreParser|BytecodeGenerator|CompileLazy|Compiler::|BaselineCompiler/.test(stack))
    return BUCKETS[6];
  if (
    /Scaveng|MarkCompact|ConcurrentMark|Sweep|MarkingVisitor|Evacuat|IncrementalMarking/.test(stack)
  )
    return BUCKETS[7];
  if (stack.includes("JsonParser")) return BUCKETS[8];
  return BUCKETS[9];
}

/** Samples from `perf script -F tid,pid,ip,sym`: a `pid/tid` line, then one `ip symbol` line per frame. */
export function parsePerfScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let current: Sample | undefined;
  for (const line of text.split("\n")) {
    if (/^\s*\d+\/\d+\s*$/.test(line)) {
      current = { frames: [] };
      samples.push(current);
      continue;
    }
    const frame = /^\s+([0-9a-f]+)\s+(.*)$/.exec(line);
    if (!frame || !current) continue;
    const [, ip, symbol] = frame as unknown as [string, string, string];
    current.frames.push({
      symbol: symbol.replace(/\s+\([^)]*\)$/, ""),
      kernel: ip.length === 16 && ip.startsWith("ffffffff"),
    });
  }
  return samples.filter((sample) => sample.frames.length > 0);
}

/** Seconds of CPU per bucket at `hz` samples per second, in BUCKETS order. */
export function tally(samples: readonly Sample[], hz: number): Map<Bucket, number> {
  const seconds = new Map<Bucket, number>(BUCKETS.map((bucket) => [bucket, 0]));
  for (const sample of samples) {
    const bucket = bucketOf(sample);
    seconds.set(bucket, (seconds.get(bucket) ?? 0) + 1 / hz);
  }
  return seconds;
}

function main(): void {
  const hz = Number(process.argv[2]);
  if (!Number.isFinite(hz) || hz <= 0) {
    process.stderr.write(
      "usage: perf script -F tid,pid,ip,sym | node dist/bench/cpu-buckets.js <perf -F rate>\n",
    );
    process.exitCode = 2;
    return;
  }
  const samples = parsePerfScript(readFileSync(0, "utf8"));
  const seconds = tally(samples, hz);
  const total = samples.length / hz;
  process.stdout.write(
    `whole process: ${total.toFixed(2)} s of CPU in ${samples.length} samples\n`,
  );
  for (const [bucket, value] of seconds) {
    const share = total > 0 ? (100 * value) / total : 0;
    process.stdout.write(
      `${value.toFixed(2).padStart(6)} s ${share.toFixed(0).padStart(3)} %  ${bucket}\n`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main();
