/**
 * Redis's refusal of a write for want of memory under `maxmemory-policy noeviction`:
 * `OOM command not allowed when used memory > 'maxmemory'.` — alone, or inside the text of an
 * `EXECABORT` (a command queued in a MULTI refused). CONTRACT 6.6.
 */
export const isOutOfMemory = (message: string): boolean => /\bOOM command not allowed\b/.test(message) || /^OOM\b/.test(message);
