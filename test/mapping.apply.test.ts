import * as E from 'fp-ts/Either';
import fc from 'fast-check';
import { compilePath } from '../src/mapping/path';
import { applyMappings } from '../src/mapping/apply';
import { byTopic, errorCommands, writeCommands } from '../src/mapping/commands';
import { failureBody, okBody } from '../src/mapping/responses';
import type { Mapping, TypeCode, ValueType } from '../src/mapping/types';

const path = (s: string) => {
  const r = compilePath(s);
  if (E.isLeft(r)) throw new Error(r.left.message);
  return r.right;
};
const m = (name: string, valuePath: string, type: TypeCode, extra: { valueType?: ValueType; ts?: string; ioa?: number } = {}): Mapping => ({
  name, topic: 't', casdu: 1, ioa: extra.ioa ?? 100, type, valuePath: path(valuePath), valueType: extra.valueType ?? 'float', array: 'each',
  ...(extra.ts !== undefined ? { timestampPath: path(extra.ts) } : {}),
});
const RECEIVED = '2026-11-21T10:00:00.000Z';

describe('applyMappings', () => {
  const mappings = [
    m('temp', 'sensors.temp', 36, { ts: 'ts', ioa: 1 }),
    m('on', 'state', 1, { valueType: 'bool', ioa: 2 }),
    m('tap', 'taps[1].pos', 32, { valueType: 'int', ioa: 3 }),
  ];

  it('yields every data point, in mapping order, with the request time where no timestamp path is set', () => {
    const body = { sensors: { temp: '21.5' }, ts: '2026-11-21T09:00:00Z', state: 'on', taps: [{}, { pos: -3 }] };
    const r = applyMappings(mappings, body, RECEIVED, 'in-1');
    if (E.isLeft(r)) throw new Error(JSON.stringify(r.left));
    expect(r.right.map((p) => p.point)).toEqual([
      { casdu: 1, ioa: 1, type: 36, value: 21.5, timestamp: '2026-11-21T09:00:00.000Z', source: 'in-1' },
      { casdu: 1, ioa: 2, type: 1, value: true, timestamp: RECEIVED, source: 'in-1' },
      { casdu: 1, ioa: 3, type: 32, value: -3, timestamp: RECEIVED, source: 'in-1' },
    ]);
    expect(r.right[0]!.json).toBe(JSON.stringify(r.right[0]!.point));
    expect(okBody('t', r.right)).toEqual({ topic: 't', succeeded: ['temp', 'on', 'tap'] });
  });

  it('evaluates every mapping and reports all failures with the names that succeeded', () => {
    const r = applyMappings(mappings, { sensors: { temp: null }, state: 'on', taps: [] }, RECEIVED, 'in-1');
    if (E.isRight(r)) throw new Error('expected failures');
    expect(failureBody('t', r.left)).toEqual({
      topic: 't',
      message: '2 of 3 mappings failed',
      failed: [
        { signalId: 'temp', error: "value at path 'sensors.temp' is null" },
        { signalId: 'tap', error: "value not found at path 'taps[1].pos'" },
      ],
      succeeded: [{ signalId: 'on' }],
    });
  });

  it('names a missing or null timestamp', () => {
    const one = [m('temp', 'v', 36, { ts: 'meta.ts' })];
    const missing = applyMappings(one, { v: 1 }, RECEIVED, 's');
    const nul = applyMappings(one, { v: 1, meta: { ts: null } }, RECEIVED, 's');
    const bad = applyMappings(one, { v: 1, meta: { ts: 'yesterday' } }, RECEIVED, 's');
    expect(E.isLeft(missing) && missing.left.failed[0]!.error).toBe("timestamp not found at path 'meta.ts'");
    expect(E.isLeft(nul) && nul.left.failed[0]!.error).toBe("timestamp at path 'meta.ts' is null");
    expect(E.isLeft(bad) && bad.left.failed[0]!.error).toBe(`invalid timestamp at path 'meta.ts': "yesterday"`);
  });

  it('turns points into one MSET of every key, in mapping order, then one XADD per mapping, and failures into error-stream entries only', () => {
    const r = applyMappings([m('a', 'v', 36, { ioa: 7 }), m('b', 'w', 36, { ioa: 8 }), m('c', 'v2', 36, { ioa: 7 })], { v: 1, w: 2, v2: 3 }, RECEIVED, 'src');
    if (E.isLeft(r)) throw new Error('unexpected');
    const json = (ioa: number, value: number) => `{"casdu":1,"ioa":${ioa},"type":36,"value":${value},"timestamp":"2026-11-21T10:00:00.000Z","source":"src"}`;
    const xadd = (ioa: number, value: number) => ['xadd', 'process:updates', 'MAXLEN', '~', '5000', '*', 'casdu', '1', 'ioa', String(ioa), 'source', 'src', 'data', json(ioa, value)];
    // a key written by two mappings: MSET names it once (where it first comes) with the later one's value, as two SETs in order would leave it
    expect(writeCommands(r.right, 'src', 5000)).toEqual([
      ['mset', 'process:image:casdu:1:ioa:7', json(7, 3), 'process:image:casdu:1:ioa:8', json(8, 2)],
      xadd(7, 1), xadd(8, 2), xadd(7, 3),
    ]);
    expect(writeCommands([], 'src', 5000)).toEqual([]);
    const f = applyMappings([m('a', 'v', 36, { ioa: 7 })], {}, RECEIVED, 'src');
    if (E.isRight(f)) throw new Error('unexpected');
    expect(errorCommands('c1', 'T', f.left)).toEqual([
      ['xadd', 'connectors:c1:errors', 'MAXLEN', '~', '10000', '*', 'topic', 'T', 'signalId', 'a', 'error', "value not found at path 'v'", 'casdu', '1', 'ioa', '7'],
    ]);
  });

  it('groups mappings by topic, keeping their order', () => {
    const ms = [{ ...m('a', 'x', 36), topic: 'p' }, { ...m('b', 'x', 36), topic: 'q' }, { ...m('c', 'x', 36), topic: 'p' }];
    const index = byTopic(ms);
    expect(index.get('p')!.map((x) => x.name)).toEqual(['a', 'c']);
    expect(index.get('q')!.map((x) => x.name)).toEqual(['b']);
    expect(index.get('r')).toBeUndefined();
  });

  it('never throws on arbitrary JSON and paths, and always yields one outcome per mapping', () => {
    const types: TypeCode[] = [1, 13, 30, 32, 36];
    const valueTypes: ValueType[] = ['float', 'int', 'bool', 'string'];
    const mappingArb = fc.record({
      p: fc.oneof(fc.constantFrom('a', 'a.b', 'a[0]', '[0]', 'constructor', '__proto__', 'a[1].b'), fc.stringMatching(/^[a-c]{1,3}(\.[a-c]{1,2}|\[[0-2]\]){0,3}$/)),
      t: fc.constantFrom(...types),
      vt: fc.constantFrom(...valueTypes),
      ts: fc.option(fc.constantFrom('t', 'a', 'a.t')),
    });
    fc.assert(
      fc.property(fc.array(mappingArb, { minLength: 1, maxLength: 6 }), fc.jsonValue(), (specs, body) => {
        const ms = specs.map((s, i) => m(`m${i}`, s.p, s.t, { valueType: s.vt, ...(s.ts !== null ? { ts: s.ts } : {}) }));
        const r = applyMappings(ms, body, RECEIVED, 's');
        const n = E.isRight(r) ? r.right.length : r.left.failed.length + r.left.succeeded.length;
        expect(n).toBe(ms.length);
      }),
      { numRuns: 3000 },
    );
  });

  it('a body that holds a valid value for every mapping yields every point, and each point\'s JSON is the point', () => {
    // each mapping reads its own field, with a value valid for its valueType and type code
    const kinds = [
      fc.record({ vt: fc.constant<ValueType>('float'), t: fc.constantFrom<TypeCode>(13, 36), v: fc.double({ noNaN: true, noDefaultInfinity: true }) }),
      fc.record({ vt: fc.constant<ValueType>('int'), t: fc.constant<TypeCode>(32), v: fc.integer({ min: -64, max: 63 }) }),
      fc.record({ vt: fc.constant<ValueType>('bool'), t: fc.constantFrom<TypeCode>(1, 30), v: fc.boolean() }),
    ];
    const at = fc.record({ nested: fc.boolean(), ts: fc.option(fc.date({ min: new Date(0), max: new Date(253402300799999), noInvalidDate: true })) });
    let points = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(...kinds), at), { minLength: 1, maxLength: 6 }), (specs) => {
        const body: { x: Record<string, unknown>; [k: string]: unknown } = { x: {} };
        const ms = specs.map(([k, a], i) => {
          (a.nested ? body.x : body)[`f${i}`] = k.v;
          if (a.ts !== null) body[`t${i}`] = a.ts.toISOString();
          return m(`m${i}`, a.nested ? `x.f${i}` : `f${i}`, k.t, { valueType: k.vt, ioa: i, ...(a.ts !== null ? { ts: `t${i}` } : {}) });
        });
        const r = applyMappings(ms, JSON.parse(JSON.stringify(body)) as unknown, RECEIVED, 's');
        if (E.isLeft(r)) throw new Error(`refused: ${JSON.stringify(r.left)}`);
        expect(r.right.map((p) => [p.point.ioa, p.point.timestamp])).toEqual(specs.map(([, a], i) => [i, a.ts === null ? RECEIVED : a.ts.toISOString()]));
        for (const p of r.right) expect(JSON.parse(p.json)).toEqual(p.point);
        points += r.right.length;
      }),
      { numRuns: 1000 },
    );
    expect(points).toBeGreaterThanOrEqual(1000);
  });
});
