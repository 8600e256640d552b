import type { FileHandle } from "node:fs/promises";

/**
 * Every byte of an open file, in one read when `size` is still right:
 * `FileHandle.readFile` reads 512 KiB per turn of the event loop, so a state
 * of 100,000 outputs (54 MB) read while this thread verifies (run.ts reads
 * states early) waited for 100 turns of 20 ms. A file that grew since its
 * size was taken is still read to the end.
 */
export async function readWhole(handle: FileHandle, size: number): Promise<Uint8Array> {
  // One byte more than expected: a read that fills it means the file grew.
  let buffer = Buffer.allocUnsafeSlow(size + 1);
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) {
      const bigger = Buffer.allocUnsafeSlow(buffer.length * 2);
      buffer.copy(bigger, 0, 0, filled);
      buffer = bigger;
    }
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
}
