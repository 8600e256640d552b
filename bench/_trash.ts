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
 * of C took 26 s instead of about 10 s four minutes after a full run ended).
 */
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { benchDir } from "./workload.js";

function trashDir(): string {
  return path.join(benchDir(), "trash");
}

let setAsideCount = 0;

/**
 * Move `target` (a file or folder) out of the way into the trash, as deleting
 * it would; nothing happens when it does not exist. The trash is in the
 * benchmark folder, on the same filesystem as every work folder, so this is
 * one rename.
 */
export function setAside(target: string): void {
  if (!existsSync(target)) return;
  mkdirSync(trashDir(), { recursive: true });
  renameSync(target, path.join(trashDir(), `${process.pid}-${setAsideCount++}`));
}

/** Delete everything set aside; true when there was something. */
export function emptyTrash(): boolean {
  if (!existsSync(trashDir())) return false;
  rmSync(trashDir(), { recursive: true, force: true });
  return true;
}
