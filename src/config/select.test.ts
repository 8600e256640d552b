import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DistributorError } from "../errors.js";
import { configFromData } from "./load.js";
import { selectPairs } from "./select.js";
import type { Config } from "./types.js";

// Validated through the real loader path (minus the file read) so the Config is genuine.
const config: Config = configFromData(
  {
    pipelines: {
      reports: { destinations: ["site", "bucket"] },
      docs: { destinations: ["site"] },
      exports: { destinations: ["archive"] },
    },
    destinations: {
      site: { storage: { root: "public" } },
      bucket: { storage: { type: "s3", bucket: "b" } },
      archive: { storage: { root: "archive" } },
    },
  },
  { file: "/config/distributor.yaml", env: {} },
);

function ids(pairs: ReturnType<typeof selectPairs>): string[] {
  return pairs.map((pair) => `${pair.pipeline.id}->${pair.destination.id}`);
}

function usageError(pattern: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof DistributorError);
    assert.equal(error.code, "usage");
    assert.match(error.message, pattern);
    return true;
  };
}

describe("selectPairs", () => {
  test("no selector: every pipeline × its destinations, in config order", () => {
    assert.deepEqual(ids(selectPairs(config)), [
      "reports->site",
      "reports->bucket",
      "docs->site",
      "exports->archive",
    ]);
    assert.deepEqual(
      ids(selectPairs(config, { pipelines: [], destinations: [] })),
      ids(selectPairs(config)),
    );
  });

  test("narrows by pipeline, by destination, and by both", () => {
    assert.deepEqual(ids(selectPairs(config, { pipelines: ["reports"] })), [
      "reports->site",
      "reports->bucket",
    ]);
    assert.deepEqual(ids(selectPairs(config, { destinations: ["site"] })), [
      "reports->site",
      "docs->site",
    ]);
    assert.deepEqual(
      ids(selectPairs(config, { pipelines: ["docs", "reports"], destinations: ["site"] })),
      ["reports->site", "docs->site"],
    );
    assert.deepEqual(
      ids(selectPairs(config, { pipelines: ["reports", "reports"], destinations: ["bucket"] })),
      ["reports->bucket"],
    );
  });

  test("the pairs carry the normalized pipeline and destination", () => {
    const [pair] = selectPairs(config, { pipelines: ["reports"], destinations: ["bucket"] });
    assert.equal(pair?.pipeline, config.pipelines.get("reports"));
    assert.equal(pair?.destination, config.destinations.get("bucket"));
  });

  test("an unknown id is a usage error listing what exists", () => {
    assert.throws(
      () => selectPairs(config, { pipelines: ["nope"] }),
      usageError(/--pipeline: no pipeline "nope".*Configured pipelines: reports, docs, exports/),
    );
    assert.throws(
      () => selectPairs(config, { destinations: ["site", "cdn"] }),
      usageError(/--destination: no destination "cdn"/),
    );
  });

  test("a combination with no pair is a usage error", () => {
    assert.throws(
      () => selectPairs(config, { pipelines: ["docs"], destinations: ["bucket"] }),
      usageError(/--pipeline docs and --destination bucket selects no pipeline\/destination pair/),
    );
  });

  test("a selector value that takes part in no selected pair is a usage error", () => {
    // reports->site exists, but exports publishes to neither selected destination
    assert.throws(
      () => selectPairs(config, { pipelines: ["reports", "exports"], destinations: ["site"] }),
      usageError(/^--pipeline exports selects no/),
    );
  });
});
