/**
 * The layout of a pipeline's outputs: which manifest files it publishes as they
 * are, which a transform renders and at which paths, known from paths alone,
 * before any file is read. Refuses layouts that no destination can hold
 * (output_collision) or whose derived paths are not clean (transform_failed).
 */
import type { PipelineConfig, TransformConfig } from "../config/types.js";
import { DistributorError, listedError } from "../errors.js";
import type { ManifestFile, PlannedOutput, SourceBundle } from "../model.js";
import { addAncestors, cleanPathProblem, compareUtf8 } from "../paths.js";
import { derivedHtmlPath } from "./links.js";
import { mediaTypeFor } from "./media-types.js";

interface Assignment {
  file: ManifestFile;
  /** First transform whose include matches the file, if any. */
  transform?: TransformConfig;
}

function sourceOutput(bundle: SourceBundle, file: ManifestFile): PlannedOutput {
  return {
    path: file.path,
    kind: "source",
    sourcePath: file.path,
    sha256: file.sha256,
    size: file.size,
    mediaType: mediaTypeFor(file.path, file.media_type),
    // Concatenated, not path.join: manifest paths are clean and the bundle's
    // directory is absolute and resolved; join was a fifth of the layout's time.
    content: {
      type: "file",
      absPath: `${bundle.dir}/${file.path}`,
      sourcePath: file.path,
      size: file.size,
      sha256: file.sha256,
    },
  };
}

function derivedPaths(assignments: readonly Assignment[]): Map<string, string> {
  const transformed = new Map<string, string>();
  for (const { file, transform } of assignments) {
    if (!transform) continue;
    const derived = derivedHtmlPath(file.path);
    const problem = cleanPathProblem(derived);
    if (problem) {
      throw new DistributorError(
        "transform_failed",
        `${transform.transform}: the output path "${derived}" for ${file.path} ${problem}. Rename the source file.`,
        { paths: [file.path] },
      );
    }
    transformed.set(file.path, derived);
  }
  return transformed;
}

/** A planned path and the file it comes from; the transform when it is generated. */
interface Slot {
  path: string;
  file: ManifestFile;
  transform?: TransformConfig;
}

/** Where a slot's path comes from, for collision messages. */
function originOf(slot: Slot): string {
  return slot.transform === undefined
    ? `source file ${slot.file.path}`
    : `generated from ${slot.file.path} by ${slot.transform.transform}`;
}

function slotsOf(
  assignments: readonly Assignment[],
  transformed: ReadonlyMap<string, string>,
): Slot[] {
  const slots: Slot[] = [];
  for (const { file, transform } of assignments) {
    if (transform) slots.push({ path: transformed.get(file.path) as string, file, transform });
    if (!transform || transform.keepSource) slots.push({ path: file.path, file });
  }
  return slots;
}

/**
 * Fail with `output_collision` listing every path planned more than once, and
 * every planned file that another planned output needs as its folder (`x.html`
 * rendered from `x.md` next to a listed `x.html/y.txt`), each with its origins.
 * The second kind is a collision too: no directory tree can hold both, and
 * writing one would fail halfway through the run. It is refused on S3 as well,
 * where keys could hold both, so that a bundle publishes the same everywhere.
 * Messages are built only once a collision is found: a bundle of 100,000
 * files has none, and building them for every path cost a tenth of a second.
 */
function assertNoCollisions(slots: readonly Slot[]): void {
  const planned = new Set<string>();
  const repeated = new Set<string>();
  const folders = new Set<string>();
  for (const slot of slots) {
    if (planned.has(slot.path)) repeated.add(slot.path);
    else planned.add(slot.path);
    addAncestors(folders, slot.path);
  }
  const fileFolders = [...folders].filter((folder) => planned.has(folder));
  if (repeated.size === 0 && fileFolders.length === 0) return;
  const originsAt = (at: string) =>
    slots
      .filter((slot) => slot.path === at)
      .map(originOf)
      .join(" and ");
  const collisions = new Map<string, string>();
  // In first-appearance order; the sort below is by UTF-8 bytes.
  for (const at of planned) if (repeated.has(at)) collisions.set(at, originsAt(at));
  for (const folder of fileFolders) {
    if (collisions.has(folder)) continue;
    // The first slot in plan order that needs the folder, as the message names it.
    const inside = slots.find((slot) => slot.path.startsWith(`${folder}/`)) as Slot;
    collisions.set(
      folder,
      `${originsAt(folder)}, but ${inside.path} (${originOf(inside)}) needs it as a folder`,
    );
  }
  const paths = [...collisions.keys()].sort(compareUtf8);
  throw listedError(
    "output_collision",
    {
      head: "Several planned outputs have the same path, or a file's path is another output's folder:",
      items: paths.map((outputPath) => `${outputPath}: ${collisions.get(outputPath)}`),
      advice:
        "Rename one of the files in the bundle, or narrow the pipeline's include/exclude or the transform's include.",
    },
    { paths },
  );
}

/** A pipeline's outputs known from paths alone, before any file is read. */
export interface Layout {
  sources: PlannedOutput[];
  /** Source path → the transform that renders it. */
  transforms: Map<string, TransformConfig>;
  /** Source path → its derived output path, for every transformed file. */
  transformed: Map<string, string>;
}

export function layoutOf(bundle: SourceBundle, pipeline: PipelineConfig): Layout {
  const assignments: Assignment[] = bundle.files
    .filter((file) => pipeline.selects(file.path))
    .map((file) => {
      const transform = pipeline.transforms.find((t) => t.matches(file.path));
      return transform ? { file, transform } : { file };
    });
  const transformed = derivedPaths(assignments);
  assertNoCollisions(slotsOf(assignments, transformed));
  const transforms = new Map<string, TransformConfig>();
  for (const { file, transform } of assignments)
    if (transform) transforms.set(file.path, transform);
  const sources = assignments
    .filter(({ transform }) => !transform || transform.keepSource)
    .map(({ file }) => sourceOutput(bundle, file));
  return { sources, transforms, transformed };
}
