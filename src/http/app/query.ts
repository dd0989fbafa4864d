/**
 * The query string as sent, every parameter counted (CONTRACT 6.5): Node's and express's parsers
 * stop at 1000 parameters, which would let `?…1000 junk…&casdu=70000` or a second `topic` past
 * the checks. Total: any URL gives a result.
 */
export interface RawQuery {
  /** How many parameters the query has. */
  readonly count: number;
  /** Every value given for `name`, in order. */
  values(name: string): readonly string[];
}

export const MAX_QUERY_PARAMETERS = 1000;

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
};

export const parseRawQuery = (url: string): RawQuery => {
  const q = url.indexOf('?');
  const byName = new Map<string, string[]>();
  let count = 0;
  if (q >= 0) {
    for (const part of url.slice(q + 1).split('&')) {
      if (part === '') continue;
      count++;
      const eq = part.indexOf('=');
      const name = decode(eq < 0 ? part : part.slice(0, eq));
      const value = eq < 0 ? '' : decode(part.slice(eq + 1));
      const list = byName.get(name);
      if (list === undefined) byName.set(name, [value]);
      else list.push(value);
    }
  }
  return { count, values: (name) => byName.get(name) ?? [] };
};
