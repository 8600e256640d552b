/**
 * The editor JSON Schema of the configuration file, generated from the same zod
 * schema that validates it, so the two never disagree. Run as a script
 * (`node dist/src/config/json-schema.js`) it rewrites schema/distributor.schema.json.
 */
import { writeFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as z from "zod";
import { configSchema } from "./schema.js";

/** Where the generated schema is committed, relative to this module (src/ or dist/src/). */
export function committedSchemaUrl(): URL {
  const fromDist = import.meta.url.includes("/dist/src/");
  return new URL(
    fromDist ? "../../../schema/distributor.schema.json" : "../../schema/distributor.schema.json",
    import.meta.url,
  );
}

/**
 * JSON Schema (draft-07, the widest editor support) of the file a user writes:
 * the input side of the schema, so keys with defaults are optional. Checks that
 * JSON Schema cannot express (clean paths) are left to `loadConfig`.
 */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: "input", target: "draft-7" });
}

/** The exact text of schema/distributor.schema.json: 2-space JSON and a newline. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

const isScript =
  process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === import.meta.url;
if (isScript) {
  const target = committedSchemaUrl();
  await writeFile(target, configJsonSchemaText());
  process.stdout.write(`wrote ${fileURLToPath(target)}\n`);
}
