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
  ])('names the field: %s', (_what, text, pattern) => {
    const e = errors(text);
    expect(e.some((line) => pattern.test(line))).toBe(true);
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
      expect(webhookShown(w!)).toEqual({ filter: { ioa: [1, '5-9'] }, maxRequestsPerSecond: 2, tls: false, auth: null, initialState: true, integrityPeriodSeconds: null, format: 'datapoints', compression: 'none' });
      expect(Object.keys(WEBHOOK_SHOWN_SCHEMA)).toEqual(Object.keys(webhookShown(w!)));
    });
    it("ignores the other connector's section", () => {
      expect(settingsFingerprint(settings({ ...base, mappings: [] }), 'outbound')).toBe(settingsFingerprint(settings(base), 'outbound'));
      expect(settingsFingerprint(settings({ ...base, webhooks: [] }), 'inbound')).toBe(settingsFingerprint(settings(base), 'inbound'));
    });
  });
});
