import fc from 'fast-check';
import type { MappedPoint } from '../src/mapping/apply';
import { APPEND_SCRIPT, hasScript, SCRIPT_ENTRIES, withoutScripts, writeCommands } from '../src/mapping/commands';
import type { Mapping } from '../src/mapping/types';

/**
 * The append script as data (README "How a write reaches Redis"): the `EVAL`s `writeCommands`
 * builds carry exactly the `XADD`s it builds without them — the same entries, fields and order —
 * and `withoutScripts` turns one into the other. That the script appends what its arguments say is
 * shown against Redis in `inbound.append.test.ts`.
 */
const mapping = { name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36 } as unknown as Mapping;
const pointOf = (casdu: number, ioa: number, value: number, i: number): MappedPoint => {
  const point = { casdu, ioa, type: 36 as const, value, timestamp: `2026-11-27T00:00:${String(i % 60).padStart(2, '0')}.000Z`, source: 'src' };
  return { mapping, point, json: JSON.stringify(point) };
};
const points = fc.array(fc.tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 16777215 }), fc.double({ noNaN: true, noDefaultInfinity: true })), { minLength: 1, maxLength: 40 })
  .map((xs) => xs.map(([c, i, v], n) => pointOf(c, i, v, n)));
const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

it('the scripts carry exactly the XADDs, in order, with and without a traceparent; the MSET is the same', () => {
  fc.assert(fc.property(points, fc.boolean(), (ps, traced) => {
    const tp = traced ? TP : undefined;
    const plain = writeCommands(ps, 'src', 5000, tp);
    const scripted = writeCommands(ps, 'src', 5000, tp, true);
    expect(scripted).toHaveLength(2);
    expect(scripted[0]).toEqual(plain[0]);
    expect(scripted[1]!.slice(0, 7)).toEqual(['eval', APPEND_SCRIPT, '1', 'process:updates', '5000', 'src', tp ?? '']);
    expect([hasScript(scripted), hasScript(plain)]).toEqual([true, false]);
    expect(withoutScripts(scripted)).toEqual(plain);
    // other commands pass through untouched, in their place
    const done: readonly [string, ...string[]] = ['set', 'idem', 'x'];
    expect(withoutScripts([...scripted, done])).toEqual([...plain, done]);
  }));
});

it(`more than ${SCRIPT_ENTRIES} entries: one EVAL per ${SCRIPT_ENTRIES}, in order`, () => {
  const many = Array.from({ length: 2 * SCRIPT_ENTRIES + 3 }, (_, i) => pointOf(1, i % 7, i, i));
  const scripted = writeCommands(many, 'src', 100, undefined, true);
  expect(scripted.map((c) => (c[0] === 'eval' ? (c.length - 7) / 3 : c[0]))).toEqual(['mset', SCRIPT_ENTRIES, SCRIPT_ENTRIES, 3]);
  expect(withoutScripts(scripted)).toEqual(writeCommands(many, 'src', 100));
  expect(writeCommands([], 'src', 100, undefined, true)).toEqual([]);
  // exactly SCRIPT_ENTRIES: one EVAL, no empty one after it
  expect(writeCommands(many.slice(0, SCRIPT_ENTRIES), 'src', 100, undefined, true).map((c) => c[0])).toEqual(['mset', 'eval']);
});

it('only the append script is expanded or found: another EVAL, or a value that happens to be its text, is left alone', () => {
  const other: readonly [string, ...string[]] = ['eval', 'return 1', '0'];
  const value: readonly [string, ...string[]] = ['set', APPEND_SCRIPT, APPEND_SCRIPT];
  expect(withoutScripts([other, value])).toEqual([other, value]);
  expect(hasScript([other, value])).toBe(false);
});
