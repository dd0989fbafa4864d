import fc from 'fast-check';
import type { MappedPoint } from '../src/mapping/apply';
import { APPEND_PROBE, APPEND_SCRIPT, isAppends, renderWrites, SCRIPT_ENTRIES, writeCommands, writePlan } from '../src/mapping/commands';
import type { Mapping } from '../src/mapping/types';

/**
 * The append script as data (README "How a write reaches Redis"): a write's stream entries are
 * planned once (`writePlan`) and rendered as `EVAL`s or `XADD`s (`renderWrites`); the `EVAL`s
 * carry exactly the `XADD`s — the same entries, fields and order. That the script appends what its arguments say is
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

/** The XADDs an EVAL of the append script runs, as the script text says (pinned below). */
const xaddsOfScript = (c: readonly string[]): string[][] => {
  const [, , , key, max, source, tp, ...values] = c;
  const out: string[][] = [];
  for (let i = 0; i < values.length; i += 3) {
    out.push(['xadd', key!, 'MAXLEN', '~', max!, '*', 'casdu', values[i]!, 'ioa', values[i + 1]!, 'source', source!, 'data', values[i + 2]!, ...(tp === '' ? [] : ['traceparent', tp!])]);
  }
  return out;
};

it('the script is rendered from the entry declared once: its text, and the probe checking the XADD it runs', () => {
  expect(APPEND_SCRIPT).toBe(`#!lua
local key, maxlen, source, tp = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
for i = 4, #ARGV, 3 do
  if tp == '' then
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'casdu', ARGV[i], 'ioa', ARGV[i + 1], 'source', source, 'data', ARGV[i + 2])
  else
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'casdu', ARGV[i], 'ioa', ARGV[i + 1], 'source', source, 'data', ARGV[i + 2], 'traceparent', tp)
  end
end
return (#ARGV - 3) / 3
`);
  expect(APPEND_PROBE).toContain("redis.acl_check_cmd('XADD', KEYS[1], 'MAXLEN', '~', '1', '*', 'casdu', '0', 'ioa', '0', 'source', '0', 'data', '0', 'traceparent', '0')");
  expect(APPEND_PROBE.startsWith('#!lua flags=no-writes\n')).toBe(true);
});

it('the scripts carry exactly the XADDs, in order, with and without a traceparent; the MSET is the same; other commands stay in their place', () => {
  fc.assert(fc.property(points, fc.boolean(), (ps, traced) => {
    const tp = traced ? TP : undefined;
    const done: readonly [string, ...string[]] = ['set', 'idem', 'x'];
    const plan = [...writePlan(ps, 'src', 5000, tp), done];
    const plain = renderWrites(plan, false);
    const scripted = renderWrites(plan, true);
    expect(scripted).toHaveLength(3);
    expect(scripted[0]).toEqual(plain[0]);
    expect(scripted[1]!.slice(0, 7)).toEqual(['eval', APPEND_SCRIPT, '1', 'process:updates', '5000', 'src', tp ?? '']);
    expect([scripted[0], ...xaddsOfScript(scripted[1]!), scripted[2]]).toEqual(plain);
    expect(plain[plain.length - 1]).toEqual(done);
    expect(writeCommands(ps, 'src', 5000, tp)).toEqual(plain.slice(0, -1));
    expect(writeCommands(ps, 'src', 5000, tp, true)).toEqual(scripted.slice(0, -1));
  }));
});

it(`more than ${SCRIPT_ENTRIES} entries: one EVAL per ${SCRIPT_ENTRIES}, in order`, () => {
  const many = Array.from({ length: 2 * SCRIPT_ENTRIES + 3 }, (_, i) => pointOf(1, i % 7, i, i));
  const scripted = writeCommands(many, 'src', 100, undefined, true);
  expect(scripted.map((c) => (c[0] === 'eval' ? (c.length - 7) / 3 : c[0]))).toEqual(['mset', SCRIPT_ENTRIES, SCRIPT_ENTRIES, 3]);
  expect([scripted[0], ...scripted.slice(1).flatMap(xaddsOfScript)]).toEqual(writeCommands(many, 'src', 100));
  expect(writeCommands([], 'src', 100, undefined, true)).toEqual([]);
  expect(writePlan([], 'src', 100)).toEqual([]);
  // exactly SCRIPT_ENTRIES: one EVAL, no empty one after it
  expect(writeCommands(many.slice(0, SCRIPT_ENTRIES), 'src', 100, undefined, true).map((c) => c[0])).toEqual(['mset', 'eval']);
});

it('only the planned entries are rendered: a command that is an EVAL, or holds the script\'s text, is left alone', () => {
  const other: readonly [string, ...string[]] = ['eval', 'return 1', '0'];
  const value: readonly [string, ...string[]] = ['set', APPEND_SCRIPT, APPEND_SCRIPT];
  expect(renderWrites([other, value], false)).toEqual([other, value]);
  expect(renderWrites([other, value], true)).toEqual([other, value]);
  expect([other, value].some(isAppends)).toBe(false);
});
