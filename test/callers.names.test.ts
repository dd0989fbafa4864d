import * as E from 'fp-ts/Either';
import fc from 'fast-check';
import { callerNameProblem, certificateCallerName, isKeyName, parseApiKeys } from '../src/config/callerNames';
import { callerIdempotencyKey } from '../src/mapping/keys';
import { collectRaw, loadStartupSettings } from '../src/config/startup';

/** CONTRACT 7.1, 7.2: callers' names — a row per invariant of src/config/callerNames.ts. */

const NOT_A_NAME = `is not a caller's name: an API key's name (letters, digits, '.', '_', '-', or key-N) or cn: and a client certificate's CN`;

// invariant 1: a key's name is letters, digits, '.', '_', '-'; a certificate is cn: and its CN
it.each([
  ['historian', true], ['key-1', true], ['a.b_c-D9', true], ['9', true], ['_', true],
  ['', false], ['a b', false], ['a:b', false], ['cn:x', false], ['a=b', false], ['ä', false], ['a/b', false],
])('isKeyName(%j) is %s', (name, ok) => {
  expect(isKeyName(name)).toBe(ok);
});

it.each([
  ['historian', undefined], ['key-3', undefined], ['cn:plant-gw', undefined], ['cn:a:b c', undefined], ['cn:operator', undefined],
  ['', NOT_A_NAME], ['cn:', NOT_A_NAME], ['cn', undefined], ['gw 1', NOT_A_NAME], ['x:y', NOT_A_NAME], ['CN:gw', NOT_A_NAME],
])('callerNameProblem(%j)', (name, problem) => {
  expect(callerNameProblem(name)).toBe(problem);
});

it('a certificate is the caller cn:{CN}: never a name a key can have', () => {
  expect(certificateCallerName('operator')).toBe('cn:operator');
  fc.assert(fc.property(fc.string(), (cn) => !isKeyName(certificateCallerName(cn))));
});

// invariants 2 and 3: how an entry of Authentication:ApiKeys reads
it.each([
  ['k1', [{ name: 'key-1', key: 'k1' }]],
  ['historian=s3cret', [{ name: 'historian', key: 's3cret' }]],
  ['abc==', [{ name: 'key-1', key: 'abc==' }]],
  ['abc=', [{ name: 'key-1', key: 'abc=' }]],
  ['=abc', [{ name: 'key-1', key: '=abc' }]],
  ['n=a=b', [{ name: 'n', key: 'a=b' }]],
  ['n==x', [{ name: 'n', key: '=x' }]],
  ['my key=s', [{ name: 'key-1', key: 'my key=s' }]],
  ['9=s', [{ name: '9', key: 's' }]],
  ['a:b', [{ name: 'key-1', key: 'a:b' }]],
  ['n=a:b', [{ name: 'n', key: 'a:b' }]],
  [' k1 , ,gw=k2,k3,', [{ name: 'key-1', key: 'k1' }, { name: 'gw', key: 'k2' }, { name: 'key-3', key: 'k3' }]],
  ['', []],
])('ApiKeys %j', (value, keys) => {
  expect(parseApiKeys(value)).toEqual(E.right(keys));
});

it.each([
  ['a:b=k-ab', 1], ['k1,cn:operator=k2', 2], ['k1,gw=k,x:=y', 3], [':=k', 1],
])('ApiKeys %j: refused naming entry %i, never its text', (value, position) => {
  const parsed = parseApiKeys(value);
  expect(parsed).toEqual(E.left(`entry ${position} has a ':' before its first '=': a key's name holds only letters, digits, '.', '_' and '-' (a client certificate is the caller cn:{CN} by itself)`));
  const startup = loadStartupSettings(collectRaw({}, { Id: 'x', Authentication__ApiKeys: value }), { requireId: true, hostname: 'h' });
  expect(E.isLeft(startup) && startup.left).toEqual([`Authentication:ApiKeys: ${(parsed as E.Left<string>).left}`]);
  expect(JSON.stringify(startup)).not.toContain('k-ab');
});

// CONTRACT 7.2: two callers' idempotency keys never meet, whatever the names and keys hold
it('cn with key a:c and cn:a with key c are two keys; so is every other pair', () => {
  expect(callerIdempotencyKey('ID', 'cn', 'a:c')).toBe('connectors:ID:idempotency:2:cn:a:c');
  expect(callerIdempotencyKey('ID', 'cn:a', 'c')).toBe('connectors:ID:idempotency:4:cn:a:c');
  expect(callerIdempotencyKey('ID', 'a:b', 'K')).not.toBe(callerIdempotencyKey('ID', 'a', 'b:K'));
  expect(callerIdempotencyKey('ID', 'cn:é😀', 'k')).toBe('connectors:ID:idempotency:5:cn:é😀:k');
  fc.assert(fc.property(fc.string(), fc.string(), fc.string(), fc.string(), (c1, k1, c2, k2) =>
    (c1 === c2 && k1 === k2) === (callerIdempotencyKey('ID', c1, k1) === callerIdempotencyKey('ID', c2, k2))));
  fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.stringMatching(/^[:a]{0,6}$/), fc.stringMatching(/^[:a]{0,6}$/), fc.stringMatching(/^[:a]{0,6}$/), (x, c1, k1, c2) => {
    const k2 = `${c1}${k1}`.slice(c2.length) + x;
    return (c1 === c2 && k1 === k2) === (callerIdempotencyKey('ID', c1, k1) === callerIdempotencyKey('ID', c2, k2));
  }));
});
