/**
 * Timestamps of the state file. Writing always produces the one canonical form
 * `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds); reading accepts any RFC 3339
 * date-time, because `source.created` is copied from the manifest as written.
 */

// RFC 3339 §5.6 date-time, `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`. ABNF literals
// are case-insensitive, so `t`/`z` are allowed. Digits are ASCII 0-9 only.

interface Rfc3339Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millis: number;
  /** Offset east of UTC in minutes. */
  offsetMinutes: number;
}

/**
 * The canonical state timestamp of `date`: UTC, whole seconds, `Z` suffix
 * (milliseconds are dropped, not rounded). Throws a RangeError for an invalid
 * Date or a year outside 0000–9999 (a programming error, not a user input).
 */
export function formatTimestamp(date: Date): string {
  const ms = date.getTime();
  const year = date.getUTCFullYear();
  if (Number.isNaN(ms) || year < 0 || year > 9999) {
    throw new RangeError(`cannot format ${String(date)} as an RFC 3339 UTC timestamp`);
  }
  return `${date.toISOString().slice(0, 19)}Z`;
}

/**
 * True when `value` is an RFC 3339 date-time: full date, `T`, full time with
 * optional fraction, and `Z` or a `±HH:MM` offset; every field in range
 * (real calendar days, leap years, second 60 for leap seconds).
 */
export function isRfc3339(value: string): boolean {
  return _parts(value) !== null;
}

/**
 * The instant `value` names. Throws a RangeError when it is not RFC 3339; callers
 * holding user input check {@link isRfc3339} first and raise their own error.
 * A leap second (`:60`) maps to the first instant of the next minute.
 */
export function parseRfc3339(value: string): Date {
  const parts = _parts(value);
  if (parts === null) throw new RangeError(`not an RFC 3339 timestamp: ${JSON.stringify(value)}`);
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  date.setUTCFullYear(parts.year, parts.month - 1, parts.day);
  date.setUTCHours(parts.hour, parts.minute - parts.offsetMinutes, parts.second, parts.millis);
  return date;
}

const ZERO = 0x30;

/** The number written by `count` ASCII digits at `at`, or -1 when any is not a digit. */
function _digits(value: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = value.charCodeAt(i) - ZERO;
    // NaN (past the end) fails this test too.
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

// Separators of `YYYY-MM-DDTHH:MM:SS` by position; `T` is checked apart (either case).
const SEPARATORS: ReadonlyArray<[number, string]> = [
  [4, "-"],
  [7, "-"],
  [13, ":"],
  [16, ":"],
];

// A hand scanner instead of a regex exec: the state holds hundreds of thousands
// of timestamps, and match arrays plus Number() per field dominated its validation.
function _parts(value: string): Rfc3339Parts | null {
  if (value.length < 20) return null;
  for (const [at, char] of SEPARATORS) if (value[at] !== char) return null;
  if (value[10] !== "T" && value[10] !== "t") return null;
  const year = _digits(value, 0, 4);
  const month = _digits(value, 5, 2);
  const day = _digits(value, 8, 2);
  const hour = _digits(value, 11, 2);
  const minute = _digits(value, 14, 2);
  const second = _digits(value, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > _daysInMonth(year, month)) {
    return null;
  }
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return null;
  let at = 19;
  let millis = 0;
  if (value[at] === ".") {
    const first = at + 1;
    at = first;
    while (_digits(value, at, 1) >= 0) at++;
    if (at === first) return null;
    // Fractions finer than a millisecond are truncated: Date cannot hold them.
    const shown = Math.min(at - first, 3);
    millis = _digits(value, first, shown) * 10 ** (3 - shown);
  }
  const offsetMinutes = _offset(value, at);
  if (offsetMinutes === null) return null;
  return { year, month, day, hour, minute, second, millis, offsetMinutes };
}

/** The offset that ends `value` at `at` (`Z`, `z` or `±HH:MM`) in minutes, or null. */
function _offset(value: string, at: number): number | null {
  const sign = value[at];
  if (sign === "Z" || sign === "z") return value.length === at + 1 ? 0 : null;
  if ((sign !== "+" && sign !== "-") || value.length !== at + 6 || value[at + 3] !== ":") {
    return null;
  }
  const hours = _digits(value, at + 1, 2);
  const mins = _digits(value, at + 4, 2);
  if (hours < 0 || hours > 23 || mins < 0 || mins > 59) return null;
  return (sign === "-" ? -1 : 1) * (hours * 60 + mins);
}

function _daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
