import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import jsonata from 'jsonata';
import { describe, refine } from './codecs';
import { extraFieldKey } from './lineKeys';

/**
 * A webhook's `format` and `compression` (CONTRACT 4.7): what they may say, checked when the
 * configuration is decoded — a JSONata expression is compiled here, so that one that does not
 * compile is a config error naming `webhooks[N].format.expression`. What a format does with a
 * batch is `src/streams/webhook/body.ts`.
 */

/** Units of an `influx-line` timestamp; `n`/`ns` and `u`/`us` are one unit each. */
export type Precision = 'ns' | 'us' | 'ms' | 's';
const PRECISIONS: Readonly<Record<string, Precision>> = { n: 'ns', ns: 'ns', u: 'us', us: 'us', ms: 'ms', s: 's' };
/** A precision as written, or undefined when it is none of `ns`, `n`, `us`, `u`, `ms`, `s`. */
export const precisionOf = (s: string): Precision | undefined => (Object.hasOwn(PRECISIONS, s) ? PRECISIONS[s] : undefined);

export type FormatSettings =
  | { readonly type: 'datapoints' }
  | { readonly type: 'ndjson' }
  | { readonly type: 'influx-line'; readonly measurement?: string; readonly precision?: Precision; readonly fields?: readonly string[] }
  | { readonly type: 'jsonata'; readonly expression: string; readonly output?: 'json' | 'ndjson'; readonly contentType?: string };

export type Compression = 'none' | 'gzip';

const precision = refine<Precision>('precision', (u) => {
  const p = typeof u === 'string' ? precisionOf(u) : undefined;
  return p === undefined ? E.left(`must be one of "ns", "n", "us", "u", "ms", "s", got ${describe(u)}`) : E.right(p);
});

/** Line protocol cannot carry these in a measurement (CONTRACT 4.7). */
const measurement = refine<string>('measurement', (u) => {
  if (typeof u !== 'string' || u.length === 0) return E.left(`must be a non-empty string, got ${describe(u)}`);
  if (u.endsWith('\\')) return E.left('must not end in "\\"');
  if (u.startsWith('#')) return E.left('must not start with "#" (a line starting with it is a comment)');
  if (/[\r\n]/.test(u)) return E.left('must not hold a line break');
  return E.right(u);
});

/**
 * `format.fields` (CONTRACT 4.7): the extra fields to write, in order; `[]` for none. A name that can
 * never be an extra field (a reserved one, also once escaped, or one that escapes to nothing) or a
 * name given twice is refused, naming it.
 */
const fields = refine<readonly string[]>('list of field names', (u) => {
  if (!Array.isArray(u)) return E.left(`must be a list of field names, got ${describe(u)}`);
  const seen = new Set<string>();
  for (const [i, name] of u.entries()) {
    if (typeof name !== 'string') return E.left(`[${i}] must be a field name (a string), got ${describe(name)}`);
    if (extraFieldKey(name) === undefined) return E.left(`[${i}] ${JSON.stringify(name)} can never be an extra field (casdu, ioa, source, type, value, value_text, timestamp and time are written otherwise, also once escaped)`);
    if (seen.has(name)) return E.left(`[${i}] ${JSON.stringify(name)} is given twice`);
    seen.add(name);
  }
  return E.right(u as string[]);
});

/** A JSONata 2 expression that compiles: its message and position otherwise. */
const expression = refine<string>('JSONata expression', (u) => {
  if (typeof u !== 'string' || u.trim().length === 0) return E.left(`must be a non-empty JSONata expression, got ${describe(u)}`);
  try {
    jsonata(u);
    return E.right(u);
  } catch (err) {
    const e = err as { message?: string; position?: number };
    return E.left(`does not compile: ${e.message ?? String(err)}${e.position !== undefined ? ` (at character ${e.position})` : ''}`);
  }
});

const oneOf = <A extends string>(name: string, values: readonly A[]) =>
  refine<A>(name, (u) => (typeof u === 'string' && (values as readonly string[]).includes(u) ? E.right(u as A) : E.left(`must be one of ${values.map((v) => `"${v}"`).join(', ')}, got ${describe(u)}`)));

const contentType = refine<string>('content type', (u) =>
  typeof u === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[^\r\n\0]*)?$/.test(u)
    ? E.right(u)
    : E.left(`must be a media type such as "application/json", got ${describe(u)}`));

const BY_TYPE: Readonly<Record<FormatSettings['type'], t.Mixed>> = {
  datapoints: t.exact(t.type({ type: t.literal('datapoints') })),
  ndjson: t.exact(t.type({ type: t.literal('ndjson') })),
  'influx-line': t.exact(t.intersection([t.type({ type: t.literal('influx-line') }), t.partial({ measurement, precision, fields })])),
  jsonata: t.exact(t.intersection([
    t.type({ type: t.literal('jsonata'), expression }),
    t.partial({ output: oneOf('output', ['json', 'ndjson'] as const), contentType }),
  ])),
};
const TYPES = Object.keys(BY_TYPE);

/** `{ "type": …, … }`: the type decides which other fields it may have (others are dropped, as elsewhere). */
export const FormatCodec = new t.Type<FormatSettings, unknown, unknown>(
  'format',
  (u): u is FormatSettings => u !== null && typeof u === 'object' && BY_TYPE[(u as { type: FormatSettings['type'] }).type]?.is(u) === true,
  (u, c) => {
    if (u === null || typeof u !== 'object' || Array.isArray(u)) return t.failure(u, c, `must be an object with a "type" (${TYPES.join(', ')}), got ${describe(u)}`);
    const type = (u as { type?: unknown }).type;
    const codec = typeof type === 'string' && Object.hasOwn(BY_TYPE, type) ? BY_TYPE[type as FormatSettings['type']] : undefined;
    if (codec === undefined) {
      return t.failure(type, [...c, { key: 'type', type: t.string, actual: type }], `must be one of ${TYPES.map((x) => `"${x}"`).join(', ')}, got ${describe(type)}`);
    }
    // errors name `format.<field>`: the context's last entry gets the inner intersection's type, whose member indices the report skips
    const inner = (codec as t.Mixed & { type?: t.Mixed }).type ?? codec;
    return codec.validate(u, [...c.slice(0, -1), { ...c[c.length - 1]!, type: inner }]) as t.Validation<FormatSettings>;
  },
  (a) => a,
);

export const CompressionCodec = oneOf<Compression>('compression', ['none', 'gzip']);

/**
 * The precision of an `influx-line` webhook's timestamps: the URL's `precision` query parameter
 * when it has one, else the format's, else `ns` (CONTRACT 4.7); or the problems, each naming its field.
 */
export const influxPrecision = (url: string, f: { readonly precision?: Precision }, at: string): E.Either<string[], Precision> => {
  let given: string[];
  try {
    given = new URL(url).searchParams.getAll('precision');
  } catch {
    return E.right(f.precision ?? 'ns'); // the URL's own codec says what is wrong with it
  }
  if (given.length === 0) return E.right(f.precision ?? 'ns');
  const fromUrl = given.length === 1 ? precisionOf(given[0]!) : undefined;
  if (fromUrl === undefined) {
    return E.left([`${at}.url: its "precision" must be given once, as one of ns, n, us, u, ms, s, got ${given.length === 1 ? JSON.stringify(given[0]) : `${given.length} of them`}`]);
  }
  if (f.precision !== undefined && f.precision !== fromUrl) {
    return E.left([`${at}.format.precision: "${f.precision}" is not the unit of the URL's precision ("${given[0]}"): timestamps would be stored in the wrong unit`]);
  }
  return E.right(fromUrl);
};
