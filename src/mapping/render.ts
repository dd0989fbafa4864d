import { WrittenNumber } from './writtenNumbers';

/**
 * A value of outside data as an error text shows it: JSON, cut at `max` characters, with arrays
 * and objects below `depth` levels shown as `[…]` / `{…}`. Total: never throws and never walks
 * more than it shows, whatever the value (deeply nested, huge, cyclic, BigInt).
 */
export const renderValue = (u: unknown, max = 80, depth = 8): string => {
  let out = '';
  const emit = (s: string): boolean => {
    out += s;
    return out.length <= max;
  };
  const walk = (v: unknown, level: number): boolean => {
    if (v instanceof WrittenNumber) return emit(v.literal);
    // Stryker disable next-line all: a bound on work, not on the text (it is cut at `max` below whatever the slice keeps)
    if (typeof v === 'string') return emit(JSON.stringify(v.slice(0, max + 1)));
    if (v === null || typeof v !== 'object') return emit(String(v));
    if (Array.isArray(v)) {
      if (level >= depth) return emit('[…]');
      // Stryker disable next-line BooleanLiteral: past the cut either way; the caller's next emit fails too (one append more, no read)
      if (!emit('[')) return false;
      for (let i = 0; i < v.length; i++) if ((i > 0 && !emit(',')) || !walk(v[i], level + 1)) return false;
      return emit(']');
    }
    if (level >= depth) return emit('{…}');
    // Stryker disable next-line BooleanLiteral: as for '[' above
    if (!emit('{')) return false;
    let first = true;
    for (const k of Object.keys(v)) {
      // Stryker disable next-line all: a bound on work, as for strings above
      const key = k.slice(0, max + 1);
      // Stryker disable next-line BooleanLiteral: past the cut either way (as for '[' above)
      if ((!first && !emit(',')) || !emit(`${JSON.stringify(key)}:`) || !walk((v as Record<string, unknown>)[k], level + 1)) return false;
      first = false;
    }
    return emit('}');
  };
  walk(u, 0);
  return cut(out, max);
};

/** A text as error texts show it: at most `max` characters, the end of a longer one replaced by `...`. */
export const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 3)}...` : text);

/**
 * The path of the first place in a parsed JSON value nested deeper than `maxDepth`, as config
 * errors name fields (`mappings[3].casdu`); undefined when there is none. Iterative: any depth.
 */
export const tooDeep = (root: unknown, maxDepth: number): string | undefined => {
  const stack: Array<{ v: unknown; path: string; depth: number }> = [{ v: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= maxDepth) return path === '' ? '(root)' : path;
    const children = Array.isArray(v)
      ? v.map((c: unknown, i) => ({ v: c, path: `${path}[${i}]`, depth: depth + 1 }))
      : Object.keys(v).map((k) => ({ v: (v as Record<string, unknown>)[k], path: path === '' ? k : `${path}.${k}`, depth: depth + 1 }));
    // onto the stack last first: the first child is looked at first (a loop: any number of children)
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return undefined;
};
