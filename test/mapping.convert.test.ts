import * as E from 'fp-ts/Either';
import { convertTo, readAs } from '../src/mapping/convert';
import { renderValue, tooDeep } from '../src/mapping/render';
import { readTimestamp } from '../src/mapping/timestamp';
import { WrittenNumber } from '../src/mapping/writtenNumbers';
import type { TypeCode, ValueType } from '../src/mapping/types';

const read = (vt: ValueType, raw: unknown) => readAs(vt, raw, 'p');
const conv = (t: TypeCode, v: unknown) => convertTo(t, v, 'p');

describe('error texts render any value without throwing (CONTRACT 6.5)', () => {
  it('a value nested 10,000 levels deep, or huge, is shown cut short', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10000; i++) deep = [deep];
    const text = read('float', deep);
    expect(E.isLeft(text) && text.left).toMatch(/^value \[\[\[\[\[\[\[\[\[…\]\]\]\]\]\]\]\]\] at path 'p' is not a float$/);
    const huge = read('float', { a: 'x'.repeat(1e6) });
    expect(E.isLeft(huge) && huge.left.length).toBeLessThan(150);
  });

  it('shows arrays and objects as JSON, every element and member with its comma', () => {
    expect(renderValue([1, 'a', null, true])).toBe('[1,"a",null,true]');
    expect(renderValue({ a: 1, b: [2, 3], c: { d: 'x' } })).toBe('{"a":1,"b":[2,3],"c":{"d":"x"}}');
    expect(renderValue([new WrittenNumber('1e400'), undefined])).toBe('[1e400,undefined]');
    expect(read('float', { a: 1, b: 2 })).toEqual(E.left(`value {"a":1,"b":2} at path 'p' is not a float`));
  });

  it('cuts a long value at the limit, with three dots, whichever part makes it long', () => {
    expect(renderValue('x'.repeat(200))).toBe(`"${'x'.repeat(76)}...`);
    expect(renderValue('x'.repeat(78))).toBe(`"${'x'.repeat(78)}"`); // 80 characters: not cut
    expect(renderValue('x'.repeat(79))).toBe(`"${'x'.repeat(76)}...`);
    expect(renderValue(Array.from({ length: 100 }, (_, i) => i))).toBe(`[${Array.from({ length: 100 }, (_, i) => i).join(',').slice(0, 76)}...`);
    expect(renderValue({ ['k'.repeat(100)]: 1 })).toBe(`{"${'k'.repeat(75)}...`);
    expect(renderValue('abcdefghij', 8)).toBe('"abcd...');
  });

  it('shows what lies below the depth as […] and {…}', () => {
    expect(renderValue([[[1]]], 80, 2)).toBe('[[[…]]]');
    expect(renderValue({ a: { b: { c: 1 } } }, 80, 2)).toBe('{"a":{"b":{…}}}');
    expect(renderValue([1n], 80)).toBe('[1]');
  });

  it('never walks more of a value than it shows: a huge array is read no further than its cut', () => {
    let reads = 0;
    const counted = (xs: unknown[]) => new Proxy(xs, { get: (t, k, r) => (typeof k === 'string' && /^[0-9]+$/.test(k) && reads++, Reflect.get(t, k, r)) });
    expect(renderValue(counted(Array.from({ length: 100000 }, (_, i) => i)))).toMatch(/^\[0,1,2,.*\.\.\.$/);
    expect(reads).toBeLessThan(40);
    reads = 0;
    // cut inside a nested array: the outer one is not read on either
    expect(renderValue(counted([counted(Array.from({ length: 1000 }, () => 12345)), ...Array.from({ length: 1000 }, () => 1)]), 20)).toBe('[[12345,12345,123...');
    expect(reads).toBeLessThan(10);
    reads = 0;
    expect(renderValue({ a: counted(Array.from({ length: 1000 }, () => 7)), b: counted([1]) }, 12)).toBe('{"a":[7,7...');
    expect(reads).toBeLessThan(10);
    reads = 0;
    expect(renderValue(counted([counted([1, 2, 3]), counted([4])]), 2)).toBe('[[...');
    expect(reads).toBe(2);
  });

  it('names the first place nested too deep, as config errors name fields', () => {
    expect(tooDeep({ a: [1, { b: 2 }], n: null }, 3)).toBeUndefined();
    expect(tooDeep({ a: [[1]], b: [[2]] }, 2)).toBe('a[0]');
    expect(tooDeep([[1], [2], [[3]]], 2)).toBe('[2][0]');
    expect(tooDeep([[[1]], [[2]]], 2)).toBe('[0][0]');
    expect(tooDeep({ a: [1, { b: { c: 1 } }] }, 3)).toBe('a[1].b');
    expect(tooDeep([[1]], 1)).toBe('[0]');
    expect(tooDeep({ x: 1 }, 0)).toBe('(root)');
    expect(tooDeep('text', 0)).toBeUndefined();
  });
});

describe('reading by valueType (CONTRACT 5.4, first table)', () => {
  it.each([
    [21.5, 21.5], [-3, -3], ['21.5', 21.5], [' 3e2 ', 300], ['-0.5', -0.5], ['.5', 0.5], ['5.', 5],
  ])('float accepts %p', (raw, value) => {
    expect(read('float', raw)).toEqual(E.right(value));
  });
  it.each([['0x10'], [''], ['NaN'], ['Infinity'], ['abc'], [true], [null], [[1]], [{}], ['1e999']])('float rejects %p', (raw) => {
    expect(read('float', raw)).toEqual(E.left(`value ${JSON.stringify(raw)} at path 'p' is not a float`));
  });
  it('keeps the contract example text', () => {
    expect(readAs('float', 'abc', 'temp')).toEqual(E.left(`value "abc" at path 'temp' is not a float`));
  });

  it.each([[42, 42], ['42', 42], [' -7 ', -7], [2e3, 2000]])('int accepts %p', (raw, value) => {
    expect(read('int', raw)).toEqual(E.right(value));
  });
  it.each([[21.5], ['21.5'], ['4e1'], [''], [false], ['x']])('int rejects %p', (raw) => {
    expect(read('int', raw)).toEqual(E.left(`value ${JSON.stringify(raw)} at path 'p' is not an int`));
  });

  it.each([
    [true, true], [false, false], [0, false], [1, true], ['true', true], ['FALSE', false], ['1', true], ['0', false], ['On', true], ['OFF', false],
  ])('bool accepts %p', (raw, value) => {
    expect(read('bool', raw)).toEqual(E.right(value));
  });
  it.each([[2], ['yes'], [''], [null], [0.5]])('bool rejects %p', (raw) => {
    expect(E.isLeft(read('bool', raw))).toBe(true);
  });

  it('string takes a string as it is and nothing else', () => {
    expect(read('string', ' on ')).toEqual(E.right(' on '));
    for (const raw of [1, true, {}, []]) expect(read('string', raw)).toEqual(E.left(`value ${JSON.stringify(raw)} at path 'p' is not a string`));
  });
});

describe('conversion by type code (CONTRACT 5.4, second table)', () => {
  it.each([1, 30] as const)('type %i stores booleans: boolean as is, 0/1, strings as for bool', (t) => {
    expect(conv(t, true)).toEqual(E.right(true));
    expect(conv(t, 0)).toEqual(E.right(false));
    expect(conv(t, 1)).toEqual(E.right(true));
    expect(conv(t, 'on')).toEqual(E.right(true));
    expect(conv(t, 'False')).toEqual(E.right(false));
    expect(conv(t, 2)).toEqual(E.left(`value 2 at path 'p' is not a boolean for type ${t}`));
    expect(conv(t, 0.5)).toEqual(E.left(`value 0.5 at path 'p' is not a boolean for type ${t}`));
    expect(conv(t, 'maybe')).toEqual(E.left(`value "maybe" at path 'p' is not a boolean for type ${t}`));
  });

  it.each([13, 36] as const)('type %i stores finite numbers; numeric strings converted; NaN, Infinity and booleans fail', (t) => {
    expect(conv(t, 21.5)).toEqual(E.right(21.5));
    expect(conv(t, '21.5')).toEqual(E.right(21.5));
    // a non-finite number is named as such, not as JSON's null (1e400 in a payload parses to Infinity)
    expect(conv(t, NaN)).toEqual(E.left(`value NaN at path 'p' is not a number for type ${t}`));
    expect(conv(t, Infinity)).toEqual(E.left(`value Infinity at path 'p' is not a number for type ${t}`));
    expect(E.isLeft(conv(t, Infinity))).toBe(true);
    expect(E.isLeft(conv(t, -Infinity))).toBe(true);
    expect(conv(t, true)).toEqual(E.left(`value true at path 'p' is not a number for type ${t}`));
    expect(conv(t, 'abc')).toEqual(E.left(`value "abc" at path 'p' is not a number for type ${t}`));
  });

  it('type 32 stores integers in -64..63', () => {
    expect(conv(32, -64)).toEqual(E.right(-64));
    expect(conv(32, 63)).toEqual(E.right(63));
    expect(conv(32, '5')).toEqual(E.right(5));
    expect(convertTo(32, 64, 'pos')).toEqual(E.left(`value 64 at path 'pos' is out of range -64..63 for type 32`));
    expect(conv(32, -65)).toEqual(E.left(`value -65 at path 'p' is out of range -64..63 for type 32`));
    expect(conv(32, 2.5)).toEqual(E.left(`value 2.5 at path 'p' is not an integer for type 32`));
    expect(conv(32, true)).toEqual(E.left(`value true at path 'p' is not an integer for type 32`));
  });
});

describe('timestamps (CONTRACT 5.3)', () => {
  const ts = (raw: unknown) => readTimestamp(raw, 'ts');
  it.each([
    ['2026-11-21T10:15:00Z', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T10:15:00.123456Z', '2026-11-21T10:15:00.123Z'],
    ['2026-11-21T12:15:00+02:00', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T05:15:00-05:00', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T10:15:00', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T10:15', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21', '2026-11-21T00:00:00.000Z'],
    ['0050-03-01T12:00:00Z', '0050-03-01T12:00:00.000Z'],
    [1763720100, '2025-11-21T10:15:00.000Z'],
    [1763720100.5, '2025-11-21T10:15:00.500Z'],
    [1763720100000, '2025-11-21T10:15:00.000Z'],
    [99999999999, '5138-11-16T09:46:39.000Z'],
    [100000000000, '1973-03-03T09:46:40.000Z'],
    [-1, '1969-12-31T23:59:59.000Z'],
    ['1763720100', '2025-11-21T10:15:00.000Z'],
    ['1763720100000', '2025-11-21T10:15:00.000Z'],
    // the edges of every field's range
    ['2026-01-01T23:59:59Z', '2026-01-01T23:59:59.000Z'],
    ['2026-12-31T00:00:00Z', '2026-12-31T00:00:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    [253402300799999, '9999-12-31T23:59:59.999Z'],
    // offsets with minutes, both signs and both forms
    ['2026-11-21T15:45:00+05:30', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T04:45:00-05:30', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T15:45:00+0530', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21T10:15:00+23:59', '2026-11-20T10:16:00.000Z'],
    ['2026-11-21t10:15:00z', '2026-11-21T10:15:00.000Z'],
    ['2026-11-21 10:15:00,5Z', '2026-11-21T10:15:00.500Z'],
    [' 2026-11-21T10:15:00Z\t', '2026-11-21T10:15:00.000Z'],
    ['2024-02-29T23:59:59.999-00:01', '2024-03-01T00:00:59.999Z'],
  ])('reads %p', (raw, iso) => {
    expect(ts(raw)).toEqual(E.right(iso));
  });

  it.each([
    ['yesterday'], ['2026-13-01'], ['2026-02-30'], ['2026-11-21T25:00:00Z'], [''], [true], [{}], [[1]], ['-5'], ['1.5e9'], [Infinity],
    // one past the edge of each field: never rolled over into the next minute, hour, day or month
    ['2026-00-10'], ['2026-01-00'], ['2023-02-29'], ['2026-11-21T24:00:00Z'], ['2026-11-21T10:60:00Z'], ['2026-11-21T10:15:60Z'],
    ['2026-11-21T10:15:00+24:00'], ['2026-11-21T10:15:00+05:60'], ['2026-11-21T10:15:00-24:00'], [253402300800000], [-62167219200001],
    ['2026-04-31'], ['2026-11-31T00:00:00Z'], ['x2026-11-21T10:15:00Z'], ['2026-11-21T10:15:00Zx'], ['2026-11-21T10:15:00+05'], [NaN], [-Infinity],
  ])(
    'rejects %p',
    (raw) => {
      expect(ts(raw)).toEqual(E.left(`invalid timestamp at path 'ts': ${typeof raw === 'number' && !Number.isFinite(raw) ? String(raw) : JSON.stringify(raw)}`));
    },
  );

  it('keeps the contract example text', () => {
    expect(ts('yesterday')).toEqual(E.left(`invalid timestamp at path 'ts': "yesterday"`));
  });
});
