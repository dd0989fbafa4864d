import fc from 'fast-check';
import type { ReportSettings } from '../src/config/reportSettings';
import type { PointFilter } from '../src/config/webhookSettings';
import {
  canonical, candidateOf, decide, decodePart, decodeReported, encodePart, encodeReported, forgetMemo, reportable, ruleFor, type Candidate, type Reported,
} from '../src/streams/webhook/report';
import { reference } from '../support/reportReference';
import { decodeEntry } from '../src/streams/read/entries';

/** One table per invariant of src/streams/webhook/report.ts, then the whole against a reference written from CONTRACT 4.8. */
const entry = (id: string, point: Record<string, unknown>) => candidateOf({ id, json: JSON.stringify(point), casdu: point.casdu as number, ioa: point.ioa as number, type: point.type as number });
const P = (value: unknown, extra: Record<string, unknown> = {}) => ({ casdu: 1, ioa: 2, type: 36, value, timestamp: 't', ...extra });
/** The record an entry leaves, as Redis keeps it and reads it back. */
const last = (id: string, value: unknown, extra: Record<string, unknown> = {}): Reported => decodeReported(encodeReported(entry(id, P(value, extra))))!;
const R = (r: ReportSettings) => r;

describe('report by exception (src/streams/webhook/report.ts)', () => {
  it('1: an entry of a point nothing was reported of is reportable, whatever the rules', () => {
    for (const r of [R({ deadband: [{ absolute: 1e9 }] }), R({ maxSilenceSeconds: 86400 })]) expect(reportable(r, undefined, entry('5-0', P(1)))).toBe(true);
  });

  it.each([
    ['older by ms', '4-9', false],
    ['older by sequence', '5-0', false],
    ['the same entry again (its record landed, its answer was lost)', '5-1', true],
    ['newer by sequence, changed', '5-2', true],
    ['newer by sequence, unchanged', '5-3', false],
    ['newer by ms, changed', '10-0', true],
    ['a much larger ms (13 digits) against a short one', '1732838400000-0', true],
  ])('2: an entry %s than the last reported one: %s', (_name, id, expected) => {
    expect(reportable(R({ deadband: [{ absolute: 0 }] }), last('5-1', 1), entry(id, P(id === '5-1' || id === '5-3' ? 1 : 7)))).toBe(expected);
  });

  it.each([
    ['a field changed', { quality: 'bad' }, { quality: 'good' }, true],
    ['a field added', {}, { quality: 'good' }, true],
    ['a field removed', { quality: 'good' }, {}, true],
    ['a nested object in another key order', { q: { a: 1, b: [1, { c: 2, d: 3 }] } }, { q: { b: [1, { d: 3, c: 2 }], a: 1 } }, false],
    ['a number written otherwise (1.0 and 1)', { n: 1 }, { n: 1.0 }, false],
    ['type changed', { type: 36 }, { type: 30 }, true],
    ['source changed', { source: 'a' }, { source: 'b' }, true],
    ['only the timestamp changed', { timestamp: 'x' }, { timestamp: 'y' }, false],
  ])('3: %s: reportable %s (the value within the deadband)', (_name, before, after, expected) => {
    const r = R({ deadband: [{ absolute: 10 }] });
    expect(reportable(r, last('1-0', 5, before), entry('2-0', P(6, after)))).toBe(expected);
  });

  it.each([
    ['exactly maxSilenceSeconds later', 1000 + 900_000, true],
    ['a millisecond short of it', 1000 + 899_999, false],
  ])('4: %s: reportable %s (unchanged value), measured between stream IDs', (_name, ms, expected) => {
    expect(reportable(R({ maxSilenceSeconds: 900 }), last('1000-5', 1), entry(`${ms}-0`, P(1)))).toBe(expected);
    // without maxSilenceSeconds an unchanged value never is
    expect(reportable(R({ deadband: [{ absolute: 0 }] }), last('1000-5', 1), entry(`${ms}-0`, P(1)))).toBe(false);
  });

  it.each([
    ['absolute: beyond', [{ absolute: 0.5 }], 10, 10.6, true],
    ['absolute: exactly at the band', [{ absolute: 0.5 }], 10, 10.5, false],
    ['absolute: down beyond', [{ absolute: 0.5 }], 10, 9.4, true],
    ['absolute 0: any change', [{ absolute: 0 }], 10, 10.000001, true],
    ['absolute 0: no change', [{ absolute: 0 }], 10, 10, false],
    ['percent: beyond', [{ percent: 2 }], 100, 102.5, true],
    ['percent: exactly at the band', [{ percent: 2 }], 100, 102, false],
    ['percent of a negative last value', [{ percent: 10 }], -50, -44, true],
    ['percent of a negative last value, within', [{ percent: 10 }], -50, -46, false],
    ['percent: any change from 0', [{ percent: 50 }], 0, 0.001, true],
    ['percent: 0 stays 0', [{ percent: 50 }], 0, 0, false],
    ['no rule matches: any change', [{ filter: { types: [[30, 30]] }, absolute: 100 }], 10, 10.1, true],
    ['no rule matches: no change', [{ filter: { types: [[30, 30]] }, absolute: 100 }], 10, 10, false],
    ['the first matching rule wins', [{ filter: { types: [[36, 36]] }, absolute: 5 }, { absolute: 0 }], 10, 13, false],
    ['a rule that does not match is passed over', [{ filter: { casdu: [[9, 9]] }, absolute: 0 }, { absolute: 5 }], 10, 13, false],
    ['boolean changed', [{ absolute: 5 }], true, false, true],
    ['boolean unchanged', [{ absolute: 5 }], true, true, false],
    ['string changed', [{ absolute: 5 }], 'on', 'off', true],
    ['number to string', [{ absolute: 5 }], 1, '1', true],
    ['null to number', [{ absolute: 5 }], null, 1, true],
    ['null unchanged', [{ absolute: 5 }], null, null, false],
    ['an object value, keys reordered', [{ absolute: 5 }], { a: 1, b: 2 }, { b: 2, a: 1 }, false],
    ['a value that appears', [{ absolute: 5 }], undefined, 1, true],
  ] as const)('5: %s', (_name, deadband, before, after, expected) => {
    const b = before === undefined ? decodeReported(encodeReported(entry('1-0', { casdu: 1, ioa: 2, type: 36 })))! : last('1-0', before);
    expect(reportable(R({ deadband: deadband as never }), b, entry('2-0', P(after)))).toBe(expected);
  });

  it('5: a value that disappears is a change, also from null (absent and null differ)', () => {
    const gone = entry('2-0', { casdu: 1, ioa: 2, type: 36, timestamp: 't' });
    expect([reportable(R({ deadband: [{ absolute: 5 }] }), last('1-0', null), gone), reportable(R({ deadband: [{ absolute: 5 }] }), last('1-0', 3), gone)]).toEqual([true, true]);
    expect(reportable(R({ deadband: [{ absolute: 5 }] }), decodeReported(encodeReported(gone))!, entry('3-0', { casdu: 1, ioa: 2, type: 36 }))).toBe(false);
  });

  it('5: ruleFor picks the first rule whose filter matches, undefined when none does', () => {
    const rules = [{ filter: { ioa: [[5, 5]] as const }, absolute: 1 }, { filter: { casdu: [[1, 1]] as const }, percent: 2 }];
    expect(ruleFor(rules, { casdu: 1, ioa: 5, type: 36 })).toBe(rules[0]);
    expect(ruleFor(rules, { casdu: 1, ioa: 6, type: 36 })).toBe(rules[1]);
    expect(ruleFor(rules, { casdu: 2, ioa: 6, type: 36 })).toBeUndefined();
  });

  it('6: a batch is decided in order, each entry against what the ones before it left; an entry not reported changes nothing', () => {
    const r = R({ deadband: [{ absolute: 0.5 }] });
    const cs = [entry('1-0', P(10)), entry('2-0', P(10.3)), entry('3-0', P(10.6)), entry('4-0', P(11.0)), entry('5-0', P(11.2)), entry('6-0', P(1, { ioa: 3 }))];
    const d = decide(r, undefined, () => undefined, cs);
    // 10.6 is measured from 10 (reported), not from 10.3 (held back); 11.0 and 11.2 from 10.6
    expect(d.reported.map((c) => c.id)).toEqual(['1-0', '3-0', '5-0', '6-0']);
    expect(d.suppressed).toBe(2);
    expect([...d.writes.keys()]).toEqual(['1:2', '1:3']);
    expect(d.writes.get('1:2')).toBe(cs[4]);
    // against a state: the first entry already compares with it
    const d2 = decide(r, undefined, (p) => (p === '1:2' ? last('0-1', 10.2) : undefined), cs.slice(0, 2));
    expect(d2.reported.map((c) => c.id)).toEqual([]);
    expect(d2.writes.size).toBe(0);
  });

  it('6: deciding a batch for several webhooks of the same settings decides each entry once; forgetting the memo keeps no record alive through another', () => {
    const r = R({ deadband: [{ absolute: 0.5 }] });
    const before = entry('1-0', P(10));
    const cs = [entry('2-0', P(10.2)), entry('3-0', P(11))];
    const one = decide(r, undefined, () => before, cs);
    const two = decide(r, undefined, () => before, cs);
    expect([one.reported.map((c) => c.id), two.reported.map((c) => c.id)]).toEqual([['3-0'], ['3-0']]);
    // another record (of another webhook's state) is decided afresh, not from the memo
    expect(decide(r, undefined, () => entry('1-0', P(11.2)), cs).reported.map((c) => c.id)).toEqual(['2-0', '3-0']);
    expect(cs.some((c) => (c as unknown as { memoLast?: unknown }).memoLast !== undefined)).toBe(true);
    forgetMemo(cs);
    expect(cs.map((c) => (c as unknown as { memoLast?: unknown; memoRules?: unknown }).memoLast ?? (c as unknown as { memoRules?: unknown }).memoRules)).toEqual([undefined, undefined]);
  });

  it('7: only the entries the filter matches are decided; the others are neither reported nor counted, and leave no state', () => {
    const f: PointFilter = { ioa: [[3, 3]] };
    const cs = [entry('1-0', P(1)), entry('2-0', P(1, { ioa: 3 })), entry('3-0', P(1, { ioa: 3 }))];
    const d = decide(R({ maxSilenceSeconds: 5 }), f, () => undefined, cs);
    expect([d.reported.map((c) => c.id), d.suppressed, [...d.writes.keys()]]).toEqual([['2-0'], 1, ['1:3']]);
  });

  it('a point is `{casdu}:{ioa}`; its other fields are compared without value, timestamp and the address', () => {
    const c = entry('1-0', { ioa: 7, value: 1.5, casdu: 20, timestamp: 'x', source: 's', quality: 'good' });
    expect([c.point, c.num, encodeReported(c)]).toEqual(['20:7', 1.5, '1-0\n1.5\n{"quality":"good","source":"s"}']);
    expect(entry('1-0', { value: 1 }).point).toBe('null:null');
    expect(candidateOf({ id: '1-0', json: '{"casdu":"a","ioa":1.5,"value":1}' }).point).toBe('"a":1.5');
    // as the decoder's entries give it (integers as numbers, the rest as its JSON), one integer and one not either way round
    const keyOf = (json: string) => {
      const d = decodeEntry({ id: '1-0', fields: ['data', json] }, true);
      if (!d.ok) throw new Error(d.reason);
      return candidateOf(d.entry, d.entry.point).point;
    };
    expect(['{"casdu":1,"ioa":"x"}', '{"casdu":"7","ioa":2}', '{"casdu":1.5,"ioa":2}', '{"casdu":3,"ioa":4}', '{"ioa":4}'].map(keyOf)).toEqual(['1:"x"', '"7":2', '1.5:2', '3:4', 'null:4']);
    // a key that is a prototype's name is a field like any other
    expect(encodeReported(candidateOf({ id: '1-0', json: '{"__proto__":{"x":1},"value":1}' }))).toBe('1-0\n1\n{"__proto__":{"x":1}}');
    expect(canonical({ b: [2, { d: 1, c: undefined }], a: 'x' })).toBe('{"a":"x","b":[2,{"c":null,"d":1}]}');
  });

  it('a state record is stored as text and read back exactly; anything else reads as no record', () => {
    const text = '1732838400000-12\n"a\\nb"\n{"q":"x y","z":[1,{"a":2}]}';
    expect(decodeReported(text)).toEqual({ id: '1732838400000-12', ms: 1732838400000, seq: 12, has: true, v: 'a\nb', num: undefined, obj: { q: 'x y', z: [1, { a: 2 }] }, others: 2 });
    expect(encodeReported(decodeReported(text)!)).toBe(text);
    expect(decodeReported('5-1\n-2.5\n{}')).toEqual({ id: '5-1', ms: 5, seq: 1, has: true, v: -2.5, num: -2.5, obj: {}, others: 0 });
    expect(decodeReported('5-1\n\n{}')).toEqual({ id: '5-1', ms: 5, seq: 1, has: false, v: undefined, num: undefined, obj: {}, others: 0 });
    for (const bad of ['', 'x\n1\n{}', '1-0\n1', 'abc', '1-0\n{\n{}', '1-0\n1\n[]', '1-0\n1\nnull', '1-0\n1\n{x', '1-0\n1\n5', 'x1-0\n1\n{}', '1-0x\n1\n{}', '1-0\n1\n{}\n{}']) {
      expect(decodeReported(bad)).toBeUndefined();
    }
    // no value: written empty, read back as none
    expect(encodeReported(entry('7-0', { casdu: 1, ioa: 2, q: 1 }))).toBe('7-0\n\n{"q":1}');
  });

  it('a part is recorded as its webhook-id, and the shorter list of the entries it holds (+) or does not (-)', () => {
    const m = ['1-0', '2-0', '3-0', '4-0', '5-0'];
    expect(encodePart(m, m)).toBe('1-0_5-0');
    expect(encodePart(m, ['2-0', '4-0'])).toBe('2-0_4-0 +2-0,4-0');
    expect(encodePart(m, ['1-0', '2-0', '3-0', '5-0'])).toBe('1-0_5-0 -4-0');
    expect(encodePart(m, ['1-0', '3-0', '5-0'])).toBe('1-0_5-0 -2-0,4-0');
    // as many held as not: the list of those held
    expect(encodePart(m.slice(0, 4), ['1-0', '3-0'])).toBe('1-0_3-0 +1-0,3-0');
    for (const reported of [m, ['2-0', '4-0'], ['1-0', '2-0', '3-0', '5-0'], ['3-0']]) {
      const p = decodePart(encodePart(m, reported));
      expect([p.webhookId, m.filter(p.holds)]).toEqual([`${reported[0]}_${reported[reported.length - 1]}`, reported]);
    }
  });
});

const ranges = fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 1 })).map(([a, d]) => [a, a + d] as const), { minLength: 1, maxLength: 2 });
const filterArb: fc.Arbitrary<PointFilter | undefined> = fc.option(fc.record({ casdu: ranges, ioa: ranges }, { requiredKeys: [] }), { nil: undefined });
const rule = fc.oneof(
  fc.record({ filter: filterArb, absolute: fc.constantFrom(0, 0.5, 1, 2.5) }),
  fc.record({ filter: filterArb, percent: fc.constantFrom(0, 1, 10, 50) }),
).map((r) => (r.filter === undefined ? (({ filter: _f, ...rest }) => rest)(r) : r));
const settingsArb: fc.Arbitrary<ReportSettings> = fc
  .record({ deadband: fc.option(fc.array(rule, { minLength: 1, maxLength: 3 }), { nil: undefined }), maxSilenceSeconds: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }) })
  .filter((r) => r.deadband !== undefined || r.maxSilenceSeconds !== undefined)
  .map((r) => ({ ...(r.deadband !== undefined ? { deadband: r.deadband as never } : {}), ...(r.maxSilenceSeconds !== undefined ? { maxSilenceSeconds: r.maxSilenceSeconds } : {}) }));
/** Slow noisy floats, some integers and zeros, rare flips of status and of type; a value now and then absent, a string or a boolean. */
const valueArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -40, max: 40 }).map((n) => n / 8) },
  { weight: 1, arbitrary: fc.constantFrom(0, true, false, 'on', null, undefined, { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, [1, { x: 2 }]) },
);
const pointArb = fc.record({
  casdu: fc.integer({ min: 1, max: 3 }), ioa: fc.integer({ min: 1, max: 3 }), value: valueArb,
  quality: fc.constantFrom('good', 'good', 'good', 'good', 'bad', undefined, { s: 1, t: 'x' }, { t: 'x', s: 1 }), type: fc.constantFrom(36, 36, 36, 30), gapMs: fc.integer({ min: 0, max: 2500 }),
});
const streamArb = fc.array(pointArb, { maxLength: 60 }).map((ps) => {
  let ms = 1_000_000;
  return ps.map(({ gapMs, value, quality, ...p }, i) => {
    ms += gapMs;
    const point: Record<string, unknown> = { ...p, timestamp: `t${i}` };
    if (value !== undefined) point.value = value;
    if (quality !== undefined) point.quality = quality;
    return { id: `${ms}-${i}`, point };
  });
});

it('the README\'s worked example: a float when it moves by 0.5 and at least every 15 minutes, a change of status always', () => {
  const report = R({ deadband: [{ filter: { types: [[13, 13], [36, 36]] }, absolute: 0.5 }], maxSilenceSeconds: 900 });
  const at = (hh: number, mm: number, ss: number) => Date.UTC(2026, 10, 29, hh, mm, ss);
  const rows: Array<[number, number, string]> = [
    [at(6, 0, 0), 21.5, 'good'], [at(6, 0, 1), 21.62, 'good'], [at(6, 0, 2), 21.95, 'good'], [at(6, 0, 3), 22.01, 'good'],
    [at(6, 0, 4), 22.01, 'bad'], [at(6, 0, 5), 22.01, 'good'],
  ];
  // 06:00:06 … 06:15:04, every second, between 21.6 and 22.4
  for (let t = at(6, 0, 6), i = 0; t <= at(6, 15, 4); t += 1000, i++) rows.push([t, 21.6 + (i % 9) / 10, 'good']);
  rows.push([at(6, 15, 5), 22.3, 'good']);
  const cs = rows.map(([t, value, quality]) => entry(`${t}-0`, { casdu: 10, ioa: 1001, type: 36, value, quality, timestamp: new Date(t).toISOString() }));
  const sent = decide(report, { casdu: [[10, 10]] }, () => undefined, cs).reported.map((c) => new Date(c.ms).toISOString().slice(11, 19));
  expect(sent).toEqual(['06:00:00', '06:00:03', '06:00:04', '06:00:05', '06:15:05']);
  // a breaker (type 30): no rule matches it, every change goes out; another CASDU never does
  const breaker = [0, 0, 1, 1, 0].map((v, i) => entry(`${i + 1}-0`, { casdu: 10, ioa: 7, type: 30, value: v }));
  expect(decide(report, { casdu: [[10, 10]] }, () => undefined, breaker).reported.map((c) => c.id)).toEqual(['1-0', '3-0', '5-0']);
  expect(decide(report, { casdu: [[10, 10]] }, () => undefined, [entry('1-0', { casdu: 11, ioa: 7, type: 30, value: 1 })]).reported).toEqual([]);
});

describe('report by exception against the reference (CONTRACT 4.8, read literally)', () => {
  const candidates = (stream: ReadonlyArray<{ id: string; point: Record<string, unknown> }>): Candidate[] =>
    stream.map((e) => entry(e.id, e.point));
  it('random streams, rules and silences: one decision of the whole stream reports what the reference does', () => {
    fc.assert(fc.property(settingsArb, filterArb, streamArb, (settings, filter, stream) => {
      expect(decide(settings, filter, () => undefined, candidates(stream)).reported.map((c) => c.id)).toEqual(reference(settings, filter, stream));
    }), { numRuns: 400 });
  });
  it('the same stream cut into batches anywhere, each decided against the state the ones before left: the same entries', () => {
    fc.assert(fc.property(settingsArb, filterArb, streamArb, fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 1 }), (settings, filter, stream, cuts) => {
      const state = new Map<string, string>();
      const got: string[] = [];
      let at = 0;
      for (let k = 0; at < stream.length; k++) {
        const batch = candidates(stream.slice(at, at + cuts[k % cuts.length]!));
        at += cuts[k % cuts.length]!;
        // through the stored text, as Redis keeps it
        const d = decide(settings, filter, (p) => (state.has(p) ? decodeReported(state.get(p)!) : undefined), batch);
        for (const [p, r] of d.writes) state.set(p, encodeReported(r));
        got.push(...d.reported.map((c) => c.id));
      }
      expect(got).toEqual(reference(settings, filter, stream));
    }), { numRuns: 300 });
  });
});
