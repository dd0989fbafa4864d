import * as A from 'fp-ts/Array';
import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import { convertTo, readAs } from './convert';
import { lookup } from './path';
import { readTimestamp } from './timestamp';
import type { DataPoint, Mapping } from './types';

export interface MappingFailure {
  readonly mapping: Mapping;
  readonly error: string;
}

export interface MappedPoint {
  readonly mapping: Mapping;
  readonly point: DataPoint;
  /** The point as JSON, computed once: the same text goes to the process image and the stream. */
  readonly json: string;
}

/** Every failure, and the names that did succeed (the 422 body lists both). */
export interface MappingFailures {
  readonly failed: readonly MappingFailure[];
  readonly succeeded: readonly Mapping[];
}

const readValue = (m: Mapping, body: unknown): E.Either<string, boolean | number> => {
  const path = m.valuePath.source;
  const found = lookup(m.valuePath, body);
  if (!found.found) return E.left(`value not found at path '${path}'`);
  if (found.value === null) return E.left(`value at path '${path}' is null`);
  return pipe(
    readAs(m.valueType, found.value, path),
    E.chain((v) => convertTo(m.type, v, path)),
  );
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
 * Every mapping is evaluated (never stopping at the first failure); the request yields either
 * every data point, in mapping order, or every failure with the names that succeeded.
 */
export const applyMappings = (
  mappings: readonly Mapping[],
  body: unknown,
  receivedAt: string,
  source: string,
): E.Either<MappingFailures, readonly MappedPoint[]> => {
  const cache: TimeCache = new Map();
  const { left: failed, right: points } = A.separate(mappings.map((m) => applyMapping(m, body, receivedAt, source, cache)));
  return failed.length === 0 ? E.right(points) : E.left({ failed, succeeded: points.map((p) => p.mapping) });
};
