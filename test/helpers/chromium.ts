/**
 * The real browser for HTML checks: Debian's Chromium. Like the S3 server, the
 * tests bring it up themselves when they can (root with apt-get, as on CI and the
 * dev machines), and otherwise fail loudly — they are never skipped.
 */
import { execFile } from "node:child_process";
import { access } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);
const DEFAULT_PATH = "/usr/bin/chromium";

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** Path of a Chromium binary, installing Debian's `chromium` package if needed. */
export async function ensureChromium(): Promise<string> {
  const wanted = process.env.CHROMIUM_PATH ?? DEFAULT_PATH;
  if (await exists(wanted)) return wanted;
  if (process.env.CHROMIUM_PATH === undefined && process.getuid?.() === 0) {
    process.stderr.write("installing Debian's chromium for the HTML tests (apt-get)…\n");
    const options = {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      maxBuffer: 1 << 26,
    };
    await run("apt-get", ["update", "-qq"], options);
    await run("apt-get", ["install", "-y", "-qq", "chromium"], options);
    if (await exists(wanted)) return wanted;
  }
  throw new Error(
    `Chromium not found at ${wanted}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`,
  );
}
