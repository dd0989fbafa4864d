import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * CONTRACT 7: `Authorization: Bearer <key>` or `X-Api-Key: <key>`. Keys are compared as
 * SHA-256 digests with `timingSafeEqual`, against every key without an early exit, so the time
 * taken tells nothing about how much of a key matched nor which key did.
 */
export const makeApiKeyCheck = (keys: readonly string[]): ((req: IncomingMessage) => boolean) => {
  const digests = keys.map(digest);
  return (req) => {
    const auth = req.headers.authorization;
    const bearer = typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
    const header = req.headers['x-api-key'];
    const candidates = [bearer, typeof header === 'string' ? header : undefined].filter((c): c is string => c !== undefined);
    let ok = false;
    for (const c of candidates) {
      const d = digest(c);
      for (const k of digests) ok = timingSafeEqual(d, k) || ok;
    }
    return ok;
  };
};
