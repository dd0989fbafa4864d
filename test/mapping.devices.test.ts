import * as E from 'fp-ts/Either';
import fc from 'fast-check';
import { applyMappings, applyToPayload } from '../src/mapping/apply';
import { errorCommands, writeCommands } from '../src/mapping/commands';
import { compilePath, lookup } from '../src/mapping/path';
import { DEFAULT_MAX_BATCH_ITEMS, itemCount, payloadOf, type Payload } from '../src/mapping/payload';
import { EACH_ITEM_HINT, failureBody, okBody } from '../src/mapping/responses';
import { scaled } from '../src/mapping/scale';
import type { MappedValue, Mapping, Scale, TypeCode, ValueType } from '../src/mapping/types';
import { parseJsonBody } from '../src/mapping/writtenNumbers';

/** CONTRACT 5.5, the pure rules: selectors, value maps, scaling, array bodies. Every row of the contract's text. */
const path = (s: string) => {
  const r = compilePath(s);
  if (E.isLeft(r)) throw new Error(r.left.message);
  return r.right;
};
const at = (p: string, body: unknown) => lookup(path(p), body);
const syntax = (s: string) => {
  const r = compilePath(s);
  if (E.isRight(r)) throw new Error(`expected a syntax error for ${s}`);
  return r.left;
};
interface Extra { valueType?: ValueType; ts?: string; ioa?: number; valueMap?: Record<string, MappedValue>; scale?: Scale; array?: 'each' | 'whole' }
const m = (name: string, valuePath: string, type: TypeCode, extra: Extra = {}): Mapping => ({
  name, topic: 't', casdu: 1, ioa: extra.ioa ?? 100, type, valuePath: path(valuePath), valueType: extra.valueType ?? 'float', array: extra.array ?? 'each',
  ...(extra.ts !== undefined ? { timestampPath: path(extra.ts) } : {}),
  ...(extra.valueMap !== undefined ? { valueMap: new Map(Object.entries(extra.valueMap)) } : {}),
  ...(extra.scale !== undefined ? { scale: extra.scale } : {}),
});
const RECEIVED = '2026-11-21T10:00:00.000Z';
/** One mapping on one body: its value, or its error text. */
const one = (mapping: Mapping, body: unknown): boolean | number | string => {
  const r = applyMappings([mapping], body, RECEIVED, 's');
  return E.isRight(r) ? r.right[0]!.point.value : r.left.failed[0]!.error;
};

describe('selectors [key=value] and [-N] (CONTRACT 5.5)', () => {
  it.each([
    ['readings[name=temp].value', [{ key: 'readings' }, { select: 'name', text: 'temp' }, { key: 'value' }]],
    ['devices[id=7].state', [{ key: 'devices' }, { select: 'id', text: '7' }, { key: 'state' }]],
    ['samples[-1].v', [{ key: 'samples' }, { fromEnd: 1 }, { key: 'v' }]],
    ['[-2]', [{ fromEnd: 2 }]],
    ['[k=v].x', [{ select: 'k', text: 'v' }, { key: 'x' }]],
    ['a[x=1 2=3.[y]', [{ key: 'a' }, { select: 'x', text: '1 2=3.[y' }]],
    ['a[b c=ü][0][-3]', [{ key: 'a' }, { select: 'b c', text: 'ü' }, { index: 0 }, { fromEnd: 3 }]],
  ])('compiles %p', (p, steps) => {
    expect(path(p).steps).toEqual(steps);
  });

  it.each([
    ['a[-]', 3, 'unexpected "]" at 3'],
    ['a[-x]', 3, 'unexpected "x" at 3'],
    ['a[-1', 4, 'unexpected end of path at 4'],
    ['a[-0]', 2, '[-0] at 2 selects nothing: [-1] is the last element'],
    ['a[=v]', 2, 'unexpected "=" at 2'],
    ['a[k=]', 4, 'unexpected "]" at 4'],
    ['a[k=v', 5, 'unexpected end of path at 5'],
    ['a[k.x=v]', 3, 'unexpected "." at 3'],
    ['a[k]', 3, 'unexpected "]" at 3'],
    ['a[k[=v]', 3, 'unexpected "[" at 3'],
    ['a[k=v]b', 6, 'unexpected "b" at 6'],
    ['a[.x=1]', 2, 'unexpected "." at 2'],
    ['a[ 1]', 4, 'unexpected "]" at 4'],
    ['a.[k=v]', 2, 'unexpected "[" at 2'],
  ])('refuses %p at %i', (p, position, message) => {
    expect(syntax(p)).toEqual({ position, message });
  });

  const body = {
    readings: [{ name: 'hum', value: 40 }, 'x', null, [1], { name: 'temp', value: 21.5 }, { name: 'temp', value: 99 }],
    ids: [{ id: 7.0, v: 'seven' }, { id: '7', v: 'text seven' }, { id: true, v: 'yes' }, { id: 1e21, v: 'big' }, { id: null, v: 'nul' }, { id: { a: 1 }, v: 'obj' }],
    samples: [{ v: 1 }, { v: 2 }, { v: 3 }],
  };

  it('selects the first element that is an object whose own key has the text: first match wins, other elements skipped', () => {
    expect(at('readings[name=temp].value', body)).toEqual({ found: true, value: 21.5 });
    expect(at('readings[name=hum].value', body)).toEqual({ found: true, value: 40 });
    expect(at('readings[name=pressure].value', body)).toEqual({ found: false });
    expect(at('readings[nam=temp]', body)).toEqual({ found: false });
  });

  it('compares numbers and booleans by their JSON text, strings as they are; null and objects never match', () => {
    expect(at('ids[id=7].v', body)).toEqual({ found: true, value: 'seven' });
    expect(at('ids[id=7.0].v', body)).toEqual({ found: false });
    expect(at('ids[id=true].v', body)).toEqual({ found: true, value: 'yes' });
    expect(at('ids[id=1e+21].v', body)).toEqual({ found: true, value: 'big' });
    expect(at('ids[id=null].v', body)).toEqual({ found: false });
    expect(at('ids[id={"a":1}].v', body)).toEqual({ found: false });
    // the string "7" comes after the number 7: the first match is the number's
    expect(at('ids[id=7]', { ids: [{ id: '7', v: 's' }, { id: 7, v: 'n' }] })).toEqual({ found: true, value: { id: '7', v: 's' } });
  });

  it('never matches __proto__ nor anything inherited; only arrays are selected from', () => {
    const tricky = JSON.parse('{"list":[{"__proto__":"x","v":1},{"toString":"a","v":2}],"obj":{"k":"v"}}') as unknown;
    expect(at('list[__proto__=x].v', tricky)).toEqual({ found: false });
    expect(at('list[toString=a].v', tricky)).toEqual({ found: true, value: 2 });
    expect(at('list[constructor=x].v', tricky)).toEqual({ found: false });
    expect(at('list[hasOwnProperty=x]', { list: [{}] })).toEqual({ found: false });
    expect(at('obj[k=v]', tricky)).toEqual({ found: false });
    expect(at('obj[-1]', tricky)).toEqual({ found: false });
  });

  it('[-N] counts from the end; past the start is not found', () => {
    expect(at('samples[-1].v', body)).toEqual({ found: true, value: 3 });
    expect(at('samples[-3].v', body)).toEqual({ found: true, value: 1 });
    expect(at('samples[-4].v', body)).toEqual({ found: false });
    expect(at('samples[-4]', body)).toEqual({ found: false });
    expect(at('samples[-1]', { samples: [] })).toEqual({ found: false });
    expect(at('[-1]', [5, 6])).toEqual({ found: true, value: 6 });
  });

  it('error texts quote the path as written', () => {
    expect(one(m('x', 'readings[name=co2].value', 36), body)).toBe("value not found at path 'readings[name=co2].value'");
    expect(one(m('x', 'samples[-9].v', 36), body)).toBe("value not found at path 'samples[-9].v'");
    expect(one(m('x', 'readings[name=temp].value', 36), body)).toBe(21.5);
  });
});

describe('valueMap (CONTRACT 5.5)', () => {
  const states = { RUN: true, STOP: false, '1': 'on', '0': 'off', '2': 'on', '4.5': 4.5, true: 'on' } as const;

  it('looks the raw value up as text and sends what it maps to on through valueType and the type', () => {
    expect(one(m('s', 's', 1, { valueType: 'bool', valueMap: states }), { s: 'RUN' })).toBe(true);
    expect(one(m('s', 's', 1, { valueType: 'bool', valueMap: states }), { s: 'STOP' })).toBe(false);
    expect(one(m('s', 's', 30, { valueType: 'bool', valueMap: states }), { s: 2 })).toBe(true);
    expect(one(m('s', 's', 30, { valueType: 'bool', valueMap: states }), { s: '0' })).toBe(false);
    expect(one(m('s', 's', 30, { valueType: 'bool', valueMap: states }), { s: true })).toBe(true);
    expect(one(m('s', 's', 36, { valueMap: states }), { s: 4.5 })).toBe(4.5);
    // the mapped value is what valueType reads: a string "on" is no float
    expect(one(m('s', 's', 36, { valueMap: states }), { s: 1 })).toBe(`value "on" at path 's' is not a float: valueType "float" reads what the value map gave for "1" (set "valueType": "string")`);
    // a boolean mapped without "valueType": "bool": the error says which valueType reads it
    expect(one(m('s', 's', 1, { valueMap: states }), { s: 'RUN' })).toBe(`value true at path 's' is not a float: valueType "float" reads what the value map gave for "RUN" (set "valueType": "bool")`);
    expect(one(m('s', 's', 36, { valueType: 'bool', valueMap: states }), { s: '4.5' })).toBe(`value 4.5 at path 's' is not a bool: valueType "bool" reads what the value map gave for "4.5" (set "valueType": "float")`);
    // without a value map the error is as it was
    expect(one(m('s', 's', 36), { s: true })).toBe(`value true at path 's' is not a float`);
  });

  it('a raw value not in the map fails with its text in double quotes', () => {
    const mapping = m('s', 'st', 1, { valueType: 'bool', valueMap: states });
    expect(one(mapping, { st: 'FAULT' })).toBe(`value "FAULT" at path 'st' is not in the value map`);
    expect(one(mapping, { st: 3 })).toBe(`value "3" at path 'st' is not in the value map`);
    // 4.50 is looked up by its JSON text "4.5", found, and its 4.5 is no bool
    expect(one(mapping, { st: 4.50 })).toBe(`value 4.5 at path 'st' is not a bool: valueType "bool" reads what the value map gave for "4.5" (set "valueType": "float")`);
    expect(one(mapping, { st: false })).toBe(`value "false" at path 'st' is not in the value map`);
    expect(one(mapping, { st: { a: 1 } })).toBe(`value "{"a":1}" at path 'st' is not in the value map`);
    expect(one(mapping, { st: 'x'.repeat(200) })).toBe(`value "${'x'.repeat(77)}..." at path 'st' is not in the value map`);
    expect(one(mapping, { st: 'y'.repeat(80) })).toBe(`value "${'y'.repeat(80)}" at path 'st' is not in the value map`);
    expect(one(mapping, { st: 'y'.repeat(81) })).toBe(`value "${'y'.repeat(77)}..." at path 'st' is not in the value map`);
    expect(one(mapping, parseJsonBody('{"st":1e400}'))).toBe(`value "1e400" at path 'st' is not in the value map`);
    // null and not found are told as before
    expect(one(mapping, { st: null })).toBe("value at path 'st' is null");
    expect(one(mapping, {})).toBe("value not found at path 'st'");
  });

  it('only the map\'s own keys match: never __proto__, nor anything inherited', () => {
    const mapping = m('s', 'st', 36, { valueMap: { a: 1 } });
    expect(one(mapping, { st: 'toString' })).toBe(`value "toString" at path 'st' is not in the value map`);
    expect(one(mapping, { st: '__proto__' })).toBe(`value "__proto__" at path 'st' is not in the value map`);
    expect(one(mapping, { st: 'constructor' })).toBe(`value "constructor" at path 'st' is not in the value map`);
  });
});

describe('scale (CONTRACT 5.5)', () => {
  it.each<[string, Scale, number, number]>([
    ['factor and offset', { factor: 0.1, offset: -40 }, 615, 21.5],
    ['factor alone (offset 0)', { factor: 2, offset: 0 }, 3, 6],
    ['4-20 mA from 0..4095', { raw: [0, 4095], scaled: [4, 20], clamp: false }, 4095, 20],
    ['the middle of a range', { raw: [0, 10], scaled: [0, 100], clamp: false }, 3, 30],
    ['beyond the range, unclamped', { raw: [0, 10], scaled: [0, 100], clamp: false }, 12, 120],
    ['beyond the range, clamped', { raw: [0, 10], scaled: [0, 100], clamp: true }, 12, 100],
    ['below the range, clamped', { raw: [0, 10], scaled: [0, 100], clamp: true }, -1, 0],
    ['a reversed scaled range', { raw: [0, 10], scaled: [100, 0], clamp: false }, 3, 70],
    ['a reversed scaled range, clamped above', { raw: [0, 10], scaled: [100, 0], clamp: true }, -5, 100],
    ['a reversed scaled range, clamped below', { raw: [0, 10], scaled: [100, 0], clamp: true }, 15, 0],
    ['a reversed raw range', { raw: [10, 0], scaled: [0, 100], clamp: true }, 2, 80],
    ['a product that overflows alone', { raw: [0, 1e300], scaled: [0, 1e300], clamp: false }, 1e300, 1e300],
    ['a product that overflows alone, ranges off zero', { raw: [-1e300, 1e300], scaled: [-1e300, 1e300], clamp: false }, 5e299, 5e299],
  ])('%s', (_what, scale, v, expected) => {
    expect(scaled(scale, v)).toBeCloseTo(expected, 9);
  });

  it.each<[Scale, number, number]>([
    // CONTRACT 5.5: rounded to 15 significant digits — exactly these numbers, no binary noise
    [{ factor: 0.01, offset: 0 }, 3024, 30.24], [{ factor: 0.01, offset: 0 }, 4005, 40.05], [{ factor: 0.1, offset: 0 }, 3, 0.3],
    [{ factor: 0.1, offset: 0.2 }, 1, 0.3], [{ factor: 1, offset: 0 }, 123456789012345, 123456789012345], [{ factor: 1, offset: 0 }, 1234567890123456, 1234567890123460],
    [{ factor: 1e-20, offset: 0 }, 3, 3e-20], [{ raw: [0, 3], scaled: [0, 1], clamp: false }, 1, 0.333333333333333], [{ factor: -0.01, offset: 0 }, 3024, -30.24],
  ])('rounded: %j of %d is exactly %d', (scale, v, expected) => {
    expect(scaled(scale, v)).toBe(expected);
    expect(JSON.stringify(scaled(scale, v))).toBe(JSON.stringify(expected));
  });

  it('what does not scale to a finite number stays so (refused by the mapping)', () => {
    expect(scaled({ factor: 1e300, offset: 0 }, 1e300)).toBe(Infinity);
    expect(scaled({ factor: -1e300, offset: 0 }, 1e300)).toBe(-Infinity);
  });

  it('is applied after valueType and before the type\'s conversion; what is no number fails as the type says', () => {
    const tenths = { factor: 0.1, offset: 0 };
    expect(one(m('t', 't', 36, { scale: tenths }), { t: '215' })).toBeCloseTo(21.5, 9);
    expect(one(m('t', 't', 13, { valueType: 'int', scale: tenths }), { t: 215 })).toBeCloseTo(21.5, 9);
    expect(one(m('t', 't', 36, { valueType: 'string', scale: tenths }), { t: '215' })).toBeCloseTo(21.5, 9);
    expect(one(m('t', 't', 36, { valueType: 'string', scale: tenths }), { t: 'abc' })).toBe(`value "abc" at path 't' is not a number for type 36`);
    expect(one(m('t', 't', 13, { valueType: 'bool', scale: tenths }), { t: true })).toBe(`value true at path 't' is not a number for type 13`);
    expect(one(m('t', 't', 36, { scale: tenths }), { t: 'x' })).toBe(`value "x" at path 't' is not a float`);
    // a value map first, then the scale
    expect(one(m('t', 't', 36, { valueMap: { LOW: 10, HIGH: 90 }, scale: { factor: 2, offset: 1 } }), { t: 'HIGH' })).toBe(181);
  });

  it('a result that is not finite fails, naming the value being scaled as 5.4 writes values', () => {
    expect(one(m('t', 't', 36, { scale: { factor: 1e308, offset: 0 } }), { t: 10 })).toBe(`value 10 at path 't' scales to a number that is not finite`);
    expect(one(m('t', 't', 36, { valueType: 'string', scale: { factor: 1e308, offset: 0 } }), { t: '1e10' })).toBe(`value "1e10" at path 't' scales to a number that is not finite`);
    expect(one(m('t', 't', 36, { scale: { raw: [0, 1e-300], scaled: [0, 1e300], clamp: false } }), { t: 1e300 })).toBe(`value 1e+300 at path 't' scales to a number that is not finite`);
    // clamped, the same is limited to the range
    expect(one(m('t', 't', 36, { scale: { raw: [0, 1e-300], scaled: [0, 1e300], clamp: true } }), { t: 1e300 })).toBe(1e300);
  });
});

describe('array bodies (CONTRACT 5.5)', () => {
  const readings = [m('temp', 'readings[name=temp].value', 36, { ioa: 1, ts: 'ts' }), m('state', 'state', 1, { ioa: 2, valueType: 'bool', valueMap: { RUN: true, STOP: false } })];
  const item = (t: number, st: string, ts: string) => ({ ts, state: st, readings: [{ name: 'hum', value: 1 }, { name: 'temp', value: t }] });
  const items: Payload = { kind: 'items', items: [item(20, 'RUN', '2026-11-21T08:00:00Z'), item(21, 'RUN', '2026-11-21T08:01:00Z'), item(22, 'STOP', '2026-11-21T08:02:00Z')] };

  it('payloadOf: an object, or 1 to Http:MaxBatchItems objects; the message says what is wrong', () => {
    const shape = 'the body must be a JSON object or an array of 1 to 3 objects';
    expect(payloadOf({ a: 1 }, 3)).toEqual(E.right({ kind: 'object', value: { a: 1 } }));
    expect(payloadOf([{}, { a: 1 }], 3)).toEqual(E.right({ kind: 'items', items: [{}, { a: 1 }] }));
    expect(payloadOf([{}, {}, {}], 3)).toEqual(E.right({ kind: 'items', items: [{}, {}, {}] }));
    expect(payloadOf([], 3)).toEqual(E.left(`${shape}: the array is empty`));
    expect(payloadOf([{}, {}, {}, {}], 3)).toEqual(E.left(`${shape}: the array has 4 items, more than 3 (Http:MaxBatchItems)`));
    expect(payloadOf([{}, null, 1], 3)).toEqual(E.left(`${shape}: item 1 is not an object`));
    expect(payloadOf([1, {}], 3)).toEqual(E.left(`${shape}: item 0 is not an object`));
    expect(payloadOf([{}, [{}]], 3)).toEqual(E.left(`${shape}: item 1 is not an object`));
    for (const u of [null, 1, 'x', true]) expect(payloadOf(u, 3)).toEqual(E.left(shape));
    // a number too large for a double is kept as written (a WrittenNumber), and is still a number
    expect(payloadOf(parseJsonBody('[1e400]'), 3)).toEqual(E.left(`${shape}: item 0 is not an object`));
    expect(payloadOf(parseJsonBody('[{}, -1e400]'), 3)).toEqual(E.left(`${shape}: item 1 is not an object`));
    expect(payloadOf(parseJsonBody('1e400'), 3)).toEqual(E.left(shape));
    expect(payloadOf(parseJsonBody('{"v": 1e400}'), 3)).toEqual(E.right({ kind: 'object', value: { v: expect.anything() } }));
    expect([itemCount({ kind: 'object', value: {} }), itemCount(items), DEFAULT_MAX_BATCH_ITEMS]).toEqual([undefined, 3, 1000]);
  });

  it('every mapping on every item: the points items in order, mappings in order within an item; the image ends on the last item', () => {
    const r = applyToPayload(readings, items, RECEIVED, 'src');
    if (E.isLeft(r)) throw new Error(JSON.stringify(r.left));
    expect(r.right.map((p) => [p.mapping.name, p.point.value, p.point.timestamp])).toEqual([
      ['temp', 20, '2026-11-21T08:00:00.000Z'], ['state', true, RECEIVED],
      ['temp', 21, '2026-11-21T08:01:00.000Z'], ['state', true, RECEIVED],
      ['temp', 22, '2026-11-21T08:02:00.000Z'], ['state', false, RECEIVED],
    ]);
    const [mset, ...xadds] = writeCommands(r.right, 'src', 100);
    expect(mset).toEqual(['mset', 'process:image:casdu:1:ioa:1', r.right[4]!.json, 'process:image:casdu:1:ioa:2', r.right[5]!.json]);
    expect(xadds.map((x) => x[x.length - 1])).toEqual(r.right.map((p) => p.json));
    expect(okBody('t', r.right, 3)).toEqual({ topic: 't', items: 3, succeeded: ['temp', 'state'] });
  });

  it('any failure: every failure with its item, in item order and mapping order; succeeded: the mappings that succeeded on every item', () => {
    const bad: Payload = { kind: 'items', items: [item(20, 'RUN', '2026-11-21T08:00:00Z'), { ts: 'later', state: 'FAULT', readings: [] }, item(22, 'HALT', '2026-11-21T08:02:00Z')] };
    const r = applyToPayload(readings, bad, RECEIVED, 'src');
    if (E.isRight(r)) throw new Error('expected failures');
    expect(failureBody('t', r.left, 3)).toEqual({
      topic: 't', message: '3 of 6 mappings failed', items: 3,
      failed: [
        { signalId: 'temp', error: "value not found at path 'readings[name=temp].value'", item: 1 },
        { signalId: 'state', error: `value "FAULT" at path 'state' is not in the value map`, item: 1 },
        { signalId: 'state', error: `value "HALT" at path 'state' is not in the value map`, item: 2 },
      ],
      succeeded: [],
    });
    const onlyState: Payload = { kind: 'items', items: [item(20, 'RUN', 'x'), item(21, 'STOP', '2026-11-21T08:01:00Z')] };
    const r2 = applyToPayload(readings, onlyState, RECEIVED, 'src');
    if (E.isRight(r2)) throw new Error('expected failures');
    expect(failureBody('t', r2.left, 2)).toEqual({
      topic: 't', message: '1 of 4 mappings failed', items: 2,
      failed: [{ signalId: 'temp', error: `invalid timestamp at path 'ts': "x"`, item: 0 }],
      succeeded: [{ signalId: 'state' }],
    });
    expect(errorCommands('c', 't', r2.left)).toEqual([
      ['xadd', 'connectors:c:errors', 'MAXLEN', '~', '10000', '*', 'topic', 't', 'signalId', 'temp', 'error', `invalid timestamp at path 'ts': "x"`, 'casdu', '1', 'ioa', '1', 'item', '0'],
    ]);
  });

  describe('"array": "whole": a gateway\'s array of devices, one document (CONTRACT 5.5)', () => {
    const devices: Payload = { kind: 'items', items: [{ id: 'T1', temp_raw: 2150, state: 'RUN' }, { id: 'T2', temp_raw: 3024, state: 'STOP' }] };
    const t1 = m('t1', '[id=T1].temp_raw', 36, { ioa: 1, array: 'whole', scale: { factor: 0.01, offset: 0 } });
    const t2 = m('t2', '[id=T2].temp_raw', 36, { ioa: 2, array: 'whole', scale: { factor: 0.01, offset: 0 } });
    const s2 = m('s2', '[-1].state', 1, { ioa: 3, array: 'whole', valueType: 'bool', valueMap: { RUN: true, STOP: false } });

    it('each whole mapping applied once, picking its own device; the values rounded', () => {
      const r = applyToPayload([t1, t2, s2], devices, RECEIVED, 'src');
      if (E.isLeft(r)) throw new Error(JSON.stringify(r.left.failed.map((f) => f.error)));
      expect(r.right.map((p) => [p.mapping.name, p.point.ioa, p.point.value])).toEqual([['t1', 1, 21.5], ['t2', 2, 30.24], ['s2', 3, false]]);
      expect(okBody('t', r.right, 2)).toStrictEqual({ topic: 't', items: 2, succeeded: ['t1', 't2', 's2'] });
    });

    it('each and whole on one topic: each on every item, whole once after them; M = N × each + whole; whole failures carry no item', () => {
      const id = m('id', 'id', 32, { ioa: 9, valueType: 'int', valueMap: { T1: 1, T2: 2 } });
      const ok = applyToPayload([t1, id, t2], devices, RECEIVED, 'src');
      if (E.isLeft(ok)) throw new Error('unexpected');
      expect(ok.right.map((p) => [p.mapping.name, p.point.value])).toEqual([['id', 1], ['id', 2], ['t1', 21.5], ['t2', 30.24]]);
      expect(okBody('t', ok.right, 2).succeeded).toEqual(['id', 't1', 't2']);
      const missing = m('t3', '[id=T3].temp_raw', 36, { ioa: 4, array: 'whole' });
      const bad = applyToPayload([t1, id, missing], { kind: 'items', items: [...devices.items, { id: 'T9', temp_raw: 1 }] }, RECEIVED, 'src');
      if (E.isRight(bad)) throw new Error('expected failures');
      expect(failureBody('t', bad.left, 3)).toEqual({
        topic: 't', message: '2 of 5 mappings failed', items: 3,
        failed: [
          { signalId: 'id', error: `value "T9" at path 'id' is not in the value map`, item: 2 },
          { signalId: 't3', error: "value not found at path '[id=T3].temp_raw'" },
        ],
        succeeded: [{ signalId: 't1' }],
      });
      expect(errorCommands('c', 't', bad.left).map((c) => c.slice(-2))).toEqual([['item', '2'], ['ioa', '4']]);
    });

    it('on an object body "whole" changes nothing', () => {
      const r = applyToPayload([m('v', 'v', 36, { array: 'whole' })], { kind: 'object', value: { v: 3 } }, RECEIVED, 'src');
      expect(E.isRight(r) && r.right[0]!.point.value).toBe(3);
    });

    it('every mapping failed on every item of an array: the message says each was applied to every item, and names "array": "whole"', () => {
      const each = [m('t1', '[id=T1].temp_raw', 36, { ioa: 1 }), m('t2', '[id=T2].temp_raw', 36, { ioa: 2 })];
      const r = applyToPayload(each, devices, RECEIVED, 'src');
      if (E.isRight(r)) throw new Error('expected failures');
      expect(failureBody('t', r.left, 2).message).toBe(`4 of 4 mappings failed: ${EACH_ITEM_HINT}`);
      expect(EACH_ITEM_HINT).toContain('"array": "whole"');
      // not when something succeeded, nor for an object body
      const some = applyToPayload([...each, m('id', 'temp_raw', 36, { ioa: 3 })], devices, RECEIVED, 'src');
      expect(E.isLeft(some) && failureBody('t', some.left, 2).message).toBe('4 of 6 mappings failed');
      const object = applyToPayload(each, { kind: 'object', value: {} }, RECEIVED, 'src');
      expect(E.isLeft(object) && failureBody('t', object.left).message).toBe('2 of 2 mappings failed');
      // each and whole mappings that all failed: the hint too (some were applied to every item)
      const mixed = applyToPayload([each[0]!, m('w', '[id=T9].x', 36, { array: 'whole' })], devices, RECEIVED, 'src');
      expect(E.isLeft(mixed) && failureBody('t', mixed.left, 2).message).toBe(`3 of 3 mappings failed: ${EACH_ITEM_HINT}`);
      // nor when only whole mappings failed
      const wholes = applyToPayload([m('w', '[id=T7].x', 36, { array: 'whole' })], devices, RECEIVED, 'src');
      expect(E.isLeft(wholes) && failureBody('t', wholes.left, 2).message).toBe('1 of 1 mappings failed');
    });
  });

  it('a single object is answered exactly as before (no items)', () => {
    const r = applyToPayload(readings, { kind: 'object', value: item(20, 'RUN', '2026-11-21T08:00:00Z') }, RECEIVED, 'src');
    if (E.isLeft(r)) throw new Error('unexpected');
    // strictly: not even an `items` or `item` that is undefined
    expect(okBody('t', r.right)).toStrictEqual({ topic: 't', succeeded: ['temp', 'state'] });
    const f = applyToPayload(readings, { kind: 'object', value: {} }, RECEIVED, 'src');
    if (E.isRight(f)) throw new Error('unexpected');
    expect(failureBody('t', f.left)).toStrictEqual({
      topic: 't', message: '2 of 2 mappings failed',
      failed: [{ signalId: 'temp', error: "value not found at path 'readings[name=temp].value'" }, { signalId: 'state', error: "value not found at path 'state'" }],
      succeeded: [],
    });
  });

  it('property: an array of N copies of one object writes what N single requests would, in one transaction', () => {
    const body = fc.record({ state: fc.constantFrom('RUN', 'STOP', 'FAULT'), ts: fc.constantFrom('2026-11-21T08:00:00Z', 'never'), t: fc.oneof(fc.double({ noNaN: true }), fc.string()) });
    fc.assert(fc.property(body, fc.integer({ min: 1, max: 20 }), (b, n) => {
      const object = { ts: b.ts, state: b.state, readings: [{ name: 'temp', value: b.t }] };
      const single = applyMappings(readings, object, RECEIVED, 'src');
      const many = applyToPayload(readings, { kind: 'items', items: Array(n).fill(object) }, RECEIVED, 'src');
      if (E.isLeft(single)) {
        // every copy fails the same way: N times the failures, with their items
        expect(E.isLeft(many) && many.left.failed.map((f) => [f.mapping.name, f.error, f.item])).toEqual(
          Array.from({ length: n }, (_, i) => single.left.failed.map((f) => [f.mapping.name, f.error, i])).flat());
        return;
      }
      if (E.isLeft(many)) throw new Error('the copies failed where the object did not');
      const once = writeCommands(single.right, 'src', 100);
      const all = writeCommands(many.right, 'src', 100);
      // the same image (the keys with the same last values), and N times the single request's entries, in order
      expect(all[0]).toEqual(once[0]);
      expect(all.slice(1)).toEqual(Array.from({ length: n }, () => once.slice(1)).flat());
    }), { numRuns: 300 });
  });
});
