import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { buildInbound } from '../src/runtime/inbound';
import { outboundOpenApi } from '../src/http/openapi/outbound';
import { outboundRoutes } from '../src/http/outbound/routes';
import type { ConnectorContext } from '../src/runtime/connector';
import { request } from './helpers/http';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { privateRedis, type TestRedis } from './helpers/redis';

/**
 * Issue 12: a fuzz test of the HTTP edges. Random methods, paths, query strings, headers and
 * bodies against both connectors (API keys on): the process lives, every answer has one of the
 * contract's codes, and nothing is written to the process image or the stream unless the answer
 * is 200.
 */
let redis: TestRedis;
let client: Redis;
const r = privateRedis();
let inbound: InProcess;
let outbound: InProcess;
const KEY = 'fuzz-key';
const MAPPINGS = [
  { name: 'a', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'x' },
  { name: 'b', topic: 't', casdu: 1, ioa: 2, type: 1, valuePath: 'y.z', valueType: 'bool', timestampPath: 'ts' },
];

beforeAll(async () => {
  ({ redis, client } = r);
  const env = { Authentication__ApiKeys: KEY, Http__MaxBodyBytes: '4096' };
  inbound = await startInProcess('inbound', buildInbound, redis, { mappings: MAPPINGS }, env);
  const pull = (ctx: ConnectorContext) => ({
    dataRoutes: outboundRoutes({ redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics }),
    openapi: outboundOpenApi,
  });
  outbound = await startInProcess('outbound', pull, redis, {}, env);
}, 30000);
afterAll(async () => {
  await Promise.all([inbound?.close(), outbound?.close()]);
});

const written = async () => (await client.keys('process:image:*')).length + ((await client.exists('process:updates')) ? await client.xlen('process:updates') : 0);

const token = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/);
const queryValue = fc.oneof(fc.constantFrom('t', 'u', '', '1', '007', '65536', '-1', '1e3', '%zz', '%00', 'a b'), fc.string({ maxLength: 8 }).map(encodeURIComponent));
const query = fc.array(fc.tuple(fc.constantFrom('topic', 'casdu', 'ioa', 'x', 'topic[]', 'casdu[]', '__proto__'), queryValue), { maxLength: 6 })
  .map((ps) => (ps.length === 0 ? '' : `?${ps.map(([k, v]) => `${k}=${v}`).join('&')}`));
const body = fc.oneof(
  fc.json({ maxDepth: 4 }),
  fc.constantFrom('{"x":1,"y":{"z":"on"},"ts":"2026-11-21T10:15:00Z"}', '{"x":"NaN"}', '{"x":1e400}', '[1]', 'null', '{', '', '{"x":1}X', '\u0000', 'x'.repeat(5000)),
  fc.string({ maxLength: 100 }),
);
const headers = fc.record({
  'Content-Type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'APPLICATION/JSON', ''),
  auth: fc.constantFrom('bearer', 'x-api-key', 'wrong', 'none'),
  'Content-Encoding': fc.constantFrom(undefined, 'identity', 'gzip', 'br'),
  extra: fc.tuple(token, fc.stringMatching(/^[ -~]{0,20}$/)),
});
const CODES: Record<'inbound' | 'outbound', Record<string, number[]>> = {
  inbound: { 'POST /api/datapoints': [200, 400, 401, 404, 413, 415, 422, 503] },
  outbound: { 'GET /api/datapoints': [200, 400, 401, 503], 'HEAD /api/datapoints': [200, 400, 401, 503] },
};
const OTHER = [200, 401, 404];

it('random requests: the process lives, answers are in the contract\'s codes, nothing written on a non-200', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'),
      fc.constantFrom('/api/datapoints', '/api/datapoints/', '/API/datapoints', '/api/webhooks', '/health/live', '/health/ready', '/metrics', '/openapi.json', '/', '/%2e%2e/etc', '/api/datapoints;x'),
      fc.boolean(),
      query,
      body,
      headers,
      async (method, path, toInbound, q, b, h) => {
        const base = toInbound ? inbound.url : outbound.url;
        const hs: Record<string, string> = {};
        if (h['Content-Type'] !== '') hs['Content-Type'] = h['Content-Type'];
        if (h.auth === 'bearer') hs.Authorization = `Bearer ${KEY}`;
        if (h.auth === 'x-api-key') hs['X-Api-Key'] = KEY;
        if (h.auth === 'wrong') hs.Authorization = 'Bearer nope';
        if (h['Content-Encoding'] !== undefined) hs['Content-Encoding'] = h['Content-Encoding'];
        hs[`X-${h.extra[0]}`] = h.extra[1];
        const before = await written();
        const hasBody = method !== 'GET' && method !== 'HEAD';
        const answer = await request(`${base}${path}${q}`, { method, headers: hs, ...(hasBody ? { body: b } : {}) }).catch((err: Error) => ({ status: -1, text: err.message }));
        // express routes case-insensitively and ignores a trailing slash
        const route = `${method} ${path.toLowerCase().replace(/\/$/, '')}`;
        const allowed = CODES[toInbound ? 'inbound' : 'outbound'][route] ?? OTHER;
        expect([route, answer.status, allowed.includes(answer.status)]).toEqual([route, answer.status, true]);
        if (answer.status !== 200) expect([route, answer.status, await written()]).toEqual([route, answer.status, before]);
      },
    ),
    { numRuns: 300, seed: 20261122 },
  );
  // still alive and well
  expect((await request(`${inbound.url}/health/live`)).status).toBe(200);
  expect((await request(`${outbound.url}/health/ready`)).status).toBe(200);
}, 120000);
