import * as E from 'fp-ts/Either';
import { CASDU_MAX, IOA_MAX } from '../mapping/types';

export interface PointFilter {
  readonly casdu?: number;
  readonly ioa?: number;
}

export interface QueryError {
  readonly code: 'invalid_casdu' | 'invalid_ioa';
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

/** CONTRACT 4.1; casdu is checked first. */
export const decodePointFilter = (query: Record<string, unknown>): E.Either<QueryError, PointFilter> => {
  const casdu = field('casdu', CASDU_MAX, query.casdu);
  if (E.isLeft(casdu)) return casdu;
  const ioa = field('ioa', IOA_MAX, query.ioa);
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
