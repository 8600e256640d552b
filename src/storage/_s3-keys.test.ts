import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { listKeys } from "./_s3-keys.js";

/**
 * ListObjectsV2 over keys in memory, as S3 answers it (UTF-8 order, Prefix,
 * StartAfter, Delimiter rolling keys up into folders, MaxKeys counting both),
 * recording each request and how many were in flight at once. The listing's
 * results are checked against the real server in test/storage-s3.test.ts;
 * this checks which requests it makes.
 */
function fakeBucket(keys: string[]) {
  const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const requests: { prefix: string; delimiter: boolean }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client = {
    async send(command: ListObjectsV2Command) {
      const input = command.input;
      const prefix = input.Prefix ?? "";
      requests.push({ prefix, delimiter: input.Delimiter !== undefined });
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      inFlight -= 1;
      const after = input.ContinuationToken ?? input.StartAfter ?? "";
      const entries: { key?: string; folder?: string }[] = [];
      for (const key of sorted) {
        if (!key.startsWith(prefix) || Buffer.compare(Buffer.from(key), Buffer.from(after)) <= 0)
          continue;
        const slash = input.Delimiter ? key.indexOf("/", prefix.length) : -1;
        const folder = slash < 0 ? undefined : key.slice(0, slash + 1);
        if (folder !== undefined && entries.at(-1)?.folder === folder) continue;
        entries.push(folder === undefined ? { key } : { folder });
      }
      const page = entries.slice(0, input.MaxKeys ?? 1000);
      const truncated = entries.length > page.length;
      const lastEntry = page.at(-1);
      // A token past a folder skips the rest of it (its keys are rolled up).
      const token = lastEntry?.key ?? `${lastEntry?.folder ?? ""}\u{10FFFF}`;
      return {
        Contents: page.flatMap((entry) => (entry.key ? [{ Key: entry.key, Size: 1 }] : [])),
        CommonPrefixes: page.flatMap((entry) => (entry.folder ? [{ Prefix: entry.folder }] : [])),
        IsTruncated: truncated,
        NextContinuationToken: truncated ? token : undefined,
      };
    },
  } as unknown as S3Client;
  return { client, sorted, requests, maxInFlight: () => maxInFlight };
}

const range = <T>(count: number, item: (index: number) => T): T[] =>
  Array.from({ length: count }, (_, index) => item(index));

describe("listKeys", () => {
  it("lists a root of a few large folders by folder, several at once", async () => {
    const keys = range(6, (f) => range(40, (k) => `root/f${f}/k${k}.txt`)).flat();
    const bucket = fakeBucket([...keys, "root/top.txt", "other/x.txt"]);
    const listed = await listKeys(bucket.client, "b", {
      prefix: "root/",
      pageSize: 10,
      concurrency: 4,
    });
    assert.deepEqual(
      listed.map((object) => object.key),
      bucket.sorted.filter((key) => key.startsWith("root/")),
    );
    assert.ok(
      bucket.requests.some((request) => request.delimiter),
      "the folders were asked for",
    );
    assert.equal(bucket.maxInFlight(), 4, "four folders listed at once");
    // Page after page takes 25 requests, one at a time; by folder about as
    // many (the first page, the folders, each folder's pages), four at a time.
    assert.ok(bucket.requests.length <= 27, `${bucket.requests.length} requests`);
  });

  it("goes on page by page when the first page spans many folders, or with one connection", async () => {
    const keys = range(60, (f) =>
      range(3, (k) => `root/f${String(f).padStart(2, "0")}/${k}`),
    ).flat();
    for (const concurrency of [8, 1]) {
      const bucket = fakeBucket(keys);
      const pageSize = concurrency === 8 ? 15 : 200; // 15 keys span 5 folders, 200 all 60
      const listed = await listKeys(bucket.client, "b", { prefix: "root/", pageSize, concurrency });
      assert.deepEqual(
        listed.map((object) => object.key),
        bucket.sorted,
      );
      assert.equal(bucket.maxInFlight(), 1);
      assert.ok(
        bucket.requests.every((request) => !request.delimiter && request.prefix === "root/"),
      );
    }
  });

  it("makes one request for a root of one page", async () => {
    const bucket = fakeBucket(range(5, (k) => `root/a/${k}`));
    const listed = await listKeys(bucket.client, "b", { prefix: "root/", concurrency: 8 });
    assert.equal(listed.length, 5);
    assert.equal(bucket.requests.length, 1);
  });
});
