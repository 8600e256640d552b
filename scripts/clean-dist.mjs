// Removes dist/ before `npm run build` compiles into it again.
//
// Why: tsc writes what its sources make and never deletes, so a source file
// deleted or renamed leaves its compiled module behind. A stale test file
// would then still run under `npm test` (scripts/run-tests.mjs takes every
// dist/**/*.test.js), and a stale module could still be imported, so that the
// suite passes here and fails on a fresh clone. Compiling everything again
// costs nothing extra: the build is not incremental.
import { rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
rmSync(path.join(repoRoot, "dist"), { recursive: true, force: true });
