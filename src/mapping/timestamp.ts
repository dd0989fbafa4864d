import * as E from 'fp-ts/Either';
import { show } from './convert';

// YYYY-MM-DD, optionally THH:MM[:SS[.fff…]] and a zone: Z, or ±hh:mm / ±hhmm (sign, hours, minutes).
const ISO =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?(?:[Zz]|([+-])([0-9]{2}):?([0-9]{2}))?)?$/;

/** Unix seconds below this magnitude, milliseconds from it on (CONTRACT 5.3). */
const SECONDS_LIMIT = 100_000_000_000;

/** A number of seconds or milliseconds as a date; undefined for NaN, ±Infinity or out of Date's range. */
const fromNumber = (n: number): Date | undefined => {
  const d = new Date(Math.abs(n) < SECONDS_LIMIT ? n * 1000 : n);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

/** Days in `month` (1–12) of `year`: day 0 of the next month is the month's last. */
const daysIn = (year: number, month: number): number => {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
};

/**
 * Each field is checked against its own range, never rolled over into the next (10:60 is not
 * 11:00, February 30 not March 2): the time fields, the month, and a day the month has.
 */
const fromIso = (s: string): Date | undefined => {
  const m = ISO.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second, , , oh, om] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => Number(m[i] ?? 0)) as [
    number, number, number, number, number, number, number, number, number, number,
  ];
  if (hour > 23 || minute > 59 || second > 59 || oh > 23 || om > 59) return undefined;
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  // a zone ahead of UTC (+) is subtracted; Z and no zone are UTC
  const offsetMinutes = (m[8] === '-' ? -1 : 1) * (oh * 60 + om);
  return new Date(d.getTime() - offsetMinutes * 60_000);
};

/** CONTRACT 5.3: ISO 8601 (a string without a zone is UTC), Unix seconds or milliseconds, digit strings. */
export const readTimestamp = (raw: unknown, path: string): E.Either<string, string> => {
  let d: Date | undefined;
  if (typeof raw === 'number') d = fromNumber(raw);
  else if (typeof raw === 'string') d = /^[0-9]+$/.test(raw) ? fromNumber(Number(raw)) : fromIso(raw.trim());
  // years outside 0000–9999 have no RFC 3339 form (toISOString writes ±YYYYYY): invalid (CONTRACT 6.5)
  if (d === undefined || d.getUTCFullYear() < 0 || d.getUTCFullYear() > 9999) return E.left(`invalid timestamp at path '${path}': ${show(raw)}`);
  return E.right(d.toISOString());
};
