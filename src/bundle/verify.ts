/**
 * Loading a source bundle: read manifest.json, then prove that every listed file
 * is a regular file inside the bundle with the listed size and SHA-256 (SPEC §2),
 * before anything is written anywhere. The bundle is only ever opened read-only.
 */

import { type FileHandle, lstat, open, realpath } from "node:fs/promises";
import path from "node:path";
import { DistributorError, errnoCode, listedError } from "../errors.js";
import type { ManifestFile, SourceBundle } from "../model.js";
import { newWorkClaims, takeFront, type WorkClaims } from "../threads.js";
import { FileChecker, NO_FOLLOW_READ } from "./_file-checks.js";
import {
  type CheckOptions,
  checkFiles,
  type HandOff,
  NO_ANSWERS,
  NO_HAND_OFF,
  prestartChecks,
} from "./_parallel-checks.js";
import type { VerifiedBytesStore } from "./_verified-bytes.js";
import { MANIFEST_FILE, parseManifest } from "./manifest.js";

async function resolveBundleDir(dir: string): Promise<string> {
  const absolute = path.resolve(dir);
  try {
    // Resolved once, so a "latest" symlink that flips mid-run cannot mix two bundles.
    const real = await realpath(absolute);
    if ((await lstat(real)).isDirectory()) return real;
  } catch (error) {
    if (errnoCode(error) !== "ENOENT" && errnoCode(error) !== "ENOTDIR") {
      throw new DistributorError(
        "source_invalid",
        `Source bundle ${absolute} cannot be read (${errnoCode(error) ?? String(error)}). Check its permissions.`,
        { cause: error },
      );
    }
  }
  throw new DistributorError(
    "source_invalid",
    `Source bundle ${absolute} does not exist or is not a directory. Point the pipeline's source (or run --source) at a directory holding manifest.json.`,
  );
}

/**
 * A manifest this big lists more files than are checked on the calling thread
 * (about 500 at 100-150 bytes each), so helper threads will verify them.
 */
const PRESTART_MANIFEST_BYTES = 64 * 1024;

async function readManifestBytes(root: string): Promise<Uint8Array> {
  const where = path.join(root, MANIFEST_FILE);
  let handle: FileHandle;
  try {
    handle = await open(where, NO_FOLLOW_READ);
  } catch (error) {
    const reason =
      errnoCode(error) === "ENOENT"
        ? "has no manifest.json"
        : errnoCode(error) === "ELOOP"
          ? "has a manifest.json that is a symlink (it must be a regular file)"
          : `has an unreadable manifest.json (${errnoCode(error) ?? String(error)})`;
    throw new DistributorError(
      "source_invalid",
      `Source bundle ${root} ${reason}. A bundle is a directory with manifest.json at its top; see docs/manifest.md.`,
      { paths: [MANIFEST_FILE], cause: error },
    );
  }
  try {
    if (!(await handle.stat()).isFile()) {
      throw new DistributorError(
        "source_invalid",
        `Source bundle ${root}: manifest.json is not a regular file. The producer writes it as a file at the bundle's top; point the source at a complete bundle.`,
        { paths: [MANIFEST_FILE] },
      );
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/**
 * Read the bundle's manifest (SPEC §2) without looking at its files yet: the
 * result is not verified until `verifyFiles` (or `planOutputs`, which calls it)
 * has passed. `dir` of the result is the bundle's real absolute path (a
 * symlinked bundle directory such as `bundles/latest` is resolved once, here).
 * A large manifest starts the helper threads that will verify it; no more than
 * `options.workers` allows (none for 0).
 *
 * @throws DistributorError `source_invalid` when the directory or manifest is missing or invalid.
 */
export async function openBundle(dir: string, options: CheckOptions = {}): Promise<SourceBundle> {
  const root = await resolveBundleDir(dir);
  const bytes = await readManifestBytes(root);
  if (bytes.byteLength > PRESTART_MANIFEST_BYTES) prestartChecks(options.workers);
  const manifest = parseManifest(bytes, {
    where: path.join(root, MANIFEST_FILE),
  });
  return { dir: root, identity: manifest.identity, files: manifest.files };
}

export interface VerifyOptions extends CheckOptions {
  /**
   * Which files to read whole on the calling thread, handing each good one to
   * `onContent`. Asked once the helper threads have their files, so that the
   * caller can decide while they already check (planOutputs plans its layout
   * and looks up the render cache there). Those files are checked by the
   * helpers as well: hashing them again costs about 1% of rendering them.
   */
  readHere?: () => ReadonlySet<string>;
  /**
   * Gets the verified bytes of each good `readHere` file while the other files
   * are still being checked. After it (or `readHere`) throws, no more files are
   * read here; the error is rethrown once verification has passed (a bad
   * bundle is reported first).
   */
  onContent?: (file: ManifestFile, bytes: Buffer) => void;
  /**
   * Where to keep the bytes of small files as they are verified, for
   * publishing them without reading them again (_verified-bytes.ts).
   */
  store?: VerifiedBytesStore | null;
  /**
   * Lets the helper threads take a share of the `readHere` files once their
   * own files are checked (see ShareHere); without it, or without helpers,
   * this thread reads them all.
   */
  shareHere?: ShareHere;
}

/**
 * How helper threads share the `readHere` files (_parallel-checks.ts:
 * HandOff). The files to read here, in manifest order, are a list of work
 * (threads.ts: WorkClaims): this thread takes them from the front, and each
 * helper runs the job module `job` with `input(files, claims)`, taking them
 * from the back, to do there what `onContent` does here. The files a helper
 * takes are not given to `onContent`: verifyFiles returns the helpers'
 * answers, and whatever they leave undone is the caller's to do.
 */
export interface ShareHere {
  job: URL;
  /**
   * Files whose sizes add up to less than this are all read here: a
   * helper's first files are slow (its code is cold), and for a short list
   * the calling thread would only wait for them.
   */
  minBytes: number;
  input: (files: readonly ManifestFile[], claims: WorkClaims) => unknown;
}

/**
 * Prove that every listed file is a regular file inside the bundle — neither it
 * nor any parent directory a symlink — whose size and SHA-256 match the
 * manifest (SPEC §2). Each file is read once, in chunks (never whole in
 * memory, except `readHere` files, which are read twice, and the small files
 * kept in `store`), on worker threads for all but small bundles (see
 * _parallel-checks.ts). Nothing in the bundle is modified.
 *
 * @returns the answers of the helpers that took a share of the `readHere`
 *   files (ShareHere); none without `shareHere`.
 * @throws DistributorError `source_invalid` listing every bad file with its
 *   reason (`paths` holds them all, in manifest order).
 */
export async function verifyFiles(
  bundle: SourceBundle,
  options: VerifyOptions = {},
): Promise<unknown[]> {
  const { readHere, onContent, shareHere } = options;
  const problemsHere = new Map<string, string>();
  // The caller's errors, rethrown once the bundle has verified.
  let callerError: { error: unknown } | undefined;
  let sharedAnswers = NO_ANSWERS;
  const readFilesHere = (handOff: HandOff) => {
    try {
      // The caller's own work gets no hand-off: the files read here have it.
      options.meanwhile?.(NO_HAND_OFF);
      const paths = readHere?.() ?? new Set<string>();
      const files = bundle.files.filter((file) => paths.has(file.path));
      const claims = newWorkClaims(files.length);
      if (shareHere && sizeOf(files) >= shareHere.minBytes)
        sharedAnswers = handOff(shareHere.job, () => shareHere.input(files, claims));
      const checker = new FileChecker(bundle.dir);
      for (let index = takeFront(claims); index !== undefined; index = takeFront(claims)) {
        const file = files[index] as ManifestFile;
        const result = checker.read(file);
        if ("problem" in result) problemsHere.set(file.path, result.problem);
        else onContent?.(file, result.bytes);
      }
    } catch (error) {
      callerError = { error };
    }
  };
  const problems = await checkFiles(bundle.dir, bundle.files, {
    ...options,
    meanwhile: readFilesHere,
  });
  const bad: { path: string; problem: string }[] = [];
  bundle.files.forEach((file, index) => {
    // A file read here that changed after its helper checked it is bad too.
    const problem = problems[index] ?? problemsHere.get(file.path);
    if (problem) bad.push({ path: file.path, problem });
  });
  if (bad.length > 0) {
    throw listedError(
      "source_invalid",
      {
        head: `Source bundle ${bundle.dir} failed verification (${bad.length} of ${bundle.files.length} listed files):`,
        items: bad.map((b) => `${b.path}: ${b.problem}`),
        advice: "Repair the files or regenerate manifest.json, then run again.",
      },
      { paths: bad.map((b) => b.path) },
    );
  }
  if (callerError) throw callerError.error;
  return sharedAnswers();
}

function sizeOf(files: readonly ManifestFile[]): number {
  let bytes = 0;
  for (const file of files) bytes += file.size;
  return bytes;
}

/**
 * Load and verify the bundle in `dir`: `openBundle`, then `verifyFiles`.
 *
 * @throws DistributorError `source_invalid` (see both).
 */
export async function loadBundle(dir: string, options: CheckOptions = {}): Promise<SourceBundle> {
  const bundle = await openBundle(dir, options);
  await verifyFiles(bundle, options);
  return bundle;
}
