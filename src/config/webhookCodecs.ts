import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { CASDU_MAX, IOA_MAX, TYPE_CODES } from '../mapping/types';
import { describe, nonEmptyString, refine } from './codecs';
import { safeUrl } from './urls';

/** The codecs of a webhook's fields (`webhookSettings.ts` declares which field uses which). */

/** Inclusive ranges of integers; a single value is a range of one. */
export type Ranges = readonly (readonly [number, number])[];

/** Errors show the URL without user information or query (CONTRACT 6.5): either may be a credential. */
export const webhookUrl = refine<string>('webhook URL', (u) => {
  if (typeof u !== 'string') return E.left(`must be an http(s) URL, got ${u === undefined ? 'nothing' : typeof u}`);
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return E.left('must be an http(s) URL, got a string that is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return E.left(`must be an http(s) URL, got ${JSON.stringify(`${url.protocol}//${url.host}`)}`);
  if (url.username !== '' || url.password !== '') {
    return E.left(`must not carry user information (${safeUrl(u)}): put credentials in a header, e.g. "Authorization"`);
  }
  return E.right(u);
});

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Headers that define the message's framing or the connection: the client sets them (CONTRACT 6.5). */
const RESERVED_HEADER = /^(content-length|transfer-encoding|connection|host|upgrade|te|trailer|keep-alive|proxy-.*)$/i;
// A header value may not carry CR, LF or NUL: they would split or end the header.
export const headers = refine<Record<string, string>>('headers', (u) => {
  if (u === null || typeof u !== 'object' || Array.isArray(u)) return E.left(`must be an object of header names to strings`);
  for (const [name, value] of Object.entries(u)) {
    if (/[\r\n]/.test(name)) return E.left(`header name ${JSON.stringify(name)} contains CR or LF`);
    if (!TOKEN.test(name)) return E.left(`header name ${JSON.stringify(name)} is not a valid HTTP header name`);
    if (RESERVED_HEADER.test(name)) return E.left(`header '${name}' may not be set: it defines the request's framing or connection`);
    if (typeof value !== 'string') return E.left(`header '${name}' must be a string`);
    // The value itself is never echoed: it may be a credential.
    if (/[\r\n\0]/.test(value)) return E.left(`value of header '${name}' contains CR or LF`);
  }
  return E.right(u as Record<string, string>);
});

const secretProblem = (u: unknown): string | undefined => {
  if (typeof u !== 'string' || u.length === 0) return 'must be a non-empty string';
  if (u.startsWith('whsec_') && !/^[A-Za-z0-9+/]+={0,2}$/.test(u.slice(6))) return 'whsec_ secret must be followed by base64';
  return undefined;
};

/** One secret, or a non-empty list of them (rotation: every listed secret signs, CONTRACT 6.4). */
export const secrets = refine<readonly string[]>('secret', (u) => {
  const list = Array.isArray(u) ? u : [u];
  if (list.length === 0) return E.left('must be a secret or a non-empty list of secrets');
  for (const [i, s] of list.entries()) {
    const problem = secretProblem(s);
    if (problem !== undefined) return E.left(Array.isArray(u) ? `[${i}] ${problem}` : problem);
  }
  return E.right(list as string[]);
});

/** One item of a filter list: an integer, or an inclusive `"A-B"` range, within `min`..`max`. */
const rangeItem = (min: number, max: number, allowed?: readonly number[]) =>
  refine<readonly [number, number]>('range', (x) => {
    let lo: number;
    let hi: number;
    if (typeof x === 'number' && Number.isInteger(x)) lo = hi = x;
    else {
      const m = typeof x === 'string' ? /^\s*([0-9]+)\s*-\s*([0-9]+)\s*$/.exec(x) : null;
      if (m === null) return E.left(`must be an integer or a range "A-B", got ${describe(x)}`);
      lo = Number(m[1]);
      hi = Number(m[2]);
      if (lo > hi) return E.left(`range ${JSON.stringify(x)} is empty`);
    }
    if (lo < min || hi > max) return E.left(`must lie within ${min} to ${max}, got ${describe(x)}`);
    if (allowed !== undefined && lo === hi && !allowed.includes(lo)) return E.left(`must be one of ${allowed.join(', ')}, got ${lo}`);
    return E.right([lo, hi] as const);
  });

/** `[10, "20-29"]`: a non-empty list of integers and ranges; errors name the item (`ioa[0]`). */
export const ranges = (min: number, max: number, allowed?: readonly number[]): t.Type<Ranges, unknown, unknown> => {
  const list = t.array(rangeItem(min, max, allowed));
  return new t.Type<Ranges, unknown, unknown>(
    'ranges',
    (u): u is Ranges => list.is(u) && u.length > 0,
    (u, c) =>
      Array.isArray(u) && u.length === 0
        ? t.failure(u, c, 'must be a non-empty list of integers and "A-B" ranges, got []')
        : list.validate(u, c),
    (a) => a,
  );
};

export const FilterCodec = t.exact(t.partial({ casdu: ranges(0, CASDU_MAX), ioa: ranges(0, IOA_MAX), types: ranges(1, 127, TYPE_CODES) }));

const fileName = nonEmptyString;
export const TlsCodec = t.exact(t.partial({ caFile: fileName, certFile: fileName, keyFile: fileName, serverName: nonEmptyString }));

/** A secret: never echoed in an error, whatever it holds. */
const secretString = refine<string>('secret string', (u) => (typeof u === 'string' && u.length > 0 ? E.right(u) : E.left('must be a non-empty string')));

export const OAuth2Codec = t.intersection([
  t.type({ tokenUrl: webhookUrl, clientId: nonEmptyString }),
  t.partial({ clientSecret: secretString, clientSecretFile: fileName, scope: nonEmptyString, audience: nonEmptyString, caFile: fileName }),
]);
