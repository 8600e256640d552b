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

export interface CaseFoldInput {
  /** Paths the run writes. */
  planned: readonly string[];
  /** Paths the run deletes (omitted records under replacement). */
  deleting: readonly string[];
  view: StorageView;
  /** The state's record paths, every owner. */
  recorded: Iterable<string>;
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
  const add = (name: string, description: string) => {
    const key = keyOf(name);
    const names = byKey.get(key) ?? new Map<string, Set<string>>();
    byKey.set(key, names);
    const descriptions = names.get(name) ?? new Set<string>();
    names.set(name, descriptions);
    descriptions.add(description);
  };
  const addWithAncestors = (relPath: string, what: string, folderWhat: string) => {
    add(relPath, what);
    for (let i = relPath.indexOf("/"); i !== -1; i = relPath.indexOf("/", i + 1)) {
      add(relPath.slice(0, i), folderWhat);
    }
  };
  for (const relPath of input.planned) addWithAncestors(relPath, PLANNED, PLANNED_FOLDER);
  for (const relPath of input.deleting) add(relPath, "to be deleted");
  const touched = new Set(byKey.keys());
  // Only names that fold like a touched one matter: nothing else is written or deleted.
  const addIfRelevant = (relPath: string, what: string, folderWhat: string) => {
    if (touched.has(keyOf(relPath))) addWithAncestors(relPath, what, folderWhat);
  };
  for (const relPath of input.view.entries.keys()) {
    addIfRelevant(relPath, "in storage", "a folder in storage");
  }
  for (const dir of input.view.dirs) {
    addIfRelevant(dir, "a folder in storage", "a folder in storage");
  }
  for (const relPath of input.recorded) {
    addIfRelevant(relPath, "recorded", "a folder of recorded outputs");
  }
  const clashes: CaseFoldClash[] = [];
  for (const relPath of input.planned) {
    // `.Distributor.json` passes the manifest's exact check, and is the state here.
    if (!hasReservedSegment(relPath) && hasReservedSegment(fold(relPath))) {
      clashes.push({
        paths: [relPath],
        description: `${relPath} (planned) and the tool's own ${RESERVED_PREFIX}* files`,
        plannedOnly: true,
      });
    }
  }
  for (const key of touched) {
    const names = byKey.get(key) as Map<string, Set<string>>;
    if (names.size < 2) continue;
    const paths = [...names.keys()].sort(compareUtf8);
    const whats = paths.map((name) => [...(names.get(name) as Set<string>)]);
    clashes.push({
      paths,
      description: paths.map((name, i) => `${name} (${whats[i]?.join(", ")})`).join(" and "),
      plannedOnly: whats.every((list) => list.every((w) => w === PLANNED || w === PLANNED_FOLDER)),
    });
  }
  return clashes.sort((a, b) => compareUtf8(a.description, b.description));
}
