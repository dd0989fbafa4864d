import * as E from 'fp-ts/Either';
import { CASDU_MAX, IOA_MAX } from '../../mapping/types';
import { MAX_QUERY_PARAMETERS, type RawQuery } from '../app/query';
import { PROCESS_IMAGE_PREFIX, processImagePattern } from '../../mapping/keys';

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
export const scanPattern = (f: PointFilter): string => processImagePattern(f.casdu, f.ioa);

const IMAGE_PREFIX = PROCESS_IMAGE_PREFIX;
const IOA_INFIX = ':ioa:';

/**
 * The address of a process image key as one number (casdu × 2^24 + ioa: exact, ordered by casdu,
 * then ioa), or -1 for a key of another shape, which a glob pattern can also match (extra
 * segments, leading zeros, out of range). Read digit by digit, with nothing allocated: a GET of
 * everything reads a million of them.
 */
/** Where the last `digitsAt` stopped (module state: nothing is allocated per key). */
let digitsEnd = 0;

/** The decimal number at `i` (no sign, no leading zero), at most `max`; -1 otherwise. */
const digitsAt = (key: string, i: number, max: number): number => {
  let v = 0;
  let k = i;
  while (k < key.length) {
    const c = key.charCodeAt(k);
    if (c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
    if (v > max) return -1;
    k++;
  }
  digitsEnd = k;
  return k === i || (k - i > 1 && key.charCodeAt(i) === 48) ? -1 : v;
};

export const imageAddress = (key: string): number => {
  if (!key.startsWith(IMAGE_PREFIX)) return -1;
  const casdu = digitsAt(key, IMAGE_PREFIX.length, CASDU_MAX);
  if (casdu < 0 || !key.startsWith(IOA_INFIX, digitsEnd)) return -1;
  const ioa = digitsAt(key, digitsEnd + IOA_INFIX.length, IOA_MAX);
  return ioa < 0 || digitsEnd !== key.length ? -1 : casdu * 16777216 + ioa;
};
