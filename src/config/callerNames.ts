import * as E from 'fp-ts/Either';

/**
 * CONTRACT 7.1, 7.2: who a caller is. A key's name (its own, or `key-N`) and a client certificate's
 * `cn:{CN}` live in one namespace that they can never share: a key's name holds no `:`, a
 * certificate's always begins with `cn:`. Pure, so that `npm run mutate` covers it.
 *
 * Invariants (each has rows in test/callers.names.test.ts):
 *  1. A key's name is letters, digits, `.`, `_`, `-`; a certificate's caller is `cn:` + its CN.
 *  2. An `Authentication:ApiKeys` entry with a `:` before its first `=` is refused, naming its
 *     position, never its text (it holds a key).
 *  3. `name=key` only when the name is a key name and the key holds a character other than `=`:
 *     a base64 key `abc==` stays one unnamed key, `key-N` (N its position in the list, from 1).
 */

/** An API key and the name a request log line shows for it: its own, or `key-N`. */
export interface ApiKey {
  readonly name: string;
  readonly key: string;
}

const KEY_NAME = /^[A-Za-z0-9._-]+$/;
const CERTIFICATE = 'cn:';

/** Is this a name a key can be given (invariant 1)? */
export const isKeyName = (name: string): boolean => KEY_NAME.test(name);

/** The caller a verified client certificate is (invariant 1). */
export const certificateCallerName = (cn: string): string => `${CERTIFICATE}${cn}`;

/**
 * The entries of `Authentication:ApiKeys` (comma-separated, blanks skipped), or why they cannot
 * be read — a message that names an entry by its position only.
 */
export const parseApiKeys = (value: string): E.Either<string, ApiKey[]> => {
  const entries = value.split(',').map((k) => k.trim()).filter((k) => k.length > 0);
  const keys: ApiKey[] = [];
  for (const [i, entry] of entries.entries()) {
    const eq = entry.indexOf('=');
    if (entry.slice(0, Math.max(eq, 0)).includes(':')) {
      return E.left(`entry ${i + 1} has a ':' before its first '=': a key's name holds only letters, digits, '.', '_' and '-' (a client certificate is the caller cn:{CN} by itself)`);
    }
    const name = entry.slice(0, eq);
    const key = entry.slice(eq + 1);
    keys.push(eq > 0 && isKeyName(name) && /[^=]/.test(key) ? { name, key } : { name: `key-${i + 1}`, key: entry });
  }
  return E.right(keys);
};

/** A name in `callers` that no caller can ever have (neither a key's name nor `cn:` and a CN), or undefined. */
export const callerNameProblem = (name: string): string | undefined =>
  isKeyName(name) || (name.startsWith(CERTIFICATE) && name.length > CERTIFICATE.length)
    ? undefined
    : `is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`;
