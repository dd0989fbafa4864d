import * as E from 'fp-ts/Either';
import { WrittenNumber } from './writtenNumbers';

/**
 * Path expressions (CONTRACT 5.2, 5.5): `segment ( "." segment | "[" selector "]" )*`, where a
 * segment is one or more characters other than `.`, `[`, `]`, a selector is digits (an index),
 * `-` and digits (counted from the end: `[-1]` is the last element) or `key=value` (the first
 * element that is an object whose own `key` has the text `value`), and a path may also start with
 * a selector.
 */
export type Step =
  | { readonly key: string }
  | { readonly index: number }
  | { readonly fromEnd: number }
  | { readonly select: string; readonly text: string };

export interface CompiledPath {
  readonly source: string;
  readonly steps: readonly Step[];
}

/** A syntax error; `position` is the 0-based offset of the offending character. */
export interface PathSyntaxError {
  readonly position: number;
  readonly message: string;
}

const unexpected = (source: string, i: number): PathSyntaxError =>
  i >= source.length
    ? { position: i, message: `unexpected end of path at ${i}` }
    : { position: i, message: `unexpected ${JSON.stringify(source[i])} at ${i}` };

const isDigit = (source: string, j: number): boolean => source.charCodeAt(j) >= 48 && source.charCodeAt(j) <= 57;

/** The selector that starts at `from` (after its `[`): its step, and where its `]` is. */
const compileSelector = (source: string, from: number): E.Either<PathSyntaxError, { step: Step; end: number }> => {
  if (isDigit(source, from) || source[from] === '-') {
    const negative = source[from] === '-';
    let j = negative ? from + 1 : from;
    const digits = j;
    while (isDigit(source, j)) j++;
    if (j === digits || source[j] !== ']') return E.left(unexpected(source, j));
    const n = Number(source.slice(digits, j));
    // `[-0]` would be past the end: nothing is ever there
    if (negative && n === 0) return E.left({ position: from, message: `[-0] at ${from} selects nothing: [-1] is the last element` });
    return E.right({ step: negative ? { fromEnd: n } : { index: n }, end: j });
  }
  let k = from;
  while (k < source.length && !'=[].'.includes(source[k]!)) k++;
  if (k === from || source[k] !== '=') return E.left(unexpected(source, k));
  // Stryker disable next-line ArithmeticOperator: from k - 1 the scan meets the key's last character and '=' first, never a ']'
  let v = k + 1;
  while (v < source.length && source[v] !== ']') v++;
  if (v === k + 1 || v >= source.length) return E.left(unexpected(source, v));
  return E.right({ step: { select: source.slice(from, k), text: source.slice(k + 1, v) }, end: v });
};

export const compilePath = (source: string): E.Either<PathSyntaxError, CompiledPath> => {
  if (source.length === 0) return E.left({ position: 0, message: 'path is empty' });
  const steps: Step[] = [];
  let i = 0;
  // `expectSegment` is true at the start and after a dot: a segment (or, at the start only, `[`).
  let expectSegment = true;
  while (i < source.length || expectSegment) {
    const c = source[i];
    if (expectSegment && c !== '[' ) {
      let j = i;
      while (j < source.length && source[j] !== '.' && source[j] !== '[' && source[j] !== ']') j++;
      if (j === i) return E.left(unexpected(source, i));
      steps.push({ key: source.slice(i, j) });
      i = j;
      expectSegment = false;
    } else if (c === '[' && (!expectSegment || i === 0)) {
      const selector = compileSelector(source, i + 1);
      if (E.isLeft(selector)) return selector;
      steps.push(selector.right.step);
      i = selector.right.end + 1;
      expectSegment = false;
    } else if (c === '.' && !expectSegment) {
      i++;
      expectSegment = true;
    } else {
      return E.left(unexpected(source, i));
    }
  }
  return E.right({ source, steps });
};

export type Lookup = { readonly found: true; readonly value: unknown } | { readonly found: false };

const NOT_FOUND: Lookup = { found: false };
const hasOwn = Object.prototype.hasOwnProperty;

/**
 * A value's text for a selector or a value map (CONTRACT 5.5): a string as it is, a number or a
 * boolean as `JSON.stringify` writes it; anything else has none.
 */
export const valueText = (u: unknown): string | undefined =>
  typeof u === 'string' ? u : typeof u === 'number' || typeof u === 'boolean' ? JSON.stringify(u) : undefined;

/** A JSON object: not an array, nor a number kept as written (`1e400`: a `WrittenNumber` is a number, with no fields). */
export const isObject = (u: unknown): u is Record<string, unknown> => u !== null && typeof u === 'object' && !Array.isArray(u) && !(u instanceof WrittenNumber);

/** The first element of `list` that is an object with an own `key` (never `__proto__`) whose text is `text`. */
const selected = (list: readonly unknown[], key: string, text: string): unknown => {
  if (key === '__proto__') return undefined;
  for (const item of list) {
    if (isObject(item) && hasOwn.call(item, key) && valueText(item[key]) === text) return item;
  }
  return undefined;
};

/**
 * Follows own properties only: `__proto__` and anything inherited are not found, an own
 * `constructor` key is. Arrays have no fields; only arrays can be indexed or selected from.
 */
export const lookup = (path: CompiledPath, root: unknown): Lookup => {
  let current: unknown = root;
  for (const step of path.steps) {
    if ('key' in step) {
      if (!isObject(current)) return NOT_FOUND;
      if (step.key === '__proto__' || !hasOwn.call(current, step.key)) return NOT_FOUND;
      current = current[step.key];
    } else if (!Array.isArray(current)) {
      return NOT_FOUND;
    } else if ('index' in step) {
      if (step.index >= current.length) return NOT_FOUND;
      current = current[step.index];
    } else if ('fromEnd' in step) {
      // past the start is undefined: not found, whatever follows
      current = current[current.length - step.fromEnd];
    } else {
      current = selected(current, step.select, step.text);
    }
  }
  return current === undefined ? NOT_FOUND : { found: true, value: current };
};
