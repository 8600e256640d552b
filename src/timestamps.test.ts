import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatTimestamp, isRfc3339, parseRfc3339 } from "./timestamps.js";

describe("formatTimestamp", () => {
  test("writes UTC with whole seconds and a Z suffix", () => {
    assert.equal(formatTimestamp(new Date(Date.UTC(2026, 5, 4, 12, 0, 0))), "2026-06-04T12:00:00Z");
  });

  test("drops milliseconds instead of rounding up", () => {
    assert.equal(formatTimestamp(new Date("2026-06-04T12:00:59.999Z")), "2026-06-04T12:00:59Z");
  });

  test("converts from any offset to UTC", () => {
    assert.equal(formatTimestamp(new Date("2026-06-04T23:30:00-02:00")), "2026-06-05T01:30:00Z");
  });

  test("refuses an invalid date", () => {
    assert.throws(() => formatTimestamp(new Date("nope")), RangeError);
  });

  test("output is RFC 3339 and parses back to the same second", () => {
    const date = new Date(Date.UTC(2024, 1, 29, 23, 59, 58));
    const text = formatTimestamp(date);
    assert.ok(isRfc3339(text));
    assert.equal(parseRfc3339(text).getTime(), date.getTime());
  });
});

describe("isRfc3339", () => {
  const valid = [
    "2026-06-04T12:00:00Z",
    "2026-06-04T12:00:00.5Z",
    "2026-06-04T12:00:00.123456789Z",
    "2026-06-04T12:00:00+02:00",
    "2026-06-04T12:00:00-23:59",
    "2026-06-04t12:00:00z",
    "2024-02-29T00:00:00Z",
    "2000-02-29T00:00:00Z",
    "2016-12-31T23:59:60Z",
  ];
  for (const value of valid) test(`accepts ${value}`, () => assert.equal(isRfc3339(value), true));

  const invalid = [
    "",
    "2026-06-04",
    "2026-06-04 12:00:00Z",
    "2026-06-04T12:00:00",
    "2026-06-04T12:00Z",
    "2026-6-04T12:00:00Z",
    "2026-06-04T12:00:00.Z",
    "2026-06-04T12:00:00+0200",
    "2026-06-04T12:00:00+24:00",
    "2026-06-04T12:00:00+02:60",
    "2026-13-01T00:00:00Z",
    "2026-00-01T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2026-06-04T24:00:00Z",
    "2026-06-04T12:60:00Z",
    "2026-06-04T12:00:61Z",
    " 2026-06-04T12:00:00Z",
    "2026-06-04T12:00:00Z\n",
    "+2026-06-04T12:00:00Z",
  ];
  for (const value of invalid) {
    test(`rejects ${JSON.stringify(value)}`, () => assert.equal(isRfc3339(value), false));
  }
});

describe("parseRfc3339", () => {
  test("applies the offset", () => {
    assert.equal(
      parseRfc3339("2026-06-04T12:00:00+02:30").toISOString(),
      "2026-06-04T09:30:00.000Z",
    );
    assert.equal(
      parseRfc3339("2026-06-04T22:00:00-03:00").toISOString(),
      "2026-06-05T01:00:00.000Z",
    );
  });

  test("keeps milliseconds of a fraction, truncating finer digits", () => {
    assert.equal(parseRfc3339("2026-06-04T12:00:00.98765Z").getUTCMilliseconds(), 987);
    assert.equal(parseRfc3339("2026-06-04T12:00:00.5Z").getUTCMilliseconds(), 500);
  });

  test("years below 100 stay in the first century", () => {
    assert.equal(parseRfc3339("0042-01-01T00:00:00Z").getUTCFullYear(), 42);
  });

  test("a leap second maps to the next minute", () => {
    assert.equal(parseRfc3339("2016-12-31T23:59:60Z").toISOString(), "2017-01-01T00:00:00.000Z");
  });

  test("throws for a value that is not RFC 3339", () => {
    assert.throws(() => parseRfc3339("yesterday"), /not an RFC 3339 timestamp: "yesterday"/);
  });
});

describe("the hand scanner agrees with the RFC 3339 grammar", () => {
  // The regex the scanner replaced, plus its range checks, as the reference.
  const GRAMMAR =
    /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
  const reference = (value: string): number | null => {
    const m = GRAMMAR.exec(value);
    if (m === null) return null;
    const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as number[];
    const probe = new Date(0);
    probe.setUTCFullYear(y ?? 0, (mo ?? 0) - 1, d ?? 0);
    if (probe.getUTCMonth() !== (mo ?? 0) - 1 || (h ?? 0) > 23 || (mi ?? 0) > 59 || (s ?? 0) > 60) {
      return null;
    }
    if (m[8] === undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return null;
    const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:00${(m[7] ?? "").slice(0, 4)}${m[8] ? "Z" : `${m[9]}${m[10]}:${m[11]}`}`;
    return Date.parse(iso) + (s ?? 0) * 1000;
  };
  const seeds = [
    "2026-06-04T12:00:00Z",
    "2024-02-29T23:59:60.123456+05:30",
    "0000-01-01t00:00:00.9z",
    "9999-12-31T23:59:59-23:59",
  ];
  const replacements = ["0", "1", "2", "3", "9", ":", "-", "+", ".", "T", "Z", "z", " ", "٣", ""];

  test("every one-character change is accepted or refused alike, with the same instant", () => {
    let compared = 0;
    for (const seed of seeds) {
      for (let i = 0; i <= seed.length; i++) {
        for (const r of replacements) {
          const value = seed.slice(0, i) + r + seed.slice(i + 1);
          const expected = reference(value);
          assert.equal(isRfc3339(value), expected !== null, value);
          if (expected !== null && !value.startsWith("0000")) {
            assert.equal(parseRfc3339(value).getTime(), expected, value);
          }
          compared++;
        }
      }
    }
    assert.ok(compared > 1000);
  });
});
