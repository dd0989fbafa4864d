import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { CASDU_MAX } from '../mapping/types';
import { callerNameProblem } from './callerNames';
import { describe, refine } from './codecs';
import { ranges, type Ranges } from './webhookCodecs';

/**
 * CONTRACT 7.2: `callers`, the managed setting that says what each named caller (7.1) may do and
 * how often. Pure: the codec, the defaults, and the questions a route asks of a caller's grant.
 */

/** What one caller is granted; a field left out grants nothing of its kind. */
export interface CallerGrant {
  /** Topics it may `POST` (exact names, and prefixes: an entry `p*` is stored as `{ prefix: 'p' }`). */
  readonly topics?: readonly TopicRule[];
  /** The casdus it may read with `GET /api/datapoints`. */
  readonly casdu?: Ranges;
  /** `GET /api/webhooks` and interrogation requests. */
  readonly operate: boolean;
  /** At most this many requests in each one-second window, counted across replicas. */
  readonly maxRequestsPerSecond?: number;
}

export type TopicRule = { readonly exact: string } | { readonly prefix: string };

/** Caller name → grant; undefined in the settings when `callers` is absent (every caller may do everything). */
export type Callers = ReadonlyMap<string, CallerGrant>;

/** `plant-a` or `plant-a/*`: a `*` may only end an entry (it stands for any rest of the name). */
// Stryker disable next-line StringLiteral: an io-ts type's name shows only in an error without a message, and every error here has one
const topicRule = refine<TopicRule>('topic rule', (u) => {
  if (typeof u !== 'string' || u.length === 0) return E.left(`must be a topic name or a prefix ending in "*", got ${describe(u)}`);
  const star = u.indexOf('*');
  if (star >= 0 && star !== u.length - 1) return E.left(`a "*" may only end an entry (a prefix), got ${describe(u)}`);
  return E.right(star < 0 ? { exact: u } : { prefix: u.slice(0, -1) });
});

/** A rate: a positive integer of requests a second (CONTRACT 7.2; a fixed window lets whole requests through). */
// Stryker disable next-line StringLiteral: an io-ts type's name shows only in an error without a message, and every error here has one
const rate = refine<number>('requests per second', (u) =>
  Number.isInteger(u) && (u as number) >= 1 ? E.right(u as number) : E.left(`must be a positive integer, got ${describe(u)}`));

const nonEmptyList = <A>(item: t.Type<A, unknown, unknown>, what: string) => {
  const list = t.array(item);
  // Stryker disable all: the name, the type guard and the encoder of an io-ts type; decoding (all the settings do) uses none of them
  return new t.Type<readonly A[], unknown, unknown>(
    `non-empty list of ${what}`,
    (u): u is readonly A[] => list.is(u) && u.length > 0,
    // Stryker restore all
    (u, c) => (Array.isArray(u) && u.length === 0 ? t.failure(u, c, `must be a non-empty list of ${what}, got []`) : list.validate(u, c)),
    // Stryker disable next-line all: the encoder, never used
    (a) => a,
  );
};

const GrantCodec = t.exact(t.partial({
  topics: nonEmptyList(topicRule, 'topic names and prefixes'),
  casdu: ranges(0, CASDU_MAX),
  operate: t.boolean,
  maxRequestsPerSecond: rate,
}));

/** `callers`: an object from caller name to its grant; errors name the caller (`callers.scada-a.topics[1]`). */
export const CallersCodec = new t.Type<Callers, unknown, unknown>(
  // Stryker disable next-line all: the name and the type guard of an io-ts type; decoding uses neither
  'callers', (u): u is Callers => u instanceof Map,
  (u, c) => {
    if (u === null || typeof u !== 'object' || Array.isArray(u)) return t.failure(u, c, `must be an object from caller name to permissions, got ${describe(u)}`);
    const out = new Map<string, CallerGrant>();
    const errors: t.Errors = [];
    // own keys only: a name such as "__proto__" or "constructor" is a caller like any other
    for (const name of Object.keys(u)) {
      const value = (u as Record<string, unknown>)[name];
      const problem = callerNameProblem(name);
      if (problem !== undefined) {
        errors.push({ value, context: c, message: `${JSON.stringify(name)} ${problem}` });
        continue;
      }
      const decoded = GrantCodec.validate(value, [...c, { key: name, type: GrantCodec, actual: value }]);
      if (E.isLeft(decoded)) errors.push(...decoded.left);
      else out.set(name, { ...decoded.right, operate: decoded.right.operate ?? false });
    }
    return errors.length > 0 ? t.failures(errors) : t.success(out);
  },
  // Stryker disable next-line all: the encoder, never used
  (a) => a,
);

/** Whether a grant lets its caller write `topic` (CONTRACT 7.2: exact names and `prefix*`). */
export const mayWrite = (g: CallerGrant, topic: string): boolean => {
  for (const r of g.topics ?? []) if ('exact' in r ? r.exact === topic : topic.startsWith(r.prefix)) return true;
  return false;
};

/** The grants as the fingerprint and `GET`-style views show them: sorted by name, the rules as written. */
export const callersView = (callers: Callers): Array<[string, Record<string, unknown>]> =>
  // Stryker disable next-line EqualityOperator: the names are a map's keys, never equal, so < and <= sort alike
  [...callers.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, g]) => [name, {
    ...(g.topics !== undefined ? { topics: g.topics.map((r) => ('exact' in r ? r.exact : `${r.prefix}*`)) } : {}),
    ...(g.casdu !== undefined ? { casdu: g.casdu.map(([lo, hi]) => (lo === hi ? lo : `${lo}-${hi}`)) } : {}),
    operate: g.operate,
    ...(g.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: g.maxRequestsPerSecond } : {}),
  }]);

/**
 * CONTRACT 7.2: `callers` without any authentication configured is a config error (nobody could
 * be told apart). Checked where the startup parameters are known: at start, on a change, and by
 * `config validate` / `config set`.
 */
export const callerProblems = (callers: Callers | undefined, auth: { readonly apiKeys: readonly unknown[]; readonly clientCertificates: string }): string[] =>
  callers !== undefined && auth.apiKeys.length === 0 && auth.clientCertificates === 'off'
    ? ['callers: set, but no authentication is configured: callers are named by Authentication:ApiKeys or by client certificates (Http:ClientCaFile)']
    : [];
