import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BUCKETS, bucketOf, parsePerfScript, tally } from "./cpu-buckets.js";

// Abridged from `perf script -F tid,pid,ip,sym` of a distributor run.
const SCRIPT = `
 1132/1132  
\tffffffff815fd321 ext4_create
\tffffffff81605202 path_openat
\tffffffff81605a20 __x64_sys_openat
\t           1c6a8 uv_fs_open
\t    7f0012345678 JS:*writeAtomic file:///x/dist/cli/chunk.js:10:1

 1144/1144  
\t    55f0deadbeef sha256_block_data_order_shaext
\t    55f0deadbef0 EVP_DigestUpdate
\t    7f0012345679 JS:*check file:///x/dist/cli/chunk.js:65:8

 1136/1136  
\t    55f000000001 v8::internal::compiler::InliningPhase::Run (/usr/bin/node)
\t    55f000000002 v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal (/usr/bin/node)

 1132/1132  
\tffffffff81aa0000 copy_folio_from_iter_atomic
\tffffffff81aa0001 generic_perform_write
\tffffffff81aa0002 ext4_buffered_write_iter

 1132/1132  
\t    55f000000003 v8::internal::Scavenger::ScavengeObject
\t    55f000000004 v8::internal::ScavengerCollector::CollectGarbage

 1132/1132  
\t    55f000000005 Builtins_FindOrderedHashMapEntry
\t    7f001234567a JS:*_planCatalog file:///x/dist/cli/main.js:22087:22
`;

describe("whole-process CPU buckets", () => {
  const samples = parsePerfScript(SCRIPT);

  test("reads one sample per pid/tid line, kernel frames marked", () => {
    assert.equal(samples.length, 6);
    assert.deepEqual(samples[0]?.frames[0], { symbol: "ext4_create", kernel: true });
    assert.equal(samples[0]?.frames[3]?.kernel, false);
    assert.equal(
      samples[2]?.frames[0]?.symbol,
      "v8::internal::compiler::InliningPhase::Run",
      "the DSO in parentheses is dropped",
    );
  });

  test("puts each sample in the first bucket its stack matches", () => {
    assert.deepEqual(samples.map(bucketOf), [
      "system calls: open, stat, create, rename, list, close",
      "SHA-256",
      "V8 optimizing compiler",
      "system calls: write",
      "V8 garbage collection",
      "JavaScript and runtime",
    ]);
  });

  test("a system call wins over the JavaScript that made it", () => {
    const sample = {
      frames: [
        { symbol: "filemap_read", kernel: true },
        { symbol: "__x64_sys_pread64", kernel: true },
        { symbol: "JS:*readSync", kernel: false },
      ],
    };
    assert.equal(bucketOf(sample), "system calls: read");
  });

  test("tallies seconds at the sampling rate, every bucket listed", () => {
    const seconds = tally(samples, 2);
    assert.deepEqual([...seconds.keys()], [...BUCKETS]);
    assert.equal(seconds.get("SHA-256"), 0.5);
    assert.equal(seconds.get("JSON.parse"), 0);
    const total = [...seconds.values()].reduce((sum, value) => sum + value, 0);
    assert.equal(total, samples.length / 2);
  });
});
