import * as E from 'fp-ts/Either';
import { CASDU_MAX, IOA_MAX } from '../mapping/types';
import { MAX_QUERY_PARAMETERS, type RawQuery } from './query';

export interface PointFilter {
  readonly casdu?: number;
  readonly ioa?: number;
}

export interface QueryError {
  readonly code: 'invalid_casdu' | 'invalid_ioa' | 'invalid_query';
  readonly message: string;
}

const ERRORS: Record<'casdu' | 'ioa', QueryError> = {
  casdu: { code: 'invalid_casdu', message: `casdu must be an unsigned integer in 0 to ${CASDU_MAX}` },
  ioa: { code: 'invalid_ioa', message: `ioa must be an unsigned integer in 0 to ${IOA_MAX}` },
};

/** Absent is fine; present means exactly once, `^[0-9]+$`, within range (leading zeros allowed). */
const field = (name: 'casdu' | 'ioa', max: number, raw: unknown): E.Either<QueryError, number | undefined> => {
  if (raw === undefined) return E.right(undefined);
  if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) return E.left(ERRORS[name]);
  const n = Number(raw);
  return n <= max ? E.right(n) : E.left(ERRORS[name]);
};

/** One value given, or none; a repeated parameter is invalid (CONTRACT 4.1: at most once). */
const single = (values: readonly string[]): unknown => (values.length === 0 ? undefined : values.length === 1 ? values[0] : values);

/**
 * CONTRACT 4.1 and 6.5; casdu is checked first. Every parameter of the raw query counts: a
 * repeated `casdu`/`ioa` anywhere is invalid, and so is a query of more than 1000 parameters
 * (with the code of the first address parameter it has, else `invalid_query`).
 */
export const decodePointFilter = (query: RawQuery): E.Either<QueryError, PointFilter> => {
  if (query.count > MAX_QUERY_PARAMETERS) {
    const code = query.values('casdu').length > 0 ? 'casdu' : query.values('ioa').length > 0 ? 'ioa' : undefined;
    return E.left(code !== undefined ? ERRORS[code] : { code: 'invalid_query', message: `a query may have at most ${MAX_QUERY_PARAMETERS} parameters` });
  }
  const casdu = field('casdu', CASDU_MAX, single(query.values('casdu')));
  if (E.isLeft(casdu)) return casdu;
  const ioa = field('ioa', IOA_MAX, single(query.values('ioa')));
  if (E.isLeft(ioa)) return ioa;
  return E.right({
    ...(casdu.right !== undefined ? { casdu: casdu.right } : {}),
    ...(ioa.right !== undefined ? { ioa: ioa.right } : {}),
  });
};

/** The SCAN pattern of a filter with at most one address. */
export const scanPattern = (f: PointFilter): string =>
  `process:image:casdu:${f.casdu ?? '*'}:ioa:${f.ioa ?? '*'}`;

const KEY = /^process:image:casdu:(0|[1-9][0-9]{0,4}):ioa:(0|[1-9][0-9]{0,7})$/;

/**
 * A process image key back to its address; `undefined` for keys of other shapes (extra
 * segments, leading zeros, out of range), which a glob pattern can also match.
 */
export const parseImageKey = (key: string): { casdu: number; ioa: number } | undefined => {
  const m = KEY.exec(key);
  if (m === null) return undefined;
  const casdu = Number(m[1]);
  const ioa = Number(m[2]);
  return casdu <= CASDU_MAX && ioa <= IOA_MAX ? { casdu, ioa } : undefined;
};
