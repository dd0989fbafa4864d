import * as E from 'fp-ts/Either';
import { DEFAULT_SETTINGS, parseManagedSettings, settingsFingerprint } from '../src/config/managed';
import { webhookFingerprint, webhookShown, WEBHOOK_SHOWN_SCHEMA } from '../src/config/webhookSettings';

const errors = (text: string): string[] => {
  const r = parseManagedSettings(text);
  if (E.isRight(r)) throw new Error('expected errors');
  return r.left;
};
const settings = (u: unknown) => {
  const r = parseManagedSettings(JSON.stringify(u));
  if (E.isLeft(r)) throw new Error(r.left.join('\n'));
  return r.right;
};
const mapping = (over: Record<string, unknown> = {}) => ({ name: 'm', topic: 't', casdu: 1, ioa: 2, type: 36, valuePath: 'a.b', ...over });

describe('managed settings', () => {
  it('applies the defaults to an empty object', () => {
    expect(settings({})).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS).toMatchObject({ isActive: true, logLevel: 'info', webhooks: [], mappings: [] });
    expect(DEFAULT_SETTINGS.hostUrls).toEqual([{ url: 'http://0.0.0.0:8080', https: false, host: '0.0.0.0', port: 8080 }]);
  });

  it('decodes the contract example, ignoring unknown fields', () => {
    const s = settings({
      displayName: 'Plant A outbound', description: 'd', logLevel: 'warning', isActive: false, futureField: { x: 1 },
      hostUrls: ['http://0.0.0.0:8080', 'http://*:9000', 'http://[::]:9001', 'http://+:9002', 'http://[::1]:9003'],
      webhooks: [{ url: 'https://historian.example/ingest', headers: { Authorization: 'Bearer x' }, secret: 'whsec_c2VjcmV0' }],
      mappings: [{ name: 'boiler-temp', topic: 'plant-a', casdu: 1, ioa: 1001, type: 36, valuePath: 'sensors.boiler.temp', valueType: 'float', timestampPath: 'ts' }],
    });
    expect(s.logLevel).toBe('warn');
    expect(s.isActive).toBe(false);
    expect(s.hostUrls.map((h) => [h.host, h.port])).toEqual([['0.0.0.0', 8080], [undefined, 9000], [undefined, 9001], [undefined, 9002], ['::1', 9003]]);
    expect(s.webhooks[0]).toEqual({ url: 'https://historian.example/ingest', headers: { Authorization: 'Bearer x' }, secrets: ['whsec_c2VjcmV0'] });
    expect(s.mappings[0]!.valuePath.steps).toEqual([{ key: 'sensors' }, { key: 'boiler' }, { key: 'temp' }]);
    expect(s.mappings[0]!.timestampPath?.source).toBe('ts');
  });

  it.each([
    ['Trace', 'trace'], ['debug', 'debug'], ['INFORMATION', 'info'], ['Warning', 'warn'], ['error', 'error'], ['Critical', 'fatal'], ['None', 'silent'],
  ])('maps log level %s to pino %s', (level, pino) => {
    expect(settings({ logLevel: level }).logLevel).toBe(pino);
  });

  it('defaults valueType to float and leaves timestampPath optional for every type', () => {
    for (const type of [1, 13, 30, 32, 36]) {
      const m = settings({ mappings: [mapping({ type })] }).mappings[0]!;
      expect(m.valueType).toBe('float');
      expect(m.timestampPath).toBeUndefined();
    }
  });

  it.each([
    ['not JSON', '{', /^\(root\): not valid JSON/],
    ['not an object', '[1]', /^\(root\): must be a JSON object/],
    ['isActive', JSON.stringify({ isActive: 'yes' }), /^isActive: must be a boolean, got "yes"$/],
    ['logLevel', JSON.stringify({ logLevel: 'Verbose' }), /^logLevel: must be one of Trace, Debug/],
    ['hostUrls', JSON.stringify({ hostUrls: ['http://0.0.0.0:8080', 'ftp://x:1'] }), /^hostUrls\[1\]: must be http:\/\/HOST:PORT or https:\/\/HOST:PORT/],
    ['hostUrls port', JSON.stringify({ hostUrls: ['http://x:70000'] }), /^hostUrls\[0\]: /],
    ['webhook url', JSON.stringify({ webhooks: [{ url: 'https://a/' }, { url: 'ftp://b' }] }), /^webhooks\[1\]\.url: must be an http\(s\) URL/],
    ['webhook url missing', JSON.stringify({ webhooks: [{}] }), /^webhooks\[0\]\.url: must be an http\(s\) URL, got nothing$/],
    ['header CR/LF in name', JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { 'X-A\r\nB': 'v' } }] }), /^webhooks\[0\]\.headers: header name .* contains CR or LF$/],
    ['header CR/LF in value', JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { 'X-A': 'v\nInjected: 1' } }] }), /^webhooks\[0\]\.headers: value of header 'X-A' contains CR or LF$/],
    ['header value not a string', JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { 'X-A': 1 } }] }), /^webhooks\[0\]\.headers: header 'X-A' must be a string$/],
    ['secret', JSON.stringify({ webhooks: [{ url: 'http://a/', secret: 'whsec_***' }] }), /^webhooks\[0\]\.secret: /],
    ['secret list entry', JSON.stringify({ webhooks: [{ url: 'http://a/', secret: ['whsec_c2VjcmV0', ''] }] }), /^webhooks\[0\]\.secret: \[1\] must be a non-empty string$/],
    ['secret empty list', JSON.stringify({ webhooks: [{ url: 'http://a/', secret: [] }] }), /^webhooks\[0\]\.secret: must be a secret or a non-empty list of secrets$/],
    ['framing header', JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { 'Content-Length': '2' } }] }), /^webhooks\[0\]\.headers: header 'Content-Length' may not be set/],
    ['connection header', JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { 'proxy-authorization': 'x' } }] }), /^webhooks\[0\]\.headers: header 'proxy-authorization' may not be set/],
    ['URL user information', JSON.stringify({ webhooks: [{ url: 'https://user:pw@h.example/x?token=t' }] }), /^webhooks\[0\]\.url: must not carry user information \(https:\/\/h\.example\/x\): put credentials in a header/],
    ['casdu range', JSON.stringify({ mappings: [mapping({ casdu: 65536 })] }), /^mappings\[0\]\.casdu: must be an integer in 0 to 65535, got 65536$/],
    ['ioa range', JSON.stringify({ mappings: [mapping({ ioa: 16777216 })] }), /^mappings\[0\]\.ioa: must be an integer in 0 to 16777215, got 16777216$/],
    ['ioa negative', JSON.stringify({ mappings: [mapping({ ioa: -1 })] }), /^mappings\[0\]\.ioa: /],
    ['casdu fraction', JSON.stringify({ mappings: [mapping({ casdu: 1.5 })] }), /^mappings\[0\]\.casdu: /],
    ['type', JSON.stringify({ mappings: [mapping({ type: 31 })] }), /^mappings\[0\]\.type: must be one of 1, 13, 30, 32, 36, got 31$/],
    ['valueType', JSON.stringify({ mappings: [mapping({ valueType: 'double' })] }), /^mappings\[0\]\.valueType: must be one of float, int, bool, string/],
    ['valuePath missing', JSON.stringify({ mappings: [mapping({ valuePath: undefined })] }), /^mappings\[0\]\.valuePath: must be a path string, got nothing$/],
    ['valuePath syntax', JSON.stringify({ mappings: [mapping(), mapping(), mapping(), mapping({ name: 'd', valuePath: 'a.b]' })] }).replace(/"name":"m"/g, () => `"name":"m${Math.random()}"`), /^mappings\[3\]\.valuePath: unexpected "\]" at 3$/],
    ['timestampPath syntax', JSON.stringify({ mappings: [mapping({ timestampPath: 'meta..ts' })] }), /^mappings\[0\]\.timestampPath: unexpected "\." at 5$/],
    ['name empty', JSON.stringify({ mappings: [mapping({ name: '' })] }), /^mappings\[0\]\.name: must be a non-empty string/],
    // CONTRACT 5.5: selectors compiled with the paths, value maps and scales checked when the configuration is loaded
    ['selector syntax', JSON.stringify({ mappings: [mapping({ valuePath: 'readings[name=].value' })] }), /^mappings\[0\]\.valuePath: unexpected "\]" at 14$/],
    ['selector [-0]', JSON.stringify({ mappings: [mapping({ timestampPath: 'samples[-0].ts' })] }), /^mappings\[0\]\.timestampPath: \[-0\] at 8 selects nothing: \[-1\] is the last element$/],
    ['valueMap not an object', JSON.stringify({ mappings: [mapping({ valueMap: ['RUN'] })] }), /^mappings\[0\]\.valueMap: must be an object from raw value text to the value used in its place, got \["RUN"\]$/],
    ['valueMap value null', JSON.stringify({ mappings: [mapping({ valueMap: { RUN: true, X: null } })] }), /^mappings\[0\]\.valueMap: must map to numbers, booleans or strings; "X" maps to null$/],
    ['valueMap value object', JSON.stringify({ mappings: [mapping({ valueMap: { RUN: { on: 1 } } })] }), /^mappings\[0\]\.valueMap: must map to numbers, booleans or strings; "RUN" maps to \{"on":1\}$/],
    ['valueMap empty', JSON.stringify({ mappings: [mapping({ valueMap: {} })] }), /^mappings\[0\]\.valueMap: must have at least one entry$/],
    ['scale not an object', JSON.stringify({ mappings: [mapping({ scale: 10 })] }), /^mappings\[0\]\.scale: must be an object \(a scale is/],
    ['scale empty', JSON.stringify({ mappings: [mapping({ scale: {} })] }), /^mappings\[0\]\.scale: is empty: a scale is \{"factor", "offset"\} or \{"raw", "scaled", "clamp"\}$/],
    ['scale both shapes', JSON.stringify({ mappings: [mapping({ scale: { factor: 2, raw: [0, 1], scaled: [0, 2] } })] }), /^mappings\[0\]\.scale: give factor and offset, or raw and scaled, not both/],
    ['scale unknown field', JSON.stringify({ mappings: [mapping({ scale: { factor: 2, multiplier: 3 } })] }), /^mappings\[0\]\.scale: unknown field "multiplier"/],
    ['scale factor', JSON.stringify({ mappings: [mapping({ scale: { factor: '2' } })] }), /^mappings\[0\]\.scale: factor must be a finite number, got "2"$/],
    ['scale offset', JSON.stringify({ mappings: [mapping({ scale: { offset: null } })] }), /^mappings\[0\]\.scale: offset must be a finite number, got null$/],
    ['scale raw', JSON.stringify({ mappings: [mapping({ scale: { raw: [0], scaled: [4, 20] } })] }), /^mappings\[0\]\.scale: raw must be two finite numbers \[from, to\], got \[0\]$/],
    ['scale scaled missing', JSON.stringify({ mappings: [mapping({ scale: { raw: [0, 4095] } })] }), /^mappings\[0\]\.scale: scaled must be two finite numbers \[from, to\], got nothing$/],
    ['scale clamp', JSON.stringify({ mappings: [mapping({ scale: { raw: [0, 1], scaled: [0, 2], clamp: 'yes' } })] }), /^mappings\[0\]\.scale: clamp must be true or false, got "yes"$/],
    ['scale equal raw ends', JSON.stringify({ mappings: [mapping({ scale: { raw: [5, 5], scaled: [0, 2] } })] }), /^mappings\[0\]\.scale: raw's two ends are equal \(5\): there is no range to scale from$/],
    ['scale on a boolean type', JSON.stringify({ mappings: [mapping({ type: 1, valueType: 'bool', scale: { factor: 2 } })] }), /^mappings\[0\]\.scale: only types 13 and 36 are scaled, this mapping's type is 1$/],
    ['scale on type 32', JSON.stringify({ mappings: [mapping({ type: 32, valueType: 'int', scale: { factor: 2 } })] }), /^mappings\[0\]\.scale: only types 13 and 36 are scaled, this mapping's type is 32$/],
    // CONTRACT 5.5: "array": "each" or "whole"; a whole mapping's paths pick an item first
    ['array unknown', JSON.stringify({ mappings: [mapping({ array: 'all' })] }), /^mappings\[0\]\.array: must be "each" \(every item of an array body\) or "whole" \(the array as one document\), got "all"$/],
    ['array not a string', JSON.stringify({ mappings: [mapping({ array: true })] }), /^mappings\[0\]\.array: must be "each" .* got true$/],
    ['whole with a plain path', JSON.stringify({ mappings: [mapping({ array: 'whole', valuePath: 'temp_raw' })] }), /^mappings\[0\]\.valuePath: with "array": "whole" the path reads the array as one document and begins with a selector or an index \(\[id=T1\]\.temp_raw, \[0\]\.v, \[-1\]\.ts\), got 'temp_raw'$/],
    ['whole with a plain timestamp path', JSON.stringify({ mappings: [mapping({ array: 'whole', valuePath: '[0].v', timestampPath: 'ts' })] }), /^mappings\[0\]\.timestampPath: with "array": "whole" .* got 'ts'$/],
  ])('names the field: %s', (_what, text, pattern) => {
    const e = errors(text);
    expect(e.some((line) => pattern.test(line))).toBe(true);
  });

  it('decodes value maps (own keys, __proto__ left out) and scales with their defaults; they are part of the fingerprint', () => {
    const s = settings({ mappings: [
      mapping({ name: 'a', valueMap: JSON.parse('{"RUN":true,"STOP":false,"2":"on","__proto__":1}') as unknown, scale: { factor: 0.1 } }),
      mapping({ name: 'b', scale: { raw: [0, 4095], scaled: [4, 20] } }),
      mapping({ name: 'c', type: 13, scale: { offset: -40 } }),
    ] });
    expect([...s.mappings[0]!.valueMap!]).toEqual([['2', 'on'], ['RUN', true], ['STOP', false]]);
    expect(s.mappings.map((m) => m.scale)).toEqual([{ factor: 0.1, offset: 0 }, { raw: [0, 4095], scaled: [4, 20], clamp: false }, { factor: 1, offset: -40 }]);
    const base = { mappings: [mapping({ scale: { factor: 2 } })] };
    const print = (u: unknown) => settingsFingerprint(settings(u), 'inbound');
    expect(print(base)).toEqual(print(base));
    expect(print(base)).not.toEqual(print({ mappings: [mapping({ scale: { factor: 3 } })] }));
    expect(print(base)).not.toEqual(print({ mappings: [mapping({ scale: { factor: 2 }, valueMap: { a: 1 } })] }));
    expect(print({ mappings: [mapping({ valueMap: { a: 1 } })] })).not.toEqual(print({ mappings: [mapping({ valueMap: { a: 2 } })] }));
  });

  it('"array" defaults to each; whole with paths that pick an item decodes; it is part of the fingerprint', () => {
    const s = settings({ mappings: [mapping({ name: 'a' }), mapping({ name: 'b', array: 'whole', valuePath: '[id=T1].temp_raw', timestampPath: '[-1].ts' }), mapping({ name: 'c', array: 'each' })] });
    expect(s.mappings.map((m) => m.array)).toEqual(['each', 'whole', 'each']);
    const print = (u: unknown) => settingsFingerprint(settings(u), 'inbound');
    expect(print({ mappings: [mapping({ valuePath: '[0].v' })] })).not.toEqual(print({ mappings: [mapping({ valuePath: '[0].v', array: 'whole' })] }));
    expect(print({ mappings: [mapping()] })).toEqual(print({ mappings: [mapping({ array: 'each' })] }));
  });

  it('reports duplicate mapping names within a topic, not across topics', () => {
    expect(errors(JSON.stringify({ mappings: [mapping(), mapping({ topic: 'other' }), mapping()] }))).toEqual([
      "mappings[2].name: duplicate name 'm' in topic 't' (first at mappings[0])",
    ]);
  });

  it('reports every problem, each once', () => {
    const e = errors(JSON.stringify({ isActive: 1, mappings: [mapping({ casdu: -1, type: 2 })] }));
    expect(e).toHaveLength(3);
  });

  it('never echoes a header value in an error', () => {
    const e = errors(JSON.stringify({ webhooks: [{ url: 'http://a/', headers: { Authorization: 'Bearer s3cret\r\n' } }] }));
    expect(e.join()).not.toContain('s3cret');
  });

  describe('fingerprint (what counts as a change)', () => {
    const base = { displayName: 'x', webhooks: [{ url: 'http://a/', headers: { A: '1', B: '2' } }], mappings: [mapping()] };
    it('ignores key order and unknown fields', () => {
      const reordered = { mappings: [{ ...mapping() }], webhooks: [{ headers: { B: '2', A: '1' }, url: 'http://a/' }], displayName: 'x', extra: 1 };
      expect(settingsFingerprint(settings(reordered), 'outbound')).toBe(settingsFingerprint(settings(base), 'outbound'));
    });
    it('sees a changed value', () => {
      expect(settingsFingerprint(settings({ ...base, displayName: 'y' }), 'inbound')).not.toBe(settingsFingerprint(settings(base), 'inbound'));
      expect(settingsFingerprint(settings({ ...base, mappings: [mapping({ ioa: 3 })] }), 'inbound')).not.toBe(settingsFingerprint(settings(base), 'inbound'));
    });
    it('keeps the fingerprint a webhook had before a field existed: a 410 mark holds its digest (a field added later gives nothing while unset)', () => {
      const [w] = settings({ webhooks: [{ url: 'http://a/x?k=1', headers: { B: '2', A: '1' }, secret: 's' }] }).webhooks;
      // the form the fingerprint had when the marks were first written (url, headers, secrets, filter, rate, tls, auth)
      expect(webhookFingerprint(w!)).toEqual(['http://a/x?k=1', [['A', '1'], ['B', '2']], ['s'], null, null, null, null]);
      const [p] = settings({ webhooks: [{ url: 'http://a/', integrityPeriodSeconds: 60 }] }).webhooks;
      expect(webhookFingerprint(p!)).toEqual(['http://a/', [], [], null, null, null, null, false, 60]);
    });
    it('every setting the status shows is in its OpenAPI schema, and only those', () => {
      const [w] = settings({ webhooks: [{ url: 'http://a/', filter: { ioa: [1, '5-9'] }, maxRequestsPerSecond: 2, initialState: true }] }).webhooks;
      expect(webhookShown(w!)).toEqual({ filter: { ioa: [1, '5-9'] }, maxRequestsPerSecond: 2, tls: false, auth: null, initialState: true, integrityPeriodSeconds: null, format: 'datapoints', compression: 'none', report: null });
      expect(Object.keys(WEBHOOK_SHOWN_SCHEMA)).toEqual(Object.keys(webhookShown(w!)));
    });
    it("ignores the other connector's section", () => {
      expect(settingsFingerprint(settings({ ...base, mappings: [] }), 'outbound')).toBe(settingsFingerprint(settings(base), 'outbound'));
      expect(settingsFingerprint(settings({ ...base, webhooks: [] }), 'inbound')).toBe(settingsFingerprint(settings(base), 'inbound'));
    });
  });
});
