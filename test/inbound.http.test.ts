import { buildInbound } from '../src/runtime/inbound';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { postJson, request } from './helpers/http';
import { TestRedis } from './helpers/redis';
import type { Redis } from 'ioredis';

const MAPPINGS = [
  { name: 'temp', topic: 'plant-a', casdu: 1, ioa: 1001, type: 36, valuePath: 'sensors.boiler.temp', valueType: 'float', timestampPath: 'ts' },
  { name: 'pump', topic: 'plant-a', casdu: 1, ioa: 1002, type: 30, valuePath: 'pump.on', valueType: 'bool', timestampPath: 'ts' },
  { name: 'tap', topic: 'plant-a', casdu: 2, ioa: 7, type: 32, valuePath: 'taps[0]', valueType: 'int' },
  { name: 'other', topic: 'plant-b', casdu: 3, ioa: 1, type: 13, valuePath: 'x' },
];
const GOOD = { sensors: { boiler: { temp: '21.5' } }, pump: { on: 'on' }, taps: [5], ts: '2026-11-21T10:15:00Z' };

let redis: TestRedis;
let client: Redis;
let app: InProcess;
const url = (q = '?topic=plant-a') => `${app.url}/api/datapoints${q}`;

beforeAll(async () => {
  redis = await TestRedis.start();
  client = redis.client();
});
afterAll(async () => {
  client.disconnect();
  await redis.destroy();
});

const start = async (settings: object = { mappings: MAPPINGS }, env: Record<string, string> = {}) => {
  app = await startInProcess('inbound', buildInbound, redis, settings, env);
};
const stopApp = async () => app.close();

const writtenNothing = async () => {
  expect(await client.keys('process:image:*')).toEqual([]);
  expect(await client.xlen('process:updates')).toBe(0);
};

describe('POST /api/datapoints: the checks of CONTRACT 5.1, in order', () => {
  beforeEach(async () => {
    await client.flushall();
  });
  afterEach(stopApp);

  it('401 problem details when API keys are configured and none valid is given, before everything else', async () => {
    await start({ isActive: false, mappings: MAPPINGS }, { Authentication__ApiKeys: 'k1,k2' });
    const r = await request(url(''), { method: 'POST' });
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json()).toEqual({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: expect.any(String) });
    expect((await postJson(url(), GOOD, { Authorization: 'Bearer wrong' })).status).toBe(401);
    // a valid key passes authentication and meets the next check: inactive
    expect((await postJson(url(), GOOD, { Authorization: 'Bearer k2' })).status).toBe(503);
    expect((await postJson(url(), GOOD, { 'X-Api-Key': 'k1' })).status).toBe(503);
  });

  it('503 problem details when the connector is inactive, before the topic check; health stays open', async () => {
    await start({ isActive: false, mappings: MAPPINGS });
    const r = await request(url(''), { method: 'POST' });
    expect(r.status).toBe(503);
    expect(r.json()).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'connector is inactive' });
    expect((await request(`${app.url}/health/live`)).status).toBe(200);
    expect((await request(`${app.url}/health/ready`)).json()).toEqual({ status: 'not ready', reason: 'connector is inactive' });
  });

  it.each([['absent', ''], ['empty', '?topic='], ['given twice', '?topic=plant-a&topic=plant-b']])(
    '400 missing_topic when the topic is %s, before the media type check',
    async (_what, q) => {
      await start();
      const r = await request(url(q), { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' });
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.json()).toEqual({ code: 'missing_topic', message: expect.stringContaining('topic') });
    },
  );

  it('415 unsupported_media_type unless application/json (parameters allowed), before the size check', async () => {
    await start({ mappings: MAPPINGS }, { Http__MaxBodyBytes: '10' });
    for (const type of ['text/plain', 'application/xml', 'application/jsonx']) {
      const r = await request(url(), { method: 'POST', headers: { 'Content-Type': type }, body: 'x'.repeat(100) });
      expect([type, r.status, r.json().code]).toEqual([type, 415, 'unsupported_media_type']);
    }
    const none = await request(url(), { method: 'POST', body: '{}' });
    expect(none.status).toBe(415);
    const withCharset = await request(url(), { method: 'POST', headers: { 'Content-Type': 'Application/JSON; charset=utf-8' }, body: 'x'.repeat(100) });
    expect(withCharset.json().code).toBe('payload_too_large');
  });

  it('413 payload_too_large past Http:MaxBodyBytes, by Content-Length or while reading a chunked body, before JSON parsing', async () => {
    await start({ mappings: MAPPINGS }, { Http__MaxBodyBytes: '64' });
    const declared = await postJson(url(), `{"a":"${'x'.repeat(100)}`);
    expect(declared.status).toBe(413);
    expect(declared.json()).toEqual({ code: 'payload_too_large', message: 'the body exceeds 64 bytes' });
    const chunked = await request(url(), { method: 'POST', headers: { 'Content-Type': 'application/json' }, chunks: ['{"a":"', 'x'.repeat(40), 'x'.repeat(40), '"}'] });
    expect(chunked.status).toBe(413);
    await writtenNothing();
    const exact = await postJson(url('?topic=plant-b'), `{"x":${'1'.repeat(58)}}`);
    expect(exact.status).toBe(200);
  });

  it('400 invalid_json, before the topic lookup', async () => {
    await start();
    const r = await postJson(url('?topic=nope'), '{"a":');
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ code: 'invalid_json', message: expect.stringMatching(/^the body is not valid JSON/) });
  });

  // CONTRACT 5.5: an array of 1 to Http:MaxBatchItems objects is a body too; the message says what is wrong with one
  const SHAPE = 'the body must be a JSON object or an array of 1 to 1000 objects';
  it.each([
    ['an array of a number', '[1]', `${SHAPE}: item 0 is not an object`],
    ['an array with a later item no object', '[{},{},[],5]', `${SHAPE}: item 2 is not an object`],
    ['an empty array', '[]', `${SHAPE}: the array is empty`],
    ['too many items', `[${Array(1001).fill('{}').join(',')}]`, `${SHAPE}: the array has 1001 items, more than 1000 (Http:MaxBatchItems)`],
    ['a string', '"x"', SHAPE], ['null', 'null', SHAPE], ['a number', '5', SHAPE],
  ])('400 invalid_body for %s, before the topic lookup', async (_what, body, message) => {
    await start();
    const r = await postJson(url('?topic=nope'), body);
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ code: 'invalid_body', message });
  });

  it('404 unknown_topic with the contract message', async () => {
    await start();
    const r = await postJson(url('?topic=plant-z'), GOOD);
    expect(r.status).toBe(404);
    expect(r.json()).toEqual({ code: 'unknown_topic', message: "No mappings are configured for topic 'plant-z'" });
  });

  it('503 problem details when the data store is not connected, then recovers', async () => {
    await start();
    await redis.stop();
    try {
      await new Promise((r) => setTimeout(r, 100));
      const r = await postJson(url(), GOOD);
      expect(r.status).toBe(503);
      expect(r.json()).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'data store is not connected' });
      expect((await request(`${app.url}/health/ready`)).status).toBe(503);
    } finally {
      await redis.start();
    }
    await app.ctx.datastore.ready();
    expect((await postJson(url(), GOOD)).status).toBe(200);
  });
});

describe('POST /api/datapoints: writes', () => {
  beforeAll(() => start({ mappings: MAPPINGS }, { Datastore__StreamMaxLength: '1000' }));
  afterAll(stopApp);
  beforeEach(async () => {
    await client.flushall();
  });

  it('200: one SET and one XADD per mapping, in mapping order, exact objects and stream fields', async () => {
    const r = await postJson(url(), GOOD);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ topic: 'plant-a', succeeded: ['temp', 'pump', 'tap'] });
    const temp = { casdu: 1, ioa: 1001, type: 36, value: 21.5, timestamp: '2026-11-21T10:15:00.000Z', source: 'test-connector' };
    const pump = { casdu: 1, ioa: 1002, type: 30, value: true, timestamp: '2026-11-21T10:15:00.000Z', source: 'test-connector' };
    expect(JSON.parse((await client.get('process:image:casdu:1:ioa:1001'))!)).toEqual(temp);
    expect(JSON.parse((await client.get('process:image:casdu:1:ioa:1002'))!)).toEqual(pump);
    const tap = JSON.parse((await client.get('process:image:casdu:2:ioa:7'))!) as Record<string, unknown>;
    expect(tap).toMatchObject({ casdu: 2, ioa: 7, type: 32, value: 5, source: 'test-connector' });
    expect(Date.now() - Date.parse(tap.timestamp as string)).toBeLessThan(10000);
    const entries = await client.xrange('process:updates', '-', '+');
    expect(entries.map(([, f]) => f.slice(0, 6))).toEqual([
      ['casdu', '1', 'ioa', '1001', 'source', 'test-connector'],
      ['casdu', '1', 'ioa', '1002', 'source', 'test-connector'],
      ['casdu', '2', 'ioa', '7', 'source', 'test-connector'],
    ]);
    expect(entries.map(([, f]) => f[6])).toEqual(['data', 'data', 'data']);
    expect(JSON.parse(entries[0]![1][7]!)).toEqual(temp);
  });

  it('422: the exact body, error-stream entries, and nothing written to the process image or the stream', async () => {
    const r = await postJson(url(), { sensors: { boiler: { temp: 'abc' } }, pump: { on: 'on' }, taps: [64], ts: 'yesterday' });
    expect(r.status).toBe(422);
    expect(r.json()).toEqual({
      topic: 'plant-a',
      message: '3 of 3 mappings failed',
      failed: [
        { signalId: 'temp', error: `value "abc" at path 'sensors.boiler.temp' is not a float` },
        { signalId: 'pump', error: `invalid timestamp at path 'ts': "yesterday"` },
        { signalId: 'tap', error: "value 64 at path 'taps[0]' is out of range -64..63 for type 32" },
      ],
      succeeded: [],
    });
    await writtenNothing();
    const errors = await client.xrange('connectors:test-connector:errors', '-', '+');
    expect(errors.map(([, f]) => f)).toEqual([
      ['topic', 'plant-a', 'signalId', 'temp', 'error', `value "abc" at path 'sensors.boiler.temp' is not a float`, 'casdu', '1', 'ioa', '1001'],
      ['topic', 'plant-a', 'signalId', 'pump', 'error', `invalid timestamp at path 'ts': "yesterday"`, 'casdu', '1', 'ioa', '1002'],
      ['topic', 'plant-a', 'signalId', 'tap', 'error', "value 64 at path 'taps[0]' is out of range -64..63 for type 32", 'casdu', '2', 'ioa', '7'],
    ]);
  });

  it('422 with some mappings succeeding: succeeded is a list of objects, and still nothing is written', async () => {
    const r = await postJson(url(), { ...GOOD, taps: [] });
    expect(r.status).toBe(422);
    expect(r.json()).toEqual({
      topic: 'plant-a', message: '1 of 3 mappings failed',
      failed: [{ signalId: 'tap', error: "value not found at path 'taps[0]'" }],
      succeeded: [{ signalId: 'temp' }, { signalId: 'pump' }],
    });
    await writtenNothing();
    expect(await client.xlen('connectors:test-connector:errors')).toBe(1);
  });

  it('503 and nothing written when EXEC fails', async () => {
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    try {
      const r = await postJson(url(), GOOD);
      expect(r.status).toBe(503);
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    await writtenNothing();
    expect(app.logs().some((l) => l.msg === 'writing the data points failed; nothing was written')).toBe(true);
  });

  it('caps process:updates with MAXLEN ~ Datastore:StreamMaxLength', async () => {
    for (let i = 0; i < 60; i++) {
      const batch = Array.from({ length: 20 }, () => postJson(url(), GOOD));
      expect((await Promise.all(batch)).every((r) => r.status === 200)).toBe(true);
    }
    // 3600 appends with MAXLEN ~ 1000: Redis trims whole nodes, so the length stays near 1000.
    const len = await client.xlen('process:updates');
    expect(len).toBeGreaterThanOrEqual(1000);
    expect(len).toBeLessThan(1200);
  });

  it('200 parallel requests all land, with one stream entry per mapping', async () => {
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => postJson(url(), { ...GOOD, sensors: { boiler: { temp: i } } })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(200).fill(200));
    const entries = await client.xrange('process:updates', '-', '+');
    expect(entries).toHaveLength(600);
    const temps = entries.filter(([, f]) => f[3] === '1001').map(([, f]) => (JSON.parse(f[7]!) as { value: number }).value);
    expect(temps.sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('counts requests and mapping outcomes in /metrics and documents the endpoint in /openapi.json', async () => {
    await postJson(url(), GOOD);
    await postJson(url(), { ...GOOD, taps: [] });
    const metrics = (await request(`${app.url}/metrics`)).text;
    expect(metrics).toMatch(/inbound_mappings_total\{topic="plant-a",outcome="failed"\} [1-9]/);
    expect(metrics).toMatch(/http_requests_total\{route="\/api\/datapoints",method="POST",status="422"\} [1-9]/);
    const doc = (await request(`${app.url}/openapi.json`)).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths['/api/datapoints'].post.responses).sort()).toEqual(['200', '400', '401', '403', '404', '409', '413', '415', '422', '429', '503']);
    expect(doc.components.schemas.InboundFailure.properties.succeeded.items.required).toEqual(['signalId']);
  });
});
