import * as E from 'fp-ts/Either';
import { show } from './convert';

// YYYY-MM-DD, optionally THH:MM[:SS[.fff…]] and a zone (Z, ±hh:mm or ±hhmm).
const ISO =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?$/;

/** Unix seconds below this magnitude, milliseconds from it on (CONTRACT 5.3). */
const SECONDS_LIMIT = 100_000_000_000;

const fromNumber = (n: number): Date | undefined => {
  if (!Number.isFinite(n)) return undefined;
  const d = new Date(Math.abs(n) < SECONDS_LIMIT ? n * 1000 : n);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

const fromIso = (s: string): Date | undefined => {
  const m = ISO.exec(s);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [
    number, number, number, number, number, number,
  ];
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  const check = new Date(0);
  check.setUTCFullYear(year, month - 1, day);
  check.setUTCHours(hour, minute, second, ms);
  const utc = check.getTime();
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return undefined;
  const zone = m[8];
  let offsetMinutes = 0;
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    const oh = Number(digits.slice(1, 3));
    const om = Number(digits.slice(3, 5));
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(utc - offsetMinutes * 60_000);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

/** CONTRACT 5.3: ISO 8601 (a string without a zone is UTC), Unix seconds or milliseconds, digit strings. */
export const readTimestamp = (raw: unknown, path: string): E.Either<string, string> => {
  let d: Date | undefined;
  if (typeof raw === 'number') d = fromNumber(raw);
  else if (typeof raw === 'string') d = /^[0-9]+$/.test(raw) ? fromNumber(Number(raw)) : fromIso(raw.trim());
  // years outside 0000–9999 have no RFC 3339 form (toISOString writes ±YYYYYY): invalid (CONTRACT 6.5)
  const year = d?.getUTCFullYear();
  return d === undefined || year === undefined || year < 0 || year > 9999
    ? E.left(`invalid timestamp at path '${path}': ${show(raw)}`)
    : E.right(d.toISOString());
};
