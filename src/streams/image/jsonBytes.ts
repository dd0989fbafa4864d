import { isUtf8 } from 'node:buffer';

/**
 * A stored point checked as bytes, without making it a string or parsing it into objects: what an
 * interrogation does for every point of the image (CONTRACT 4.6). The answer is the one
 * `JSON.parse` gives for the bytes' UTF-8 text (test/jsonBytes.test.ts compares the two on
 * hand-picked and on generated inputs): whether they are one JSON object (RFC 8259; whitespace
 * around it allowed), and the value of its top-level `type` member when that is a number (the
 * last one, when the member repeats, as `JSON.parse` keeps it).
 *
 * Measured (an interrogation of 1,000,000 points without load, a full collection every 10,000
 * points either way): the connector's CPU 13.9–14.4 s with the values as strings checked by
 * `JSON.parse` and joined, 10.8–13.6 s with this and the body copied from the bytes (bench/README.md).
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const skipWs = (b: Uint8Array, i: number): number => {
  while (i < b.length && isWs(b[i]!)) i++;
  return i;
};
const isDigit = (c: number | undefined): boolean => c !== undefined && c >= ZERO && c <= NINE;
const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));

/** Set by `endOfString` (module state: nothing is allocated per point): the string held a backslash escape. */
let escaped = false;
/** Set by `endOfString`: a string of the point held a byte outside ASCII (its UTF-8 is then checked). */
let wide = false;

/** From just after an opening quote: the index just after the closing quote, or -1. */
const endOfString = (b: Uint8Array, i: number): number => {
  const n = b.length;
  while (i < n) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      escaped = true;
      const e = b[i + 1];
      if (e === 0x75) {
        if (!isHex(b[i + 2]) || !isHex(b[i + 3]) || !isHex(b[i + 4]) || !isHex(b[i + 5])) return -1;
        i += 6;
        continue;
      }
      // " \ / b f n r t
      if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) return -1;
      i += 2;
      continue;
    }
    if (c >= 0x80) wide = true;
    i++;
  }
  return -1;
};

/** From a number's first byte: the index just after it, or -1 (RFC 8259 section 6). */
const endOfNumber = (b: Uint8Array, i: number): number => {
  if (b[i] === MINUS) i++;
  if (b[i] === ZERO) i++;
  else if (isDigit(b[i])) while (isDigit(b[i])) i++;
  else return -1;
  if (b[i] === DOT) {
    i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === PLUS || b[i] === MINUS) i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  return i;
};

const literalAt = (b: Uint8Array, i: number, word: readonly number[]): number => {
  for (let j = 0; j < word.length; j++) if (b[i + j] !== word[j]) return -1;
  return i + word.length;
};
const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

/** Whether the key `b[from, to)` (its quotes included) reads `type`. */
const isTypeKey = (b: Buffer, from: number, to: number, keyEscaped: boolean): boolean => {
  if (!keyEscaped) return to - from === 6 && b[from + 1] === 0x74 && b[from + 2] === 0x79 && b[from + 3] === 0x70 && b[from + 4] === 0x65;
  // an escaped key (`"typ\u0065"` reads `type` too): rare, decoded as JSON.parse would
  return JSON.parse(b.toString('utf8', from, to)) === 'type';
};

/** Containers open around the current position, innermost last: 1 an object, 2 an array. */
let stack = new Uint8Array(64);
const OBJECT = 1;
const ARRAY = 2;
const open = (depth: number, c: number): void => {
  if (depth === stack.length) {
    const bigger = new Uint8Array(stack.length * 2);
    bigger.set(stack);
    stack = bigger;
  }
  stack[depth] = c === LBRACE ? OBJECT : ARRAY;
};

export interface PointScan {
  /** The bytes are one JSON object. */
  readonly object: boolean;
  /** Its top-level `type` member, when that (the last one) is a number and the caller asked for it. */
  readonly type: number | undefined;
  /** A string in it holds bytes that are not UTF-8: its text (what `JSON.parse` saw) differs from the bytes. */
  readonly notUtf8: boolean;
}

const NOT_OBJECT: PointScan = { object: false, type: undefined, notUtf8: false };
const PLAIN_OBJECT: PointScan = { object: true, type: undefined, notUtf8: false };

/**
 * Scans `b` as `JSON.parse(b.toString('utf8'))` would parse it, without building anything (see the
 * module's comment). `withType`: find the top-level `type` number. `notUtf8` tells a caller that
 * sends the bytes to send their text instead.
 */
export const scanPoint = (b: Buffer, withType: boolean): PointScan => {
  const n = b.length;
  wide = false;
  let i = skipWs(b, 0);
  if (b[i] !== LBRACE) return NOT_OBJECT;
  i++;
  let depth = 0;
  stack[0] = OBJECT;
  let type: number | undefined;
  /** Just after an opening brace or bracket: its end may follow at once. */
  let opened = true;
  for (;;) {
    i = skipWs(b, i);
    const inObject = stack[depth] === OBJECT;
    if (!(opened && b[i] === (inObject ? RBRACE : RBRACKET))) {
      /** The value about to be read is the top-level object's `type` member's. */
      let typeValue = false;
      if (inObject) {
        if (b[i] !== QUOTE) return NOT_OBJECT;
        const from = i;
        escaped = false;
        const to = endOfString(b, i + 1);
        if (to < 0) return NOT_OBJECT;
        typeValue = withType && depth === 0 && isTypeKey(b, from, to, escaped);
        i = skipWs(b, to);
        if (b[i] !== COLON) return NOT_OBJECT;
        i = skipWs(b, i + 1);
      }
      const c = b[i];
      if (c === LBRACE || c === LBRACKET) {
        if (typeValue) type = undefined;
        open(++depth, c);
        opened = true;
        i++;
        continue;
      }
      const end = scalarEnd(b, i);
      if (end < 0) return NOT_OBJECT;
      if (typeValue) type = c === MINUS || isDigit(c) ? Number(b.toString('latin1', i, end)) : undefined;
      i = skipWs(b, end);
    }
    // after a value or an empty container: a comma, or the end of the container (and perhaps of those around it)
    opened = false;
    for (;;) {
      if (b[i] === COMMA) {
        // a key (object) or a value (array) must follow: not `opened`, so the end is not one
        i++;
        break;
      }
      if (b[i] !== (stack[depth] === OBJECT ? RBRACE : RBRACKET)) return NOT_OBJECT;
      i++;
      if (depth === 0) {
        if (skipWs(b, i) !== n) return NOT_OBJECT;
        const notUtf8 = wide && !isUtf8(b);
        return type === undefined && !notUtf8 ? PLAIN_OBJECT : { object: true, type, notUtf8 };
      }
      depth--;
      i = skipWs(b, i);
    }
  }
};

/** A string, number or literal from `i`: the index just after it, or -1. */
const scalarEnd = (b: Uint8Array, i: number): number => {
  const c = b[i];
  if (c === QUOTE) return endOfString(b, i + 1);
  if (c === MINUS || isDigit(c)) return endOfNumber(b, i);
  if (c === 0x74) return literalAt(b, i, TRUE);
  if (c === 0x66) return literalAt(b, i, FALSE);
  if (c === 0x6e) return literalAt(b, i, NULL);
  return -1;
};
