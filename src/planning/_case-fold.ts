/**
 * Names that differ only by case, on a root that folds case (macOS APFS and
 * Windows NTFS by default; the storage driver says, see RunPlanInput.foldsCase).
 * There `guide.html` and `Guide.html` are one file, while the rest of the
 * planner compares paths exactly: a planned `index.html` would overwrite an
 * unmanaged `INDEX.HTML` it takes for absent, and a case-only rename under
 * replacement would write `guide.html` and then delete `Guide.html`, the file
 * it just wrote. So any planned path (or a folder it needs) that folds to the
 * same name as a different path in storage, in the state, or among the other
 * planned outputs is refused before anything is written.
 */
import { addAncestors, compareUtf8, hasReservedSegment, RESERVED_PREFIX } from "../paths.js";
import type { StorageView } from "./_storage-view.js";

/** The key two names share when the root cannot tell them apart (an approximation of the filesystems' folding). */
function fold(name: string): string {
  return name.normalize("NFC").toUpperCase().toLowerCase();
}

/** What one name is; `planned` and folders of planned outputs are the run's own. */
const PLANNED = "planned";
const PLANNED_FOLDER = "a folder of planned outputs";

/** Folded key → each exact name with it → what that name is. */
type Names = Map<string, Map<string, Set<string>>>;

/** Names that one file would stand for on a root that folds case. */
export interface CaseFoldClash {
  /** Every name involved, sorted by UTF-8 bytes (for `error.paths`). */
  paths: string[];
  /** For humans, e.g. `Guide.html (recorded) and guide.html (planned)`. */
  description: string;
  /** Only planned names (or the tool's own files) clash: emptying the root first does not help. */
  plannedOnly: boolean;
}

interface CaseFoldInput {
  /** Paths the run writes. */
  planned: readonly string[];
  /** Paths the run deletes (omitted records under replacement, pruned records). */
  deleting: readonly string[];
  /** What storage holds; absent: nothing that matters (the root is emptied first, or not listed). */
  view?: StorageView;
  /** The state's record paths, every owner. */
  recorded: readonly string[];
}

function foldersOf(paths: readonly string[]): Set<string> {
  const folders = new Set<string>();
  for (const relPath of paths) addAncestors(folders, relPath);
  return folders;
}

/**
 * One clash per name the run writes (or needs as a folder) or deletes that
 * another name folds onto; empty when none.
 */
export function caseFoldClashes(input: CaseFoldInput): CaseFoldClash[] {
  // On a rerun nearly every listed and recorded name is a planned one: fold each once.
  const keys = new Map<string, string>();
  const keyOf = (name: string) => {
    let key = keys.get(name);
    if (key === undefined) {
      key = fold(name);
      keys.set(name, key);
    }
    return key;
  };
  const byKey: Names = new Map();
  const add = (names: Iterable<string>, what: string, onlyTouched: Set<string> | null) => {
    for (const name of names) {
      const key = keyOf(name);
      if (onlyTouched && !onlyTouched.has(key)) continue;
      const named = byKey.get(key) ?? new Map<string, Set<string>>();
      byKey.set(key, named);
      const whats = named.get(name) ?? new Set<string>();
      named.set(name, whats);
      whats.add(what);
    }
  };
  add(input.planned, PLANNED, null);
  add(foldersOf(input.planned), PLANNED_FOLDER, null);
  add(input.deleting, "to be deleted", null);
  // Only names that fold like a touched one matter: nothing else is written or deleted.
  const touched = new Set(byKey.keys());
  add(input.view?.entries.keys() ?? [], "in storage", touched);
  add(input.view?.dirs ?? [], "a folder in storage", touched);
  add(input.recorded, "recorded", touched);
  add(foldersOf(input.recorded), "a folder of recorded outputs", touched);
  const clashes: CaseFoldClash[] = [];
  for (const relPath of input.planned) {
    // `.Distributor.json` passes the manifest's exact check, and is the state here.
    if (!hasReservedSegment(relPath) && hasReservedSegment(keyOf(relPath))) {
      clashes.push({
        paths: [relPath],
        description: `${relPath} (planned) and the tool's own ${RESERVED_PREFIX}* files`,
        plannedOnly: true,
      });
    }
  }
  for (const key of touched) {
    const named = byKey.get(key) as Map<string, Set<string>>;
    if (named.size < 2) continue;
    const paths = [...named.keys()].sort(compareUtf8);
    const whats = paths.map((name) => [...(named.get(name) as Set<string>)]);
    clashes.push({
      paths,
      description: paths.map((name, i) => `${name} (${whats[i]?.join(", ")})`).join(" and "),
      plannedOnly: whats.every((list) => list.every((w) => w === PLANNED || w === PLANNED_FOLDER)),
    });
  }
  return clashes.sort((a, b) => compareUtf8(a.description, b.description));
}

/** Every name the clashes involve, sorted, at most `limit` (for `error.paths`). */
export function clashPaths(clashes: readonly CaseFoldClash[], limit: number): string[] {
  return [...new Set(clashes.flatMap((clash) => clash.paths))].sort(compareUtf8).slice(0, limit);
}
