import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * CONTRACT 7: `Authorization: Bearer <key>` or `X-Api-Key: <key>`. Keys are compared as
 * SHA-256 digests with `timingSafeEqual`, against every key without an early exit, so the time
 * taken tells nothing about how much of a key matched nor which key did. Returns the caller — the
 * key's place in the list, as `key-N` (N from 1) — or undefined when no key matched.
 */
export const makeApiKeyCheck = (keys: readonly string[]): ((req: IncomingMessage) => string | undefined) => {
  const digests = keys.map(digest);
  return (req) => {
    const auth = req.headers.authorization;
    const bearer = typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
    const header = req.headers['x-api-key'];
    const candidates = [bearer, typeof header === 'string' ? header : undefined].filter((c): c is string => c !== undefined);
    let matched = -1;
    for (const c of candidates) {
      const d = digest(c);
      for (let i = 0; i < digests.length; i++) if (timingSafeEqual(d, digests[i]!) && matched < 0) matched = i;
    }
    return matched < 0 ? undefined : `key-${matched + 1}`;
  };
};
