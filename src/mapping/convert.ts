import * as E from 'fp-ts/Either';
import { renderValue } from './render';
import type { TypeCode, ValueType } from './types';

/**
 * How a value is shown in an error text: JSON, cut short so one error cannot flood the error
 * stream, depth-limited so that no payload can make it throw (CONTRACT 6.5).
 */
export const show = (u: unknown): string => renderValue(u, SHOWN_MAX);

/** How many characters of a value an error text shows at most. */
export const SHOWN_MAX = 80;

const DECIMAL = /^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$/;
const INTEGER = /^\s*[+-]?[0-9]+\s*$/;

const decimalNumber = (u: unknown): number | undefined => {
  if (typeof u === 'number') return Number.isFinite(u) ? u : undefined;
  if (typeof u === 'string' && DECIMAL.test(u)) {
    const n = Number(u);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
};

const integerNumber = (u: unknown): number | undefined => {
  if (typeof u === 'number') return Number.isInteger(u) ? u : undefined;
  if (typeof u === 'string' && INTEGER.test(u)) {
    const n = Number(u);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
};

const BOOL_STRINGS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false, on: true, off: false };

const booleanOf = (u: unknown): boolean | undefined => {
  if (typeof u === 'boolean') return u;
  if (u === 0 || u === 1) return u === 1;
  if (typeof u === 'string') return BOOL_STRINGS[u.trim().toLowerCase()];
  return undefined;
};

/** A number, or a string in decimal notation that is one (5.4's `float`); else undefined. */
export const numberOf = (u: unknown): number | undefined => decimalNumber(u);

const ARTICLE: Record<ValueType, string> = { float: 'a float', int: 'an int', bool: 'a bool', string: 'a string' };

/** CONTRACT 5.4, first table: the raw value read as the mapping's `valueType`. */
export const readAs = (valueType: ValueType, raw: unknown, path: string): E.Either<string, unknown> => {
  let v: unknown;
  switch (valueType) {
    case 'float':
      v = decimalNumber(raw);
      break;
    case 'int':
      v = integerNumber(raw);
      break;
    case 'bool':
      v = booleanOf(raw);
      break;
    case 'string':
      v = typeof raw === 'string' ? raw : undefined;
      break;
  }
  return v === undefined ? E.left(`value ${show(raw)} at path '${path}' is not ${ARTICLE[valueType]}`) : E.right(v);
};

/** CONTRACT 5.4, second table: the value read converted to what the type code stores. */
export const convertTo = (type: TypeCode, v: unknown, path: string): E.Either<string, boolean | number> => {
  switch (type) {
    case 1:
    case 30: {
      const b = booleanOf(v);
      return b === undefined ? E.left(`value ${show(v)} at path '${path}' is not a boolean for type ${type}`) : E.right(b);
    }
    case 13:
    case 36: {
      const n = typeof v === 'boolean' ? undefined : decimalNumber(v);
      return n === undefined ? E.left(`value ${show(v)} at path '${path}' is not a number for type ${type}`) : E.right(n);
    }
    case 32: {
      const n = typeof v === 'boolean' ? undefined : integerNumber(v);
      if (n === undefined) return E.left(`value ${show(v)} at path '${path}' is not an integer for type 32`);
      return n < -64 || n > 63 ? E.left(`value ${n} at path '${path}' is out of range -64..63 for type 32`) : E.right(n);
    }
  }
};
