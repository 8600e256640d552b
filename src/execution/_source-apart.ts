/**
 * A pipeline's source bundle and its filesystem destination roots must not
 * overlap: SPEC §2, "The bundle is never modified".
 * - A root that is the bundle, or inside it, would be written into.
 * - A bundle inside a root is that root's unmanaged content: a first publish
 *   refuses it (fail_unmanaged), and `--force` would delete it, then read
 *   from it again the files it did not keep from verification.
 *
 * Refused before the bundle is read or any destination is touched, by `run`
 * and by `validate` alike. Folders are compared with their symlinks resolved,
 * so two spellings of one folder count as one. S3 roots cannot overlap a
 * folder.
 */
import { realpathSync } from "node:fs";
import path from "node:path";
import type { DestinationConfig } from "../config/types.js";
import { DistributorError } from "../errors.js";

/**
 * `dir` with every symlink on the way resolved; a part that does not exist
 * yet (a run creates it) is kept as written below the deepest one that does.
 */
export function realFolder(dir: string): string {
  const rest: string[] = [];
  for (let at = dir; ; at = path.dirname(at)) {
    try {
      return path.join(realpathSync.native(at), ...rest);
    } catch {
      if (path.dirname(at) === at) return dir;
      rest.unshift(path.basename(at));
    }
  }
}

function isInside(folder: string, outer: string): boolean {
  return folder.startsWith(outer.endsWith(path.sep) ? outer : `${outer}${path.sep}`);
}

/** @throws DistributorError `usage` when the bundle at `sourceDir` and the destination's root overlap. */
export function assertSourceApart(
  pipelineId: string,
  sourceDir: string,
  destination: DestinationConfig,
): void {
  const storage = destination.storage;
  if (storage.type !== "filesystem") return;
  const bundle = realFolder(path.resolve(sourceDir));
  const root = realFolder(path.join(storage.root, destination.path));
  const pair = `${pipelineId} → ${destination.id}`;
  let problem: string;
  if (root === bundle || isInside(root, bundle)) {
    problem = `The destination root ${root} of ${pair} ${root === bundle ? "is" : "is inside"} the pipeline's source bundle ${bundle}: publishing would write into the bundle, which distributor never modifies.`;
  } else if (isInside(bundle, root)) {
    problem = `The source bundle ${bundle} of ${pair} is inside the destination root ${root}: its files would be the root's unmanaged content, which a first publish refuses and --force would delete.`;
  } else {
    return;
  }
  throw new DistributorError(
    "usage",
    `${problem} Nothing was read or written. Keep the two apart: give the destination another root or path, or move the bundle.`,
    { paths: [bundle, root] },
  );
}
