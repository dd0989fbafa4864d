import type { Redis } from 'ioredis';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { createApp, type DataRoute } from '../src/http/app/app';
import { makeMetrics } from '../src/telemetry/metrics';
import { outboundOpenApi } from '../src/http/openapi/outbound';
import { outboundRoutes } from '../src/http/outbound/routes';
import { sendJsonText } from '../src/http/app/problem';
import type { ConnectorContext } from '../src/runtime/connector';
import { buildInbound } from '../src/runtime/inbound';
import { makeLogger } from '../src/runtime/logger';
import { request, type Reply } from './helpers/http';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { privateRedis } from './helpers/redis';

/**
 * Issue 13: the data routes' lean path (`src/http/app/dataPath.ts`) serves the exact method and path
 * without express; variants (a trailing slash, another case, HEAD) still go through express. Both
 * must answer alike: every request here is sent both ways and the answers compared — status,
 * headers that matter, body, the request's log line and metrics.
 */
const r = privateRedis();
let client: Redis;
let inbound: InProcess;
let outbound: InProcess;
const KEY = 'path-key';
const MAPPINGS = [
  { name: 'a', topic: 't', casdu: 3, ioa: 1, type: 36, valuePath: 'x', timestampPath: 'ts' },
  { name: 'b', topic: 't', casdu: 3, ioa: 2, type: 1, valuePath: 'y', valueType: 'bool', timestampPath: 'ts' },
];

beforeAll(async () => {
  client = r.client;
  const env = { Authentication__ApiKeys: KEY, Http__MaxBodyBytes: '2048' };
  inbound = await startInProcess('inbound', buildInbound, r.redis, { mappings: MAPPINGS }, env);
  const pull = (ctx: ConnectorContext) => ({
    dataRoutes: outboundRoutes({ redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics }),
    openapi: outboundOpenApi,
  });
  outbound = await startInProcess('outbound', pull, r.redis, {}, env);
}, 30000);
afterAll(async () => {
  await Promise.all([inbound?.close(), outbound?.close()]);
});

const auth = { Authorization: `Bearer ${KEY}` };
const json = { 'Content-Type': 'application/json', ...auth };
const GOOD = '{"x":21.5,"y":"on","ts":"2026-11-22T10:00:00Z"}';

/** What must be equal between the two paths. */
const shape = (a: Reply) => ({
  status: a.status,
  type: a.headers['content-type'],
  length: a.headers['content-length'],
  connection: a.headers.connection,
  authenticate: a.headers['www-authenticate'],
  retryAfter: a.headers['retry-after'],
  replayed: a.headers['idempotent-replayed'],
  body: a.text,
});

const INBOUND_CASES: Array<[string, { method?: string; headers?: Record<string, string>; body?: string }, string]> = [
  ['200', { method: 'POST', headers: json, body: GOOD }, '?topic=t'],
  ['422', { method: 'POST', headers: json, body: '{"x":"warm","y":"on","ts":"2026-11-22T10:00:00Z"}' }, '?topic=t'],
  ['401 no key', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: GOOD }, '?topic=t'],
  ['401 wrong key', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Api-Key': 'nope' }, body: GOOD }, '?topic=t'],
  ['400 missing_topic', { method: 'POST', headers: json, body: GOOD }, ''],
  ['400 second topic', { method: 'POST', headers: json, body: GOOD }, '?topic=t&topic=t'],
  ['415', { method: 'POST', headers: { ...auth, 'Content-Type': 'text/plain' }, body: GOOD }, '?topic=t'],
  ['415 gzip', { method: 'POST', headers: { ...json, 'Content-Encoding': 'gzip' }, body: GOOD }, '?topic=t'],
  ['413', { method: 'POST', headers: json, body: `{"x":"${'a'.repeat(3000)}"}` }, '?topic=t'],
  ['400 invalid_json', { method: 'POST', headers: json, body: '{"x":' }, '?topic=t'],
  ['400 invalid_body', { method: 'POST', headers: json, body: '[1]' }, '?topic=t'],
  ['404 unknown_topic', { method: 'POST', headers: json, body: GOOD }, '?topic=nope'],
  ['400 invalid_idempotency_key', { method: 'POST', headers: { ...json, 'Idempotency-Key': 'has space' }, body: GOOD }, '?topic=t'],
];

it.each(INBOUND_CASES)('inbound %s: the lean path and express answer alike', async (_name, options, query) => {
  const lean = await request(`${inbound.url}/api/datapoints${query}`, options);
  const viaExpress = await request(`${inbound.url}/api/datapoints/${query}`, options);
  expect(shape(lean)).toEqual(shape(viaExpress));
});

it('inbound idempotency: a key taken on the lean path is replayed through express, and the other way round', async () => {
  const withKey = (k: string) => ({ method: 'POST', headers: { ...json, 'Idempotency-Key': k }, body: GOOD });
  const first = await request(`${inbound.url}/api/datapoints?topic=t`, withKey('k-lean'));
  const replay = await request(`${inbound.url}/API/datapoints/?topic=t`, withKey('k-lean'));
  expect([first.status, replay.status, replay.headers['idempotent-replayed'], replay.text]).toEqual([200, 200, 'true', first.text]);
  const first2 = await request(`${inbound.url}/api/datapoints/?topic=t`, withKey('k-express'));
  const replay2 = await request(`${inbound.url}/api/datapoints?topic=t`, withKey('k-express'));
  expect([first2.status, replay2.status, replay2.headers['idempotent-replayed']]).toEqual([200, 200, 'true']);
});

it('outbound GET one, all, bad filters, HEAD and no key: the lean path and express answer alike', async () => {
  await client.set('process:image:casdu:3:ioa:1', '{"casdu":3,"ioa":1,"type":36,"value":1.5,"timestamp":"2026-11-22T10:00:00.000Z","source":"s"}');
  for (const [query, headers] of [
    ['?casdu=3&ioa=1', auth], ['?casdu=3', auth], ['', auth], ['?casdu=70000', auth], ['?casdu=3&casdu=3', auth], ['?ioa=x', auth], ['?casdu=3&ioa=1', {}],
  ] as const) {
    const lean = await request(`${outbound.url}/api/datapoints${query}`, { headers });
    const viaExpress = await request(`${outbound.url}/api/datapoints/${query}`, { headers });
    expect([query, shape(lean)]).toEqual([query, shape(viaExpress)]);
    // HEAD always goes through express: same status and headers as the lean GET, no body
    const head = await request(`${outbound.url}/api/datapoints${query}`, { method: 'HEAD', headers });
    expect([query, head.status, head.headers['content-type'], head.text]).toEqual([query, lean.status, lean.headers['content-type'], '']);
  }
});

it('both paths write the same request log line and count the same metric, under the route /api/datapoints', async () => {
  const before = inbound.logs().length;
  await request(`${inbound.url}/api/datapoints?topic=t`, { method: 'POST', headers: json, body: GOOD });
  await request(`${inbound.url}/api/datapoints/?topic=t`, { method: 'POST', headers: json, body: GOOD });
  const lines = inbound.logs().slice(before).filter((l) => l.msg === 'request');
  expect(lines.map((l) => [l.method, l.route, l.path, l.status, typeof l.durationMs])).toEqual([
    ['POST', '/api/datapoints', '/api/datapoints', 200, 'number'],
    ['POST', '/api/datapoints', '/api/datapoints/', 200, 'number'],
  ]);
  const metrics = (await request(`${inbound.url}/metrics`, { headers: auth })).text;
  const count = Number(/^http_requests_total\{route="\/api\/datapoints",method="POST",status="200"\} (\d+)$/m.exec(metrics)?.[1]);
  expect(count).toBeGreaterThanOrEqual(2);
  await request(`${inbound.url}/api/datapoints?topic=t`, { method: 'POST', headers: json, body: GOOD });
  const after = (await request(`${inbound.url}/metrics`, { headers: auth })).text;
  expect(Number(/^http_requests_total\{route="\/api\/datapoints",method="POST",status="200"\} (\d+)$/m.exec(after)?.[1])).toBe(count + 1);
});

describe('the chain around a data route, on both paths', () => {
  const lines: string[] = [];
  const serve = async (active: boolean, routes: DataRoute[], fn: (base: string) => Promise<void>) => {
    const app = createApp({
      log: makeLogger({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) })),
      metrics: makeMetrics({ kind: 'inbound', id: 'x', version: '0' }), apiKeys: [],
      isConnected: () => true, isActive: () => active, dataRoutes: routes, openapi: () => ({}),
    });
    const server: Server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      await fn(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
    } finally {
      server.close();
    }
  };
  const routes: DataRoute[] = [
    { method: 'get', path: '/api/datapoints', handler: () => { throw new Error('sync boom'); } },
    { method: 'post', path: '/api/datapoints', handler: async () => { throw new Error('async boom'); } },
    { method: 'get', path: '/api/webhooks', handler: (_req, res) => sendJsonText(res, 200, '{"webhooks":[]}') },
  ];

  it('an error thrown or rejected by a handler: 500 problem details and an "unexpected error" line, either way', async () => {
    await serve(true, routes, async (base) => {
      for (const [method, path] of [['GET', '/api/datapoints'], ['GET', '/api/datapoints/'], ['POST', '/api/datapoints'], ['POST', '/Api/Datapoints']]) {
        const a = await request(`${base}${path}`, { method });
        expect([method, path, a.status, a.headers['content-type'], a.json()]).toEqual([
          method, path, 500, 'application/problem+json; charset=utf-8', { type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'an unexpected error occurred' },
        ]);
      }
    });
    const errors = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'unexpected error');
    expect(errors.map((l) => [l.err, l.method, l.path])).toEqual([
      ['sync boom', 'GET', '/api/datapoints'], ['sync boom', 'GET', '/api/datapoints/'], ['async boom', 'POST', '/api/datapoints'], ['async boom', 'POST', '/Api/Datapoints'],
    ]);
  });

  it('an inactive connector: 503 on every data route, either way; other paths are not data routes', async () => {
    await serve(false, routes, async (base) => {
      for (const [method, path] of [['GET', '/api/datapoints'], ['GET', '/api/datapoints/'], ['POST', '/api/datapoints'], ['GET', '/api/webhooks'], ['GET', '/api/webhooks/']]) {
        const a = await request(`${base}${path}`, { method });
        expect([method, path, a.status, a.json()]).toEqual([method, path, 503, { type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'connector is inactive' }]);
      }
      expect((await request(`${base}/api/datapointsX`)).status).toBe(404);
      expect((await request(`${base}/api/datapoints`, { method: 'PUT' })).status).toBe(404);
    });
  });
});
