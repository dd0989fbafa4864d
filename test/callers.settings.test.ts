import * as E from 'fp-ts/Either';
import { callerProblems, callersView, mayWrite, type CallerGrant } from '../src/config/callerSettings';
import { parseManagedSettings, settingsFingerprint, startupProblems } from '../src/config/managed';
import { loadStartupSettings, collectRaw } from '../src/config/startup';

/** CONTRACT 7.2: the `callers` setting, decoded with errors naming the field, and what a grant allows. */

const decode = (callers: unknown) => parseManagedSettings(JSON.stringify({ callers }));
const errors = (callers: unknown) => {
  const d = decode(callers);
  return E.isLeft(d) ? d.left : [];
};

it('decodes the contract example: topics as exact names and prefixes, casdu ranges, operate, a rate', () => {
  const d = decode({
    'scada-a': { topics: ['plant-a', 'plant-a/*'], maxRequestsPerSecond: 50 },
    historian: { casdu: ['10-19', 30] },
    operator: { operate: true, casdu: ['0-65535'] },
  });
  if (E.isLeft(d)) throw new Error(d.left.join('; '));
  const c = d.right.callers!;
  expect([...c.keys()]).toEqual(['scada-a', 'historian', 'operator']);
  expect(c.get('scada-a')).toEqual({ topics: [{ exact: 'plant-a' }, { prefix: 'plant-a/' }], maxRequestsPerSecond: 50, operate: false });
  expect(c.get('historian')).toEqual({ casdu: [[10, 19], [30, 30]], operate: false });
  expect(c.get('operator')).toEqual({ casdu: [[0, 65535]], operate: true });
});

it('absent callers stays absent (every caller may do everything); an empty object lists nobody', () => {
  const none = parseManagedSettings('{}');
  expect(E.isRight(none) && none.right.callers).toBe(undefined);
  const empty = decode({});
  expect(E.isRight(empty) && empty.right.callers!.size).toBe(0);
});

it.each([
  [[], 'callers: must be an object from caller name to permissions, got []'],
  [{ a: { topics: [] } }, 'callers.a.topics: must be a non-empty list of topic names and prefixes, got []'],
  [{ a: { topics: ['x*y'] } }, 'callers.a.topics[0]: a "*" may only end an entry (a prefix), got "x*y"'],
  [{ a: { topics: [''] } }, 'callers.a.topics[0]: must be a topic name or a prefix ending in "*", got ""'],
  [{ a: { topics: [5] } }, 'callers.a.topics[0]: must be a topic name or a prefix ending in "*", got 5'],
  [{ a: { topics: ['*x'] } }, 'callers.a.topics[0]: a "*" may only end an entry (a prefix), got "*x"'],
  [null, 'callers: must be an object from caller name to permissions, got null'],
  ['scada-a', 'callers: must be an object from caller name to permissions, got "scada-a"'],
  [{ a: { casdu: ['9-3'] } }, 'callers.a.casdu[0]: range "9-3" is empty'],
  [{ a: { casdu: [70000] } }, 'callers.a.casdu[0]: must lie within 0 to 65535, got 70000'],
  [{ a: { operate: 'yes' } }, 'callers.a.operate: must be a boolean, got "yes"'],
  [{ a: { maxRequestsPerSecond: 0.5 } }, 'callers.a.maxRequestsPerSecond: must be a positive integer, got 0.5'],
  [{ a: { maxRequestsPerSecond: 2.5 } }, 'callers.a.maxRequestsPerSecond: must be a positive integer, got 2.5'],
  [{ a: { maxRequestsPerSecond: 0 } }, 'callers.a.maxRequestsPerSecond: must be a positive integer, got 0'],
  [{ a: { maxRequestsPerSecond: '5' } }, 'callers.a.maxRequestsPerSecond: must be a positive integer, got "5"'],
  [{ '': {} }, `callers: "" is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`],
  [{ 'cn:': {} }, `callers: "cn:" is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`],
  [{ 'scada a': {} }, `callers: "scada a" is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`],
  [{ 'a:b': {} }, `callers: "a:b" is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`],
])('%j is a config error naming the field', (callers, message) => {
  expect(errors(callers)).toContain(message);
});

it('a rate is a positive integer: 1 is, 1e999 (Infinity once parsed) is not', () => {
  const one = decode({ a: { maxRequestsPerSecond: 1 } });
  expect(E.isRight(one) && one.right.callers!.get('a')!.maxRequestsPerSecond).toBe(1);
  const huge = parseManagedSettings('{"callers":{"a":{"maxRequestsPerSecond":1e999}}}');
  expect(E.isLeft(huge) && huge.left).toEqual(['callers.a.maxRequestsPerSecond: must be a positive integer, got Infinity']);
});

it('"*" alone decodes to the prefix of every topic', () => {
  const d = decode({ all: { topics: ['*'] } });
  if (E.isLeft(d)) throw new Error(d.left.join('; '));
  expect(d.right.callers!.get('all')!.topics).toEqual([{ prefix: '' }]);
  expect(mayWrite(d.right.callers!.get('all')!, 'any/topic')).toBe(true);
});

it('callersView shows the grants sorted by name, as written, without what is not granted', () => {
  const d = decode({
    zeta: { topics: ['p/*', 'exact'], maxRequestsPerSecond: 7 },
    alpha: { casdu: [3, '10-19'], operate: true },
    'Mid': {},
  });
  if (E.isLeft(d)) throw new Error(d.left.join('; '));
  expect(callersView(d.right.callers!)).toStrictEqual([
    ['Mid', { operate: false }],
    ['alpha', { casdu: [3, '10-19'], operate: true }],
    ['zeta', { topics: ['p/*', 'exact'], operate: false, maxRequestsPerSecond: 7 }],
  ]);
  // two equal names cannot occur; equal grants under names that sort either way keep their order by name
  expect(callersView(new Map([['b', { operate: false }], ['a', { operate: false }], ['c', { operate: true }]])).map(([n]) => n)).toEqual(['a', 'b', 'c']);
});

it('a caller named like an object property is a caller like any other', () => {
  const d = parseManagedSettings('{"callers":{"__proto__":{"operate":true},"constructor":{"casdu":[1]}}}');
  if (E.isLeft(d)) throw new Error(d.left.join('; '));
  expect(d.right.callers!.get('__proto__')).toEqual({ operate: true });
  expect(d.right.callers!.get('constructor')).toEqual({ casdu: [[1, 1]], operate: false });
  expect(d.right.callers!.get('toString')).toBeUndefined();
});

it.each([
  ['plant-a', true], ['plant-a/line-1', true], ['plant-a/', true], ['plant-ab', false], ['plant-b', false], ['Plant-a', false],
])('topics ["plant-a", "plant-a/*"]: %s → %s', (topic, allowed) => {
  const g: CallerGrant = { topics: [{ exact: 'plant-a' }, { prefix: 'plant-a/' }], operate: false };
  expect(mayWrite(g, topic)).toBe(allowed);
});

it('"*" alone grants every topic; no topics grants none', () => {
  expect(mayWrite({ topics: [{ prefix: '' }], operate: false }, 'anything')).toBe(true);
  expect(mayWrite({ operate: false }, 'anything')).toBe(false);
});

it('a change of callers is a configuration change of both connectors; the same callers in another order are not', () => {
  const fp = (callers: unknown, kind: 'inbound' | 'outbound') => {
    const d = decode(callers);
    if (E.isLeft(d)) throw new Error(d.left.join('; '));
    return settingsFingerprint(d.right, kind);
  };
  for (const kind of ['inbound', 'outbound'] as const) {
    expect(fp({ a: { casdu: [1] } }, kind)).not.toBe(fp({ a: { casdu: [2] } }, kind));
    expect(fp({ a: { operate: true } }, kind)).not.toBe(fp({ a: {} }, kind));
    expect(fp({ a: { operate: false, casdu: [1] }, b: { topics: ['t*'] } }, kind)).toBe(fp({ b: { topics: ['t*'] }, a: { casdu: [1] } }, kind));
    // {} lists nobody (everyone refused); absent lets everyone do everything
    const absent = parseManagedSettings('{}');
    expect(E.isRight(absent) && settingsFingerprint(absent.right, kind)).not.toBe(fp({}, kind));
  }
});

it('callers without any authentication is a config error; API keys or client certificates lift it', () => {
  const startup = (raw: Record<string, string>) => {
    const s = loadStartupSettings(collectRaw({}, raw), { requireId: false, hostname: 'h' });
    if (E.isLeft(s)) throw new Error(s.left.join('; '));
    return s.right;
  };
  const d = decode({ a: {} });
  if (E.isLeft(d)) throw new Error('decodes');
  const message = 'callers: set, but no authentication is configured: callers are named by Authentication:ApiKeys or by client certificates (Http:ClientCaFile)';
  expect(startupProblems('inbound', d.right, startup({}))).toEqual([message]);
  expect(startupProblems('outbound', d.right, startup({ Authentication__ApiKeys: 'a=k' }))).toEqual([]);
  expect(callerProblems(d.right.callers, { apiKeys: [], clientCertificates: 'optional' })).toEqual([]);
  expect(callerProblems(undefined, { apiKeys: [], clientCertificates: 'off' })).toEqual([]);
});
