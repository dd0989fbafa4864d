import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { certificateCallerName } from '../../config/callerNames';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** An API key and the name the request log shows for it (CONTRACT 7.1). */
export interface NamedKey {
  readonly name: string;
  readonly key: string;
}

/**
 * CONTRACT 7: `Authorization: Bearer <key>` or `X-Api-Key: <key>`. Keys are compared as
 * SHA-256 digests with `timingSafeEqual`, against every key without an early exit, so the time
 * taken tells nothing about how much of a key matched nor which key did. Returns the caller — the
 * key's name (CONTRACT 7.1: its own, or `key-N`) — or undefined when no key matched. Never the key.
 */
export const makeApiKeyCheck = (keys: readonly NamedKey[]): ((req: IncomingMessage) => string | undefined) => {
  const digests = keys.map((k) => digest(k.key));
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
    return matched < 0 ? undefined : keys[matched]!.name;
  };
};

/** The subject CN of a socket's client certificate, verified against the client CA; looked up once per connection. */
const certCallers = new WeakMap<object, string | null>();

/**
 * CONTRACT 7.1: a request over https whose connection presented a client certificate that the
 * client CA verifies is authenticated like an API key; its caller is `cn:` and the certificate's
 * subject CN (`certificateCallerName`), a name no key can have: a key's name holds no `:`.
 * Undefined for plain http, no certificate, or one that did not verify (`optional` lets the
 * handshake through).
 */
export const certificateCaller = (req: IncomingMessage): string | undefined => {
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.encrypted !== true) return undefined;
  let caller = certCallers.get(socket);
  if (caller === undefined) {
    const cert = socket.authorized === true ? socket.getPeerCertificate?.() : undefined;
    const cn = cert !== undefined && cert !== null && 'subject' in cert ? cert.subject?.CN : undefined;
    caller = typeof cn === 'string' && cn !== '' ? certificateCallerName(cn) : null;
    certCallers.set(socket, caller);
  }
  return caller ?? undefined;
};
