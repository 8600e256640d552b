/**
 * Timestamps of the state file. Writing always produces the one canonical form
 * `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds); reading accepts any RFC 3339
 * date-time, because `source.created` is copied from the manifest as written.
 */

// RFC 3339 §5.6 date-time. ABNF literals are case-insensitive, so `t`/`z` are allowed.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

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

function _parts(value: string): Rfc3339Parts | null {
  const m = RFC3339.exec(value);
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > _daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  // Fractions finer than a millisecond are truncated: Date cannot hold them.
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(1, 4).padEnd(3, "0"));
  return { year, month, day, hour, minute, second, millis, offsetMinutes };
}

function _daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
