/**
 * Decoding of Redis's RESP2 reply shapes that the stream code reads, in one place: never cast. The
 * XINFO readers are total (any reply, however malformed, decodes to something); the entry and ID
 * decoders throw on a protocol surprise, so that the write or read that got it fails and is retried.
 */

/** A flat `[key, value, key, value, …]` reply (RESP2) as a record. */
export const flatRecord = (u: unknown): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  if (!Array.isArray(u)) return out;
  for (let i = 0; i + 1 < u.length; i += 2) out[String(u[i])] = u[i + 1];
  return out;
};

/** A number, or a number written as a string; null for anything else. */
export const numberOrNull = (u: unknown): number | null => (typeof u === 'number' ? u : typeof u === 'string' && u !== '' ? Number(u) : null);

/**
 * Redis's refusal of a write for want of memory under `maxmemory-policy noeviction`:
 * `OOM command not allowed when used memory > 'maxmemory'.` — alone, or inside the text of an
 * `EXECABORT` (a command queued in a MULTI refused). CONTRACT 6.6.
 */
export const isOutOfMemory = (message: string): boolean => /\bOOM command not allowed\b/.test(message) || /^OOM\b/.test(message);

const isStringArray = (u: unknown): u is string[] => Array.isArray(u) && u.every((x) => typeof x === 'string');

/** One entry of an `XRANGE` reply: its ID and flat field list. */
export interface RangeEntry {
  readonly id: string;
  readonly fields: readonly string[];
}

/** An `XRANGE`/`XREVRANGE` reply under RESP2: `[[id, [field, value, …]], …]`. Anything else is a protocol surprise: thrown. */
export const decodeRange = (u: unknown): RangeEntry[] => {
  if (!Array.isArray(u)) throw new Error(`unexpected XRANGE reply: ${JSON.stringify(u)?.slice(0, 200)}`);
  return u.map((e: unknown) => {
    if (Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && isStringArray(e[1]) && e[1].length % 2 === 0) return { id: e[0], fields: e[1] };
    throw new Error(`unexpected XRANGE entry: ${JSON.stringify(e)?.slice(0, 200)}`);
  });
};

/** A reply that must be a stream ID (`XADD`'s). Anything else is thrown. */
export const decodeStreamId = (u: unknown): string => {
  if (typeof u === 'string' && /^[0-9]+-[0-9]+$/.test(u)) return u;
  throw new Error(`unexpected stream ID reply: ${JSON.stringify(u)?.slice(0, 200)}`);
};
