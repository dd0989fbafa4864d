import type * as t from 'io-ts';

/**
 * Turns io-ts errors into `field.path[1].name: message` lines, once, at the boundary.
 * Context entries below a union or intersection are member indices, not fields: skipped.
 */
export const formatErrors = (errors: t.Errors): string[] => {
  const lines = errors.map((error) => {
    let path = '';
    const ctx = error.context;
    for (let i = 1; i < ctx.length; i++) {
      const parent = ctx[i - 1]!.type as t.Any & { _tag?: string };
      if (parent._tag === 'UnionType' || parent._tag === 'IntersectionType') continue;
      const key = ctx[i]!.key;
      path += parent._tag === 'ArrayType' || parent._tag === 'ReadonlyArrayType' || Array.isArray(ctx[i - 1]!.actual) ? `[${key}]` : path === '' ? key : `.${key}`;
    }
    const last = ctx[ctx.length - 1];
    const message =
      error.message ??
      (error.value === undefined ? 'is required' : `must be ${describeType(last?.type.name ?? '')}, got ${JSON.stringify(error.value)}`);
    return `${path === '' ? '(root)' : path}: ${message}`;
  });
  return [...new Set(lines)];
};

const describeType = (name: string): string =>
  name === 'string' ? 'a string' : name === 'boolean' ? 'a boolean' : name.startsWith('Array<') ? 'an array' : name.includes('{') ? 'an object' : name;
