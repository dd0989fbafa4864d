import * as E from 'fp-ts/Either';
import { CASDU_MAX, IOA_MAX } from '../../mapping/types';
import { MAX_QUERY_PARAMETERS, type RawQuery } from '../app/query';
import { processImagePattern } from '../../mapping/keys';

/** The points a GET asks for: one CASDU, one IOA, both, or neither (CONTRACT 4.1). */
export interface AddressQuery {
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
export const decodeAddressQuery = (query: RawQuery): E.Either<QueryError, AddressQuery> => {
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
export const scanPattern = (f: AddressQuery): string => processImagePattern(f.casdu, f.ioa);
