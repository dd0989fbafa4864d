import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import type * as t from 'io-ts';
import { compilePath, isObject, type CompiledPath } from '../mapping/path';
import { CASDU_MAX, IOA_MAX, SCALED_TYPES, TYPE_CODES, VALUE_TYPES, type ArrayMode, type MappedValue, type Mapping, type Scale, type TypeCode, type ValueType } from '../mapping/types';
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

/** CONTRACT 5.5: raw value text → a number, boolean or string; `__proto__` is never a key that matches (left out). */
const valueMap = refine<ReadonlyMap<string, MappedValue>>('value map', (u) => {
  if (!isObject(u)) return E.left(`must be an object from raw value text to the value used in its place, got ${describe(u)}`);
  const map = new Map<string, MappedValue>();
  for (const [k, v] of Object.entries(u)) {
    if (!(typeof v === 'boolean' || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))) {
      return E.left(`must map to numbers, booleans or strings; ${JSON.stringify(k)} maps to ${describe(v)}`);
    }
    if (k !== '__proto__') map.set(k, v);
  }
  return map.size > 0 ? E.right(map) : E.left('must have at least one entry');
});

/** CONTRACT 5.5: how a mapping takes an array body — on every item (`each`, the default), or once, as one document (`whole`). */
const arrayMode = refine<ArrayMode>('array mode', (u) =>
  u === 'each' || u === 'whole' ? E.right(u) : E.left(`must be "each" (every item of an array body) or "whole" (the array as one document), got ${describe(u)}`));

const SCALE_SHAPES = 'a scale is {"factor", "offset"} or {"raw", "scaled", "clamp"}';
const finite = (u: unknown): u is number => typeof u === 'number' && Number.isFinite(u);
const pair = (u: unknown): u is [number, number] => Array.isArray(u) && u.length === 2 && finite(u[0]) && finite(u[1]);

/** CONTRACT 5.5: `{factor, offset}` (defaults 1 and 0), or `{raw, scaled, clamp}` with two different raw ends. */
const scale = refine<Scale>('scale', (u) => {
  if (!isObject(u)) return E.left(`must be an object (${SCALE_SHAPES}), got ${describe(u)}`);
  const keys = Object.keys(u);
  const linear = keys.some((k) => k === 'factor' || k === 'offset');
  const range = keys.some((k) => k === 'raw' || k === 'scaled' || k === 'clamp');
  const unknown = keys.find((k) => !['factor', 'offset', 'raw', 'scaled', 'clamp'].includes(k));
  if (unknown !== undefined) return E.left(`unknown field ${JSON.stringify(unknown)}: ${SCALE_SHAPES}`);
  if (linear === range) return E.left(linear ? `give factor and offset, or raw and scaled, not both: ${SCALE_SHAPES}` : `is empty: ${SCALE_SHAPES}`);
  if (linear) {
    for (const k of ['factor', 'offset'] as const) if (u[k] !== undefined && !finite(u[k])) return E.left(`${k} must be a finite number, got ${describe(u[k])}`);
    return E.right({ factor: (u.factor as number | undefined) ?? 1, offset: (u.offset as number | undefined) ?? 0 });
  }
  for (const k of ['raw', 'scaled'] as const) if (!pair(u[k])) return E.left(`${k} must be two finite numbers [from, to], got ${describe(u[k])}`);
  if (u.clamp !== undefined && typeof u.clamp !== 'boolean') return E.left(`clamp must be true or false, got ${describe(u.clamp)}`);
  const raw = u.raw as [number, number];
  if (raw[0] === raw[1]) return E.left(`raw's two ends are equal (${raw[0]}): there is no range to scale from`);
  return E.right({ raw, scaled: u.scaled as [number, number], clamp: u.clamp === true });
});

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
  valueMap: field({
    codec: optional(valueMap),
    merge: (v) => (v === undefined ? {} : { valueMap: v }),
    fingerprint: (m) => [m.valueMap === undefined ? null : JSON.stringify([...m.valueMap])],
  }),
  scale: field({
    codec: optional(scale),
    merge: (v) => (v === undefined ? {} : { scale: v }),
    fingerprint: (m) => [m.scale === undefined ? null : JSON.stringify(m.scale)],
  }),
  array: field({ codec: optional(arrayMode), merge: (v) => ({ array: v ?? 'each' }), fingerprint: (m) => [m.array] }),
};

const FIELD_LIST = Object.entries(MAPPING_FIELDS) as Array<[string, MappingField<unknown>]>;

export const MappingCodec = objectOf(MAPPING_FIELDS as unknown as Record<string, MappingField<unknown>>);

/** A mapping as stored, decoded, with every field's default. */
export const mappingWithDefaults = (stored: Readonly<Record<string, unknown>>): Mapping =>
  Object.assign({}, ...FIELD_LIST.map(([k, f]) => f.merge(stored[k]))) as Mapping;

/** A mapping as `GET /api/mappings` shows it (CONTRACT 6.8): its fields as configured, defaults filled in. */
export const mappingShown = (m: Mapping): Record<string, unknown> => ({
  topic: m.topic, name: m.name, casdu: m.casdu, ioa: m.ioa, type: m.type, valuePath: m.valuePath.source, valueType: m.valueType,
  ...(m.timestampPath !== undefined ? { timestampPath: m.timestampPath.source } : {}),
  ...(m.valueMap !== undefined ? { valueMap: Object.fromEntries(m.valueMap) } : {}),
  ...(m.scale !== undefined ? { scale: m.scale } : {}),
  array: m.array,
});

export const mappingFingerprint = (m: Mapping): unknown[] => FIELD_LIST.flatMap(([, f]) => f.fingerprint(m));

/**
 * What no field's codec can see alone: names shared within a topic, a scale on a type that is no
 * number, a `whole` mapping whose path does not begin with a selector or an index (CONTRACT 5.5).
 */
export const mappingProblems = (mappings: readonly Mapping[]): string[] => [
  ...duplicateNames(mappings),
  ...mappings.flatMap((m, i) => [
    ...(m.scale !== undefined && !SCALED_TYPES.includes(m.type) ? [`mappings[${i}].scale: only types 13 and 36 are scaled, this mapping's type is ${m.type}`] : []),
    ...(m.array === 'whole' ? wholePathProblems(m, i) : []),
  ]),
];

/** A `whole` mapping reads the array as one document: each of its paths picks an item first. */
const wholePathProblems = (m: Mapping, i: number): string[] =>
  ([['valuePath', m.valuePath], ['timestampPath', m.timestampPath]] as const).flatMap(([name, p]) =>
    p === undefined || p.source.startsWith('[')
      ? []
      : [`mappings[${i}].${name}: with "array": "whole" the path reads the array as one document and begins with a selector or an index ([id=T1].temp_raw, [0].v, [-1].ts), got '${p.source}'`]);

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
