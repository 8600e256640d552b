/**
 * A verification shard's files as one string and three typed arrays, the
 * form in which they cross to a helper thread: structured cloning 100,000
 * file objects kept the helper from its first file for about 160 ms, where
 * these take a few (as for the listing, storage/_fs-walk.ts: PackedEntries).
 * The helper makes each file's object only when it takes the file.
 */
import type { FileToCheck } from "./_file-checks.js";

export interface PackedFiles {
  /** Each file's path, then its `sha256:<hex>`, all one after another. */
  text: string;
  /** Where each piece of `text` starts: file i's path at 2i, its digest at 2i + 1; then the end. */
  starts: Uint32Array<ArrayBuffer>;
  sizes: Float64Array<ArrayBuffer>;
  /** FileToCheck.at of each file, -1 where it has none. */
  at: Float64Array<ArrayBuffer>;
}

export function packFiles(files: readonly FileToCheck[]): PackedFiles {
  const count = files.length;
  const starts = new Uint32Array(2 * count + 1);
  const sizes = new Float64Array(count);
  const at = new Float64Array(count);
  const pieces = new Array<string>(2 * count);
  let offset = 0;
  for (let index = 0; index < count; index++) {
    const file = files[index] as FileToCheck;
    sizes[index] = file.size;
    at[index] = file.at ?? -1;
    pieces[2 * index] = file.path;
    starts[2 * index] = offset;
    offset += file.path.length;
    pieces[2 * index + 1] = file.sha256;
    starts[2 * index + 1] = offset;
    offset += file.sha256.length;
  }
  starts[2 * count] = offset;
  return { text: pieces.join(""), starts, sizes, at };
}

/** How many files `packed` holds; -1 when it is not a whole PackedFiles. */
export function packedCount(packed: PackedFiles): number {
  const count = packed?.sizes?.length;
  if (
    typeof packed?.text !== "string" ||
    !(packed.starts instanceof Uint32Array) ||
    !(packed.sizes instanceof Float64Array) ||
    !(packed.at instanceof Float64Array) ||
    packed.at.length !== count ||
    packed.starts.length !== 2 * count + 1 ||
    packed.starts[2 * count] !== packed.text.length
  ) {
    return -1;
  }
  return count;
}

/** File `index` of `packed`, as FileChecker takes it. */
export function packedFile(packed: PackedFiles, index: number): FileToCheck {
  const { text, starts } = packed;
  const path = text.slice(starts[2 * index], starts[2 * index + 1]);
  const sha256 = text.slice(starts[2 * index + 1], starts[2 * index + 2]);
  const at = packed.at[index] as number;
  const size = packed.sizes[index] as number;
  return at >= 0 ? { path, size, sha256, at } : { path, size, sha256 };
}
