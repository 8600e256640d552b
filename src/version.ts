import { readFileSync } from "node:fs";

/**
 * The package version, read once from package.json so the state's
 * `distributor_version` and `--version` can never drift from the release.
 */
export const DISTRIBUTOR_VERSION: string = (() => {
  // Always run compiled: dist/src/version.js sits two levels below the package root.
  const url = new URL("../../package.json", import.meta.url);
  const pkg = JSON.parse(readFileSync(url, "utf8")) as { version: string };
  return pkg.version;
})();
