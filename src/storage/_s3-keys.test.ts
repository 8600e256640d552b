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
function fakeBucket(keys: string[], options: { emptyFirstPage?: boolean } = {}) {
  const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const requests: { prefix: string; delimiter: boolean }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client = {
    async send(command: ListObjectsV2Command) {
      const input = command.input;
      const prefix = input.Prefix ?? "";
      requests.push({ prefix, delimiter: input.Delimiter !== undefined });
      if (options.emptyFirstPage && requests.length === 1) {
        // S3 may answer a page with fewer keys than asked for, even none.
        return { Contents: [], IsTruncated: true, NextContinuationToken: "\u0000" };
      }
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

/** Lists root/ of `bucket` and checks that every key under it came back once, in order. */
async function assertListsRoot(
  bucket: ReturnType<typeof fakeBucket>,
  options: { pageSize: number; concurrency: number },
): Promise<void> {
  const listed = await listKeys(bucket.client, "b", { prefix: "root/", ...options });
  assert.deepEqual(
    listed.map((object) => object.key),
    bucket.sorted.filter((key) => key.startsWith("root/")),
  );
}

describe("listKeys", () => {
  it("lists a root of a few large folders by folder, several at once", async () => {
    const keys = range(6, (f) => range(40, (k) => `root/f${f}/k${k}.txt`)).flat();
    const bucket = fakeBucket([...keys, "root/top.txt", "other/x.txt"]);
    await assertListsRoot(bucket, { pageSize: 10, concurrency: 8 });
    assert.ok(
      bucket.requests.some((request) => request.delimiter),
      "the folders were asked for",
    );
    assert.equal(bucket.maxInFlight(), 6, "the six folders listed at once");
    // Page after page takes 25 requests, one at a time; by folder about as
    // many (the first page, the folders, each folder's pages), side by side.
    assert.ok(bucket.requests.length <= 27, `${bucket.requests.length} requests`);
  });

  /** Lists `keys` under root/ and checks the result and that it went page by page. */
  async function assertPageByPage(
    keys: string[],
    options: { pageSize: number; concurrency: number; delimiterPages?: number },
  ) {
    const bucket = fakeBucket(keys);
    await assertListsRoot(bucket, { pageSize: options.pageSize, concurrency: options.concurrency });
    assert.equal(bucket.maxInFlight(), 1, "one request at a time");
    const flatPages = Math.ceil(keys.length / options.pageSize);
    const delimited = bucket.requests.filter((request) => request.delimiter).length;
    assert.equal(delimited, options.delimiterPages ?? 0, "folders asked for");
    assert.equal(bucket.requests.length, flatPages + delimited);
  }

  it("goes on page by page when the first page spans many folders", async () => {
    const keys = range(60, (f) => range(3, (k) => `root/f${String(f).padStart(2, "0")}/${k}`));
    // 15 keys span 5 folders.
    await assertPageByPage(keys.flat(), { pageSize: 15, concurrency: 8 });
  });

  it("goes on page by page with one connection", async () => {
    const keys = range(2, (f) => range(50, (k) => `root/f${f}/${String(k).padStart(2, "0")}`));
    await assertPageByPage(keys.flat(), { pageSize: 10, concurrency: 1 });
  });

  it("goes on page by page when many small folders follow a first page in one", async () => {
    // A site: assets first, then a folder per page. Split, it would take a
    // request per folder (200) instead of 23 pages.
    const keys = [
      ...range(30, (k) => `root/assets/${String(k).padStart(2, "0")}.css`),
      ...range(200, (p) => `root/p${String(p).padStart(3, "0")}/index.html`),
    ];
    // The delimiter listing names more than one page of folders: it stops there.
    await assertPageByPage(keys, { pageSize: 10, concurrency: 4, delimiterPages: 1 });
  });

  it("goes on page by page when more folders follow than one round lists", async () => {
    // Ten one-key folders after a first page in one: split, that would be
    // ten requests for what two pages hold.
    const keys = [
      ...range(30, (k) => `root/assets/${String(k).padStart(2, "0")}.css`),
      ...range(10, (p) => `root/p${p}/index.html`),
    ];
    await assertPageByPage(keys, { pageSize: 12, concurrency: 4, delimiterPages: 1 });
  });

  it("a root without folders costs at most one request more than page by page", async () => {
    // Two pages: the delimiter listing's one page is the second. More: it
    // is read in vain once, and the rest goes page by page.
    for (const [count, requests] of [
      [15, 2],
      [45, 6],
    ] as const) {
      const keys = range(count, (k) => `root/${String(k).padStart(2, "0")}.txt`);
      const bucket = fakeBucket(keys);
      await assertListsRoot(bucket, { pageSize: 10, concurrency: 8 });
      assert.equal(bucket.requests.length, requests, `${count} keys`);
    }
  });

  it("fails on a truncated page without a continuation token, instead of stopping there", async () => {
    const truncated = {
      async send() {
        return { Contents: [{ Key: "root/a", Size: 1 }], IsTruncated: true };
      },
    } as unknown as S3Client;
    await assert.rejects(
      listKeys(truncated, "b", { prefix: "root/" }),
      /truncated page without a continuation token/,
    );
  });

  it("goes on after a first page that is empty but not the last", async () => {
    const keys = range(3, (f) => range(12, (k) => `root/f${f}/${String(k).padStart(2, "0")}`));
    for (const concurrency of [1, 8]) {
      const bucket = fakeBucket(keys.flat(), { emptyFirstPage: true });
      await assertListsRoot(bucket, { pageSize: 10, concurrency });
    }
  });

  it("makes one request for a root of one page", async () => {
    const bucket = fakeBucket(range(5, (k) => `root/a/${k}`));
    const listed = await listKeys(bucket.client, "b", { prefix: "root/", concurrency: 8 });
    assert.equal(listed.length, 5);
    assert.equal(bucket.requests.length, 1);
  });
});
