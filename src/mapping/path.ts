import * as E from 'fp-ts/Either';

/**
 * Path expressions (CONTRACT 5.2): `segment ( "." segment | "[" digits "]" )*`, where a segment is
 * one or more characters other than `.`, `[`, `]`, and a path may also start with `[digits]`.
 */
export type Step = { readonly key: string } | { readonly index: number };

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
      let j = i + 1;
      while (j < source.length && source.charCodeAt(j) >= 48 && source.charCodeAt(j) <= 57) j++;
      if (j === i + 1 || source[j] !== ']') return E.left(unexpected(source, j));
      steps.push({ index: Number(source.slice(i + 1, j)) });
      i = j + 1;
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
 * Follows own properties only: `__proto__` and anything inherited are not found, an own
 * `constructor` key is. Arrays have no fields; only arrays can be indexed.
 */
export const lookup = (path: CompiledPath, root: unknown): Lookup => {
  let current: unknown = root;
  for (const step of path.steps) {
    if ('key' in step) {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return NOT_FOUND;
      if (step.key === '__proto__' || !hasOwn.call(current, step.key)) return NOT_FOUND;
      current = (current as Record<string, unknown>)[step.key];
    } else {
      if (!Array.isArray(current) || step.index >= current.length) return NOT_FOUND;
      current = current[step.index];
    }
  }
  return current === undefined ? NOT_FOUND : { found: true, value: current };
};
