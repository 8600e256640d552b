/**
 * Helper threads for verification, started before the command-line program's
 * own modules load. A helper takes 0.1-0.15 s to boot (Node sets up a new
 * isolate and its own internal modules), and the CLI bundle takes about
 * 80 ms to load, then the config and the manifest are read: started when
 * the manifest is (openBundle), the helper of an unchanged rerun of M began
 * checking files 0.13 s after the calling thread. Started from
 * bin/distributor.js before anything else, it boots while the rest loads.
 *
 * Only the commands that verify a bundle start one, and only on a machine
 * with a core to spare (prestartChecks decides how many). Which bundle they
 * verify is not known yet, so a small one, which the calling thread verifies
 * alone, leaves the helper unused: its boot competes with the loading of the
 * program for the cores, about +20 ms of wall and +60 ms of CPU on a
 * 0.2 s run of five files, against -55 ms on an unchanged rerun of 10,000
 * files and -130 ms on one of 100,000 (docs/performance.md, item 45).
 */
import { prestartChecks } from "../bundle/_parallel-checks.js";

const VERIFYING_COMMANDS = new Set(["run", "validate"]);

export function prestartHelpers(argv: readonly string[]): void {
  const command = argv[0];
  const help = argv.includes("--help") || argv.includes("-h");
  if (command !== undefined && VERIFYING_COMMANDS.has(command) && !help) {
    prestartChecks();
  }
}
