/**
 * Output trees of earlier samples are set aside, not deleted, until the
 * benchmark ends.
 *
 * On ext4 without a journal (the benchmark VM's root filesystem) the inode
 * allocator passes over every free inode that was freed in the last minute
 * (the kernel's `recently_deleted`, checked only when there is no journal),
 * one buffer-cache lookup each, before it takes one. Creating a tree right
 * after deleting a tree of the same size therefore scans most of the freed
 * inodes for every new file: `cp -r` of M took 2.1-2.5 s of kernel time
 * straight after deleting the previous copy, and 0.5 s into a folder with no
 * deletes before it; distributor's fresh publish 4.1-4.5 s against 2.2 s
 * (`perf record`: `ext4_create` → `recently_deleted` → `find_get_block_common`
 * on top). Each contender used to delete its previous output right before its
 * sample, so the file-creating rows measured that scan as much as the tools,
 * and swung by 2-5× between runs. Deleting everything at the end keeps it out
 * of every sample; a benchmark run needs the disk space for every sample's
 * output meanwhile (about 25 GB for all cases). The scan then slows whatever
 * creates files on that filesystem during the next minutes (a fresh publish
 * of C took 26 s instead of 8-9 s about three minutes after a full run ended).
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { benchDir } from "./workload.js";

/**
 * A name no user folder in BENCH_DIR is likely to have, and a file that marks
 * it as the benchmark's: only a folder holding it is ever deleted.
 */
const TRASH = "distributor-bench-trash";
const MARKER = "CREATED-BY-DISTRIBUTOR-BENCH";

function trashDir(): string {
  return path.join(benchDir(), TRASH);
}

let setAsideCount = 0;
let warnedCrossDevice = false;

/**
 * Move `target` (a file or folder) out of the way into the trash, as deleting
 * it would; nothing happens when it does not exist. The trash is in the
 * benchmark folder, normally on the same filesystem as every work folder, so
 * this is one rename; a work folder on another filesystem is deleted instead.
 */
export function setAside(target: string): void {
  if (!existsSync(target)) return;
  const trash = trashDir();
  if (!existsSync(path.join(trash, MARKER))) {
    mkdirSync(trash, { recursive: true });
    writeFileSync(
      path.join(trash, MARKER),
      "Outputs of benchmark samples, deleted when the run ends.\n",
    );
  }
  try {
    renameSync(target, path.join(trash, `${process.pid}-${setAsideCount++}`));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    if (!warnedCrossDevice) {
      process.stderr.write(
        `${target} is on another filesystem than ${trash}: deleting instead (see bench/_trash.ts)\n`,
      );
      warnedCrossDevice = true;
    }
    rmSync(target, { recursive: true, force: true });
  }
}

/**
 * Delete everything set aside; true when there was something. A folder of
 * that name without the marker is left alone.
 */
export function emptyTrash(): boolean {
  const trash = trashDir();
  if (!existsSync(path.join(trash, MARKER))) return false;
  rmSync(trash, { recursive: true, force: true });
  return true;
}
