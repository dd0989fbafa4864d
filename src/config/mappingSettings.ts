import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import type * as t from 'io-ts';
import { compilePath, type CompiledPath } from '../mapping/path';
import { CASDU_MAX, IOA_MAX, TYPE_CODES, VALUE_TYPES, type Mapping, type TypeCode, type ValueType } from '../mapping/types';
import { describe, intIn, nonEmptyString, objectOf, optional, refine } from './codecs';

/**
 * A mapping's settings (CONTRACT 5): every field declared once, in `MAPPING_FIELDS` — its codec
 * (errors name `mappings[N].<field>`; paths are compiled here, once), its value after defaults, and
 * its part of the mapping's fingerprint. A new field is one more entry there (and its meaning in
 * the pure core: `src/mapping/`).
 */

const typeCode = refine<TypeCode>('type code', (u) =>
  (TYPE_CODES as readonly unknown[]).includes(u) ? E.right(u as TypeCode) : E.left(`must be one of 1, 13, 30, 32, 36, got ${describe(u)}`),
);

const valueType = refine<ValueType>('value type', (u) =>
  typeof u === 'string' && (VALUE_TYPES as readonly string[]).includes(u)
    ? E.right(u as ValueType)
    : E.left(`must be one of float, int, bool, string, got ${describe(u)}`),
);

const path = refine<CompiledPath>('path', (u) =>
  typeof u !== 'string'
    ? E.left(`must be a path string, got ${describe(u)}`)
    : pipe(compilePath(u), E.mapLeft((e) => e.message)),
);

interface MappingField<A> {
  readonly codec: t.Type<A, unknown, unknown>;
  readonly required?: true;
  /** The mapping's properties it gives, after defaults (the stored value absent: `undefined`). */
  readonly merge: (stored: A | undefined) => Partial<Mapping>;
  /** Its part of the mapping's fingerprint: two configurations are the same (CONTRACT 2) when every part is. */
  readonly fingerprint: (m: Mapping) => readonly unknown[];
}

const field = <A>(f: MappingField<A>): MappingField<A> => f;
const required = <K extends 'name' | 'topic' | 'casdu' | 'ioa' | 'type'>(key: K, codec: t.Type<Mapping[K], unknown, unknown>) =>
  field({ codec, required: true, merge: (v) => ({ [key]: v }) as Partial<Mapping>, fingerprint: (m) => [m[key]] });

/** Every field of a mapping, in the order errors and fingerprints list them. */
export const MAPPING_FIELDS = {
  name: required('name', nonEmptyString),
  topic: required('topic', nonEmptyString),
  casdu: required('casdu', intIn(0, CASDU_MAX)),
  ioa: required('ioa', intIn(0, IOA_MAX)),
  type: required('type', typeCode),
  valuePath: field({ codec: path, required: true, merge: (valuePath) => ({ valuePath: valuePath! }), fingerprint: (m) => [m.valuePath.source] }),
  valueType: field({ codec: optional(valueType), merge: (v) => ({ valueType: v ?? 'float' }), fingerprint: (m) => [m.valueType] }),
  timestampPath: field({
    codec: optional(path),
    merge: (timestampPath) => (timestampPath === undefined ? {} : { timestampPath }),
    fingerprint: (m) => [m.timestampPath?.source ?? null],
  }),
};

const FIELD_LIST = Object.entries(MAPPING_FIELDS) as Array<[string, MappingField<unknown>]>;

export const MappingCodec = objectOf(MAPPING_FIELDS as unknown as Record<string, MappingField<unknown>>);

/** A mapping as stored, decoded, with every field's default. */
export const mappingWithDefaults = (stored: Readonly<Record<string, unknown>>): Mapping =>
  Object.assign({}, ...FIELD_LIST.map(([k, f]) => f.merge(stored[k]))) as Mapping;

export const mappingFingerprint = (m: Mapping): unknown[] => FIELD_LIST.flatMap(([, f]) => f.fingerprint(m));

/** Two mappings of one topic may not share a name: each problem names the later one and where the first is. */
export const duplicateNames = (mappings: readonly Mapping[]): string[] => {
  const seen = new Map<string, number>();
  return mappings.flatMap((m, i) => {
    const key = JSON.stringify([m.topic, m.name]);
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, i);
      return [];
    }
    return [`mappings[${i}].name: duplicate name '${m.name}' in topic '${m.topic}' (first at mappings[${first}])`];
  });
};
