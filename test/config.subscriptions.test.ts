import * as E from 'fp-ts/Either';
import { parseManagedSettings } from '../src/config/managed';

/** CONTRACT 4.5: a webhook's filter, rate cap, TLS and auth settings decode, or name the field. */
const decode = (w: object) => parseManagedSettings(JSON.stringify({ webhooks: [{ url: 'http://a.example/', ...w }] }));
const errorsOf = (w: object): string[] => {
  const r = decode(w);
  if (E.isRight(r)) throw new Error(`decoded: ${JSON.stringify(r.right.webhooks)}`);
  return r.left;
};

it.each([
  ['an empty range', { filter: { ioa: ['9-3'] } }, 'webhooks[0].filter.ioa[0]: range "9-3" is empty'],
  ['not a range', { filter: { ioa: [1, 'x'] } }, 'webhooks[0].filter.ioa[1]: must be an integer or a range "A-B", got "x"'],
  ['a type that is none', { filter: { types: [2] } }, 'webhooks[0].filter.types[0]: must be one of 1, 13, 30, 32, 36, got 2'],
  ['a CASDU out of range', { filter: { casdu: [70000] } }, 'webhooks[0].filter.casdu[0]: must lie within 0 to 65535, got 70000'],
  ['an empty list', { filter: { casdu: [] } }, 'webhooks[0].filter.casdu: must be a non-empty list of integers and "A-B" ranges, got []'],
  ['a period below 10 s', { integrityPeriodSeconds: 5 }, 'webhooks[0].integrityPeriodSeconds: must be an integer in 10 to 86400, got 5'],
  ['a period above a day', { integrityPeriodSeconds: 86401 }, 'webhooks[0].integrityPeriodSeconds: must be an integer in 10 to 86400, got 86401'],
  ['initialState that is not a boolean', { initialState: 'yes' }, 'webhooks[0].initialState: must be a boolean, got "yes"'],
  ['a rate of 0', { maxRequestsPerSecond: 0 }, 'webhooks[0].maxRequestsPerSecond: must be a positive number, got 0'],
  ['a client certificate without key', { tls: { certFile: '/x.pem' } }, 'webhooks[0].tls.keyFile: required with tls.certFile (both or neither)'],
  ['auth and an Authorization header', { headers: { authorization: 'Bearer x' }, auth: { oauth2: { tokenUrl: 'http://t/', clientId: 'c', clientSecret: 's' } } },
    'webhooks[0].auth: cannot be used together with an Authorization header (headers.Authorization)'],
  ['auth without a secret', { auth: { oauth2: { tokenUrl: 'http://t/', clientId: 'c' } } }, 'webhooks[0].auth.oauth2.clientSecret: required (or clientSecretFile)'],
  ['auth with both secrets', { auth: { oauth2: { tokenUrl: 'http://t/', clientId: 'c', clientSecret: 's', clientSecretFile: '/s' } } },
    'webhooks[0].auth.oauth2.clientSecretFile: give clientSecret or clientSecretFile, not both'],
  ['a client secret that is not a string (never echoed)', { auth: { oauth2: { tokenUrl: 'http://t/', clientId: 'c', clientSecret: 987654321 } } }, 'webhooks[0].auth.oauth2.clientSecret: must be a non-empty string'],
  ['auth without a token URL', { auth: { oauth2: { clientId: 'c', clientSecret: 's' } } }, 'webhooks[0].auth.oauth2.tokenUrl: must be an http(s) URL, got nothing'],
])('%s is a config error naming the field', (_, w, message) => {
  expect(errorsOf(w)).toContain(message);
});

it('decodes a subscription with every field, ranges as pairs', () => {
  const r = decode({
    filter: { casdu: [10, '20-29'], ioa: ['1000-1999'], types: [36, 30] }, maxRequestsPerSecond: 5,
    tls: { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem', serverName: 'billing.internal' },
    auth: { oauth2: { tokenUrl: 'https://id.example/token', clientId: 'c', clientSecretFile: '/s', scope: 'ingest' } },
  });
  expect(E.isRight(r) && r.right.webhooks[0]).toEqual({
    url: 'http://a.example/', headers: {}, secrets: [],
    filter: { casdu: [[10, 10], [20, 29]], ioa: [[1000, 1999]], types: [[36, 36], [30, 30]] },
    maxRequestsPerSecond: 5,
    tls: { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem', serverName: 'billing.internal' },
    auth: { oauth2: { tokenUrl: 'https://id.example/token', clientId: 'c', clientSecretFile: '/s', scope: 'ingest' } },
  });
});

it('decodes initialState and integrityPeriodSeconds (CONTRACT 4.6); initialState false is as absent', () => {
  const r = decode({ initialState: true, integrityPeriodSeconds: 900 });
  expect(E.isRight(r) && r.right.webhooks[0]).toEqual({ url: 'http://a.example/', headers: {}, secrets: [], initialState: true, integrityPeriodSeconds: 900 });
  const off = decode({ initialState: false });
  expect(E.isRight(off) && off.right.webhooks[0]).toEqual({ url: 'http://a.example/', headers: {}, secrets: [] });
});
