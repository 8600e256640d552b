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
import { compareUtf8, hasReservedSegment, RESERVED_PREFIX } from "../paths.js";
import type { StorageView } from "./_storage-view.js";

/** The key two names share when the root cannot tell them apart (an approximation of the filesystems' folding). */
function fold(name: string): string {
  return name.normalize("NFC").toUpperCase().toLowerCase();
}

/** Folded key → each exact name with it → what that name is. */
type Names = Map<string, Map<string, Set<string>>>;

function addWithAncestors(into: Names, relPath: string, what: string, folderWhat: string): void {
  const add = (name: string, description: string) => {
    const key = fold(name);
    const names = into.get(key) ?? new Map<string, Set<string>>();
    into.set(key, names);
    const descriptions = names.get(name) ?? new Set<string>();
    names.set(name, descriptions);
    descriptions.add(description);
  };
  add(relPath, what);
  for (let i = relPath.indexOf("/"); i !== -1; i = relPath.indexOf("/", i + 1)) {
    add(relPath.slice(0, i), folderWhat);
  }
}

/** Names that one file would stand for on a root that folds case. */
export interface CaseFoldClash {
  /** Every name involved, sorted by UTF-8 bytes (for `error.paths`). */
  paths: string[];
  /** For humans, e.g. `Guide.html (recorded) and guide.html (planned)`. */
  description: string;
}

/**
 * One clash per planned name (or folder of planned outputs) that another
 * name folds onto; empty when none. `recorded` holds the state's record
 * paths (every owner).
 */
export function caseFoldClashes(
  planned: readonly string[],
  view: StorageView,
  recorded: Iterable<string>,
): CaseFoldClash[] {
  const byKey: Names = new Map();
  for (const relPath of planned) {
    addWithAncestors(byKey, relPath, "planned", "a folder of planned outputs");
  }
  const plannedKeys = new Set(byKey.keys());
  // Only names that fold like a planned one matter: nothing else is written.
  const addIfRelevant = (relPath: string, what: string, folderWhat: string) => {
    if (plannedKeys.has(fold(relPath))) addWithAncestors(byKey, relPath, what, folderWhat);
  };
  for (const relPath of view.entries.keys()) {
    addIfRelevant(relPath, "in storage", "a folder in storage");
  }
  for (const dir of view.dirs) addIfRelevant(dir, "a folder in storage", "a folder in storage");
  for (const relPath of recorded) {
    addIfRelevant(relPath, "recorded", "a folder of recorded outputs");
  }
  const clashes: CaseFoldClash[] = [];
  for (const relPath of planned) {
    // `.Distributor.json` passes the manifest's exact check, and is the state here.
    if (!hasReservedSegment(relPath) && hasReservedSegment(fold(relPath))) {
      clashes.push({
        paths: [relPath],
        description: `${relPath} (planned) and the tool's own ${RESERVED_PREFIX}* files`,
      });
    }
  }
  for (const key of plannedKeys) {
    const names = byKey.get(key) as Map<string, Set<string>>;
    if (names.size < 2) continue;
    const paths = [...names.keys()].sort(compareUtf8);
    const described = paths.map(
      (name) => `${name} (${[...(names.get(name) as Set<string>)].join(", ")})`,
    );
    clashes.push({ paths, description: described.join(" and ") });
  }
  return clashes.sort((a, b) => compareUtf8(a.description, b.description));
}
