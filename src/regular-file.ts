/**
 * Reading a file the user names (the config) or that sits in a folder others
 * may write to (the render cache) without trusting what is there: a FIFO at
 * that name made open() wait for a writer forever, deaf to SIGTERM, and a
 * device such as /dev/zero was read until memory ran out. (The lock reader,
 * storage/_fs-lock.ts, does the same with a size cap and no links.)
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

export type RegularFileRead =
  | { kind: "file"; bytes: Buffer }
  | { kind: "directory" }
  /** A FIFO, a device or a socket: never read. */
  | { kind: "other" };

/**
 * The bytes of `file` if it is a regular file (a link to one counts), else
 * what is there instead. Opened with O_NONBLOCK, so that a FIFO does not
 * wait, and read only after fstat says it is a regular file.
 *
 * @throws the open's error (ENOENT, EACCES, ...)
 */
export function readRegularFile(file: string): RegularFileRead {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (stats.isFile()) return { kind: "file", bytes: readFileSync(fd) };
    return { kind: stats.isDirectory() ? "directory" : "other" };
  } finally {
    closeSync(fd);
  }
}
