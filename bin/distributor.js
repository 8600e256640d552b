#!/usr/bin/env node
// The CLI entry point. The TypeScript sources are compiled to dist/ by `npm ci`
// (the `prepare` script) or `npm run build`.
import { main } from "../dist/src/cli/main.js";

const code = await main(process.argv.slice(2));
// Exit explicitly: an idle keep-alive socket (S3) must not keep the process
// alive after the report is written. stdout/stderr writes are synchronous for
// files and pipes on Linux, so nothing is lost.
process.exit(code);
