/**
 * Numbers too large for a double (`1e400`) parse as ±Infinity, and an error text would name them
 * `Infinity` — not what the sender wrote. `parseJsonBody` keeps the literal of each such number in
 * its place, as a `WrittenNumber`, which no conversion accepts and every error text shows as
 * written (CONTRACT 5.4, 6.5: "value 1e400 at path 'v' is not a float").
 */
export class WrittenNumber {
  constructor(readonly literal: string) {}
}

/** Could the text hold a number literal that overflows a double? (a 3-digit exponent, or 309 digits) */
// Stryker disable next-line Regex: a fast path only; a looser pattern sends more texts to the full scan, which finds the same
const MAYBE_OVERFLOW = /\d[eE]\+?\d{3}|\d{309}/;

type Segment = string | number;

/** Where the string starting at `i` (its opening quote) ends: the index after its closing quote. */
const stringEnd = (text: string, i: number): number => {
  let k = i + 1;
  while (text[k] !== '"') k += text[k] === '\\' ? 2 : 1;
  return k + 1;
};

const DELIMITERS = new Set([',', ']', '}', ' ', '\t', '\n', '\r']);

/**
 * Every number literal of a valid JSON text that does not fit a double, with its path. Iterative
 * (any depth); for a key given twice, both are listed and the parsed value decides (last wins).
 */
export const overflowingNumbers = (text: string): Array<{ path: Segment[]; literal: string }> => {
  const out: Array<{ path: Segment[]; literal: string }> = [];
  const path: Segment[] = [];
  /** For each open container: is it an array (else an object)? */
  // Stryker disable next-line ArrayDeclaration: below the outermost container nothing is read (valid JSON has no comma there)
  const inArray: boolean[] = [];
  // Stryker disable next-line BooleanLiteral: the first '{' sets it; a string before any container is the whole text
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === ':') i++;
    else if (ch === '{' || ch === '[') {
      inArray.push(ch === '[');
      // an object's place is named by its key before any value comes
      path.push(0);
      expectKey = ch === '{';
      i++;
    } else if (ch === '}' || ch === ']') {
      inArray.pop();
      path.pop();
      i++;
    } else if (ch === ',') {
      if (inArray[inArray.length - 1] === true) path[path.length - 1] = (path[path.length - 1] as number) + 1;
      else expectKey = true;
      i++;
    } else if (ch === '"') {
      const end = stringEnd(text, i);
      if (expectKey) {
        path[path.length - 1] = JSON.parse(text.slice(i, end)) as string;
        // Stryker disable next-line BooleanLiteral: a string value taken for a key is followed by ',' or '}' (which set the place again), never by a number
        expectKey = false;
      }
      i = end;
    } else {
      let j = i;
      // Stryker disable next-line EqualityOperator: text[length] is undefined, not a delimiter: the slice ends at the text's end either way
      while (j < text.length && !DELIMITERS.has(text[j]!)) j++;
      const token = text.slice(i, j);
      // a number starts with '-' or a digit (both at most '9'); true, false and null with a letter
      if (ch <= '9' && !Number.isFinite(Number(token)) && path.length > 0) out.push({ path: [...path], literal: token });
      i = j;
    }
  }
  return out;
};

const own = (v: unknown, key: Segment): unknown =>
  v !== null && typeof v === 'object' && Object.prototype.hasOwnProperty.call(v, key) ? (v as Record<Segment, unknown>)[key] : undefined;

/** JSON.parse, with every overflowing number kept as written (see `WrittenNumber`). Throws as JSON.parse does. */
export const parseJsonBody = (text: string): unknown => {
  const value: unknown = JSON.parse(text);
  // Stryker disable next-line ConditionalExpression: a fast path only (see MAYBE_OVERFLOW)
  if (!MAYBE_OVERFLOW.test(text)) return value;
  for (const { path, literal } of overflowingNumbers(text)) {
    let parent: unknown = value;
    for (const seg of path.slice(0, -1)) parent = own(parent, seg);
    const last = path[path.length - 1]!;
    const found = own(parent, last);
    // defineProperty: a key named __proto__ stays an own property, never the prototype
    if (typeof found === 'number' && !Number.isFinite(found)) {
      Object.defineProperty(parent, last, { value: new WrittenNumber(literal), writable: true, enumerable: true, configurable: true });
    }
  }
  return value;
};
