import * as E from 'fp-ts/Either';
import fc from 'fast-check';
import { compilePath, lookup } from '../src/mapping/path';

const steps = (s: string) => {
  const r = compilePath(s);
  if (E.isLeft(r)) throw new Error(r.left.message);
  return r.right.steps;
};
const syntax = (s: string) => {
  const r = compilePath(s);
  if (E.isRight(r)) throw new Error(`expected a syntax error for ${s}`);
  return r.left;
};
const at = (path: string, body: unknown) => {
  const r = compilePath(path);
  if (E.isLeft(r)) throw new Error(r.left.message);
  return lookup(r.right, body);
};

describe('path grammar', () => {
  it.each([
    ['name', [{ key: 'name' }]],
    ['a.b.c', [{ key: 'a' }, { key: 'b' }, { key: 'c' }]],
    ['arr[0]', [{ key: 'arr' }, { index: 0 }]],
    ['arr[1].name', [{ key: 'arr' }, { index: 1 }, { key: 'name' }]],
    ['[0].x', [{ index: 0 }, { key: 'x' }]],
    ['m[2][3]', [{ key: 'm' }, { index: 2 }, { index: 3 }]],
    ['with space.ünï-cödé', [{ key: 'with space' }, { key: 'ünï-cödé' }]],
    ['a.007', [{ key: 'a' }, { key: '007' }]],
  ])('compiles %p', (path, expected) => {
    expect(steps(path)).toEqual(expected);
  });

  it.each([
    ['', 0, 'path is empty'],
    ['.a', 0, 'unexpected "." at 0'],
    ['a.', 2, 'unexpected end of path at 2'],
    ['a..b', 2, 'unexpected "." at 2'],
    ['a]', 1, 'unexpected "]" at 1'],
    ['a.b]', 3, 'unexpected "]" at 3'],
    ['a[', 2, 'unexpected end of path at 2'],
    ['a[]', 2, 'unexpected "]" at 2'],
    ['a[x]', 3, 'unexpected "]" at 3'],
    ['a[1', 3, 'unexpected end of path at 3'],
    ['a[-]', 3, 'unexpected "]" at 3'],
    ['a[1]b', 4, 'unexpected "b" at 4'],
    ['a.[0]', 2, 'unexpected "[" at 2'],
    [']', 0, 'unexpected "]" at 0'],
  ])('reports %p at position %i', (path, position, message) => {
    expect(syntax(path)).toEqual({ position, message });
  });
});

describe('lookup', () => {
  const body = JSON.parse('{"a":{"b":[10,{"c":"x"}]},"constructor":5,"__proto__":{"p":1},"n":null,"arr":[1,2]}') as unknown;

  it('follows fields and indices', () => {
    expect(at('a.b[0]', body)).toEqual({ found: true, value: 10 });
    expect(at('a.b[1].c', body)).toEqual({ found: true, value: 'x' });
    expect(at('[0].x', [{ x: 1 }])).toEqual({ found: true, value: 1 });
    expect(at('n', body)).toEqual({ found: true, value: null });
  });

  it('finds an own constructor key, never __proto__ nor anything inherited', () => {
    expect(at('constructor', body)).toEqual({ found: true, value: 5 });
    expect(at('__proto__', body)).toEqual({ found: false });
    expect(at('__proto__.p', body)).toEqual({ found: false });
    expect(at('toString', body)).toEqual({ found: false });
    expect(at('a.constructor', body)).toEqual({ found: false });
    expect(at('a.hasOwnProperty', body)).toEqual({ found: false });
  });

  it('arrays have no fields; only arrays are indexed', () => {
    expect(at('arr.length', body)).toEqual({ found: false });
    expect(at('arr.0', body)).toEqual({ found: false });
    expect(at('a[0]', body)).toEqual({ found: false });
    expect(at('arr[2]', body)).toEqual({ found: false });
    expect(at('a.b[0].x', body)).toEqual({ found: false });
    expect(at('n.x', body)).toEqual({ found: false });
    expect(at('x', 'string')).toEqual({ found: false });
  });

  it('a string has no fields either: not its length, not its characters', () => {
    const s = JSON.parse('{"s":"abc","t":true,"n":7}') as unknown;
    expect(at('s.length', s)).toEqual({ found: false });
    expect(at('s.0', s)).toEqual({ found: false });
    expect(at('t.valueOf', s)).toEqual({ found: false });
    expect(at('n.toFixed', s)).toEqual({ found: false });
    expect(at('s', s)).toEqual({ found: true, value: 'abc' });
  });

  it('never throws, whatever the path and the JSON', () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), (path, json) => {
        const compiled = compilePath(path);
        if (E.isRight(compiled)) lookup(compiled.right, json);
      }),
      { numRuns: 2000 },
    );
  });

  it('compiles every path built from the grammar and reports positions inside the path', () => {
    const segment = fc.stringMatching(/^[^.[\]]+$/);
    const step = fc.oneof(segment.map((s) => `.${s}`), fc.nat(99).map((n) => `[${n}]`));
    fc.assert(
      fc.property(segment, fc.array(step), (head, rest) => {
        expect(E.isRight(compilePath(head + rest.join('')))).toBe(true);
      }),
    );
    fc.assert(
      fc.property(fc.string(), (path) => {
        const r = compilePath(path);
        if (E.isLeft(r)) expect(r.left.position).toBeLessThanOrEqual(path.length);
      }),
    );
  });
});
