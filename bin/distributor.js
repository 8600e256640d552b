#!/usr/bin/env node
// The CLI entry point. The TypeScript sources are compiled to dist/src and the
// CLI bundled into dist/cli (scripts/bundle-cli.mjs) by `npm ci` (the
// `prepare` script) or `npm run build`.
import { main } from "../dist/cli/main.js";

const code = await main(process.argv.slice(2));
// Writes to a pipe are asynchronous once the pipe is full: wait until stdout and
// stderr have flushed everything (an empty write calls back after the earlier
// ones), or a large --json report read through a pipe would be cut off. A reader
// that went away (EPIPE, e.g. `| head`) ends the wait instead of crashing.
await Promise.all(
  [process.stdout, process.stderr].map(
    (stream) =>
      new Promise((resolve) => {
        stream.once("error", resolve);
        stream.write("", resolve);
      }),
  ),
);
// Exit explicitly: an idle keep-alive socket (S3) must not keep the process
// alive after the report is written.
process.exit(code);
