import * as E from 'fp-ts/Either';
import { convertTo, numberOf, readAs, show, SHOWN_MAX } from './convert';
import { lookup, valueText } from './path';
import { cut } from './render';
import { scaled } from './scale';
import { readTimestamp } from './timestamp';
import type { Payload } from './payload';
import type { DataPoint, Mapping, MappedValue, Scale, TypeCode } from './types';
import { WrittenNumber } from './writtenNumbers';

export interface MappingFailure {
  readonly mapping: Mapping;
  readonly error: string;
  /** The item of an array body it failed on (CONTRACT 5.5); absent for an object body. */
  readonly item?: number;
}

export interface MappedPoint {
  readonly mapping: Mapping;
  readonly point: DataPoint;
  /** The point as JSON, computed once: the same text goes to the process image and the stream. */
  readonly json: string;
}

/** Every failure, and the mappings that did succeed (on every item of an array): the 422 body lists both. */
export interface MappingFailures {
  readonly failed: readonly MappingFailure[];
  readonly succeeded: readonly Mapping[];
}

const readValue = (m: Mapping, body: unknown): E.Either<string, boolean | number> => {
  const path = m.valuePath.source;
  const found = lookup(m.valuePath, body);
  if (!found.found) return E.left(`value not found at path '${path}'`);
  if (found.value === null) return E.left(`value at path '${path}' is null`);
  // plain Either checks, no pipe: fp-ts's `chain` copies its arguments on every call, and this runs
  // for every mapping of every item (about 5 % of a 100-item request's profile went to it)
  const raw = m.valueMap === undefined ? E.right(found.value) : mapped(m.valueMap, found.value, path);
  if (E.isLeft(raw)) return raw;
  const read = readAs(m.valueType, raw.right, path);
  if (E.isLeft(read)) return m.valueMap === undefined ? read : E.left(mappedNotRead(m, found.value, raw.right as MappedValue, read.left));
  return m.scale === undefined ? convertTo(m.type, read.right, path) : scaleThenConvert(m.type, m.scale, read.right, path);
};

/** CONTRACT 5.5: the raw value's text looked up in the value map (own keys only: it is a Map). */
const mapped = (map: ReadonlyMap<string, MappedValue>, raw: unknown, path: string): E.Either<string, MappedValue> => {
  const text = valueText(raw);
  // Stryker disable next-line ConditionalExpression: a Map of strings has nothing under undefined either
  const found = text === undefined ? undefined : map.get(text);
  return found !== undefined ? E.right(found) : E.left(`value "${mapText(raw, text)}" at path '${path}' is not in the value map`);
};

/**
 * CONTRACT 5.5: `valueType` reads what the value map gave, not the raw value — the error says so,
 * and which `valueType` reads it (`{"RUN": true}` without `"valueType": "bool"`).
 */
const mappedNotRead = (m: Mapping, raw: unknown, given: MappedValue, error: string): string => {
  const fits = typeof given === 'boolean' ? 'bool' : typeof given === 'string' ? 'string' : 'float';
  return `${error}: valueType "${m.valueType}" reads what the value map gave for "${mapText(raw, valueText(raw))}" (set "valueType": "${fits}")`;
};

/** The raw value's text as an error shows it: as it is, cut like every value shown (CONTRACT 6.5); what has no text, as JSON. */
const mapText = (raw: unknown, text: string | undefined): string => {
  return cut(text ?? (raw instanceof WrittenNumber ? raw.literal : show(raw)), SHOWN_MAX);
};

/** CONTRACT 5.5: scaled after the value is read, before the type's conversion; a result that is not finite fails. */
const scaleThenConvert = (type: TypeCode, scale: Scale, v: unknown, path: string): E.Either<string, boolean | number> => {
  const n = numberOf(v);
  // what is no number fails the type's conversion, with its text
  if (n === undefined) return convertTo(type, v, path);
  const y = scaled(scale, n);
  return Number.isFinite(y) ? convertTo(type, y, path) : E.left(`value ${show(v)} at path '${path}' scales to a number that is not finite`);
};

/** Timestamps read so far in one request, by path: mappings of a topic often share one. */
type TimeCache = Map<string, E.Either<string, string>>;

const readTime = (m: Mapping, body: unknown, receivedAt: string, cache: TimeCache): E.Either<string, string> => {
  if (m.timestampPath === undefined) return E.right(receivedAt);
  const path = m.timestampPath.source;
  const cached = cache.get(path);
  if (cached !== undefined) return cached;
  const found = lookup(m.timestampPath, body);
  const result = !found.found
    ? E.left(`timestamp not found at path '${path}'`)
    : found.value === null
      ? E.left(`timestamp at path '${path}' is null`)
      : readTimestamp(found.value, path);
  cache.set(path, result);
  return result;
};

/** One mapping applied to a body. Never throws, whatever the body. */
export const applyMapping = (
  m: Mapping,
  body: unknown,
  receivedAt: string,
  source: string,
  cache: TimeCache = new Map(),
): E.Either<MappingFailure, MappedPoint> => {
  // Plain Either checks rather than Do-notation: this runs for every mapping of every request.
  const value = readValue(m, body);
  if (E.isLeft(value)) return E.left({ mapping: m, error: value.left });
  const timestamp = readTime(m, body, receivedAt, cache);
  if (E.isLeft(timestamp)) return E.left({ mapping: m, error: timestamp.left });
  const point: DataPoint = { casdu: m.casdu, ioa: m.ioa, type: m.type, value: value.right, timestamp: timestamp.right, source };
  return E.right({ mapping: m, point, json: JSON.stringify(point) });
};

/**
 * Every mapping applied to every item (never stopping at the first failure): every data point,
 * items in order and mappings in order within an item; or every failure, in the same order (with
 * its item when `indexed`), and the mappings that succeeded on every item.
 */
const applyAll = (
  mappings: readonly Mapping[], items: readonly unknown[], receivedAt: string, source: string, indexed: boolean,
): E.Either<MappingFailures, readonly MappedPoint[]> => {
  const points: MappedPoint[] = [];
  const failed: MappingFailure[] = [];
  const failing = new Set<Mapping>();
  items.forEach((item, i) => {
    // each item has its own timestamps
    const cache: TimeCache = new Map();
    for (const m of mappings) {
      const r = applyMapping(m, item, receivedAt, source, cache);
      if (E.isRight(r)) points.push(r.right);
      else {
        failed.push(indexed ? { ...r.left, item: i } : r.left);
        failing.add(m);
      }
    }
  });
  return failed.length === 0 ? E.right(points) : E.left({ failed, succeeded: mappings.filter((m) => !failing.has(m)) });
};

/** One object (CONTRACT 5.1): every mapping evaluated; every data point in mapping order, or every failure with the mappings that succeeded. */
export const applyMappings = (mappings: readonly Mapping[], body: unknown, receivedAt: string, source: string): E.Either<MappingFailures, readonly MappedPoint[]> =>
  applyAll(mappings, [body], receivedAt, source, false);

/**
 * CONTRACT 5.5: one object as `applyMappings`. An array body: the `each` mappings on every item,
 * failures naming their item; the `whole` ones once, on the array as one document, after them
 * (their points after the items', their failures without an item) — all or nothing together.
 */
export const applyToPayload = (mappings: readonly Mapping[], payload: Payload, receivedAt: string, source: string): E.Either<MappingFailures, readonly MappedPoint[]> => {
  if (payload.kind === 'object') return applyMappings(mappings, payload.value, receivedAt, source);
  const whole = mappings.filter((m) => m.array === 'whole');
  if (whole.length === 0) return applyAll(mappings, payload.items, receivedAt, source, true);
  const each = applyAll(mappings.filter((m) => m.array !== 'whole'), payload.items, receivedAt, source, true);
  const once = applyAll(whole, [payload.items], receivedAt, source, false);
  if (E.isRight(each) && E.isRight(once)) return E.right([...each.right, ...once.right]);
  const failed = [...(E.isLeft(each) ? each.left.failed : []), ...(E.isLeft(once) ? once.left.failed : [])];
  const failing = new Set(failed.map((f) => f.mapping));
  return E.left({ failed, succeeded: mappings.filter((m) => !failing.has(m)) });
};
