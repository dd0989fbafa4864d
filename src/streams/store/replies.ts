/**
 * Decoding of Redis's RESP2 reply shapes that the stream code reads (XINFO and the like). Total:
 * any reply, however malformed, decodes to something.
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
