import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { committedSchemaUrl, configJsonSchema, configJsonSchemaText } from "./json-schema.js";

type JsonObject = Record<string, unknown>;

function child(node: unknown, ...keys: string[]): JsonObject {
  let current = node;
  for (const key of keys) {
    assert.ok(current !== null && typeof current === "object", `no object at ${key}`);
    current = (current as JsonObject)[key];
  }
  assert.ok(current !== null && typeof current === "object", `no object at ${keys.join(".")}`);
  return current as JsonObject;
}

/** Every property schema in the tree, with its dotted location. */
function allProperties(node: unknown, where = ""): Array<[string, JsonObject]> {
  if (node === null || typeof node !== "object") return [];
  const out: Array<[string, JsonObject]> = [];
  const object = node as JsonObject;
  if (object.properties && typeof object.properties === "object") {
    for (const [key, value] of Object.entries(object.properties as JsonObject)) {
      out.push([`${where}.${key}`, value as JsonObject]);
    }
  }
  for (const [key, value] of Object.entries(object)) {
    out.push(...allProperties(value, `${where}.${key}`));
  }
  return out;
}

describe("config JSON Schema", () => {
  test("the committed schema/distributor.schema.json is exactly what the code generates", async () => {
    const committed = await readFile(committedSchemaUrl(), "utf8");
    assert.equal(
      committed,
      configJsonSchemaText(),
      "schema/distributor.schema.json is stale: rebuild and run node dist/src/config/json-schema.js",
    );
  });

  test("every property carries a description (the editor hover text)", () => {
    const properties = allProperties(configJsonSchema());
    assert.ok(properties.length > 20, `only ${properties.length} properties found`);
    const undescribed = properties
      .filter(([, schema]) => typeof schema.description !== "string" || schema.description === "")
      .map(([where]) => where);
    assert.deepEqual(undescribed, []);
  });

  test("describes the input: strict objects, id patterns, defaults optional", () => {
    const schema = configJsonSchema();
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required, ["pipelines", "destinations"]);
    const pipeline = child(schema, "properties", "pipelines", "additionalProperties");
    assert.equal(pipeline.additionalProperties, false);
    assert.deepEqual(pipeline.required, ["destinations"]);
    assert.equal(
      child(schema, "properties", "destinations", "propertyNames").pattern,
      "^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$",
    );
    const destination = child(schema, "properties", "destinations", "additionalProperties");
    assert.deepEqual(child(destination, "properties", "workflow").enum, [
      "additive",
      "replacement",
    ]);
    assert.equal(child(destination, "properties", "workflow").default, "additive");
  });
});
