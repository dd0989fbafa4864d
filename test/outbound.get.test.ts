import type { Redis } from 'ioredis';
import { outboundRoutes } from '../src/http/outbound/routes';
import { outboundOpenApi } from '../src/http/openapi/outbound';
import type { ConnectorContext } from '../src/runtime/connector';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { get as get_ } from 'node:http';
import { request } from './helpers/http';
import { TestRedis } from './helpers/redis';

let redis: TestRedis;
let client: Redis;
let app: InProcess;

/** The pull side only (the push pipeline has its own tests); small chunks to exercise streaming. */
const buildPull = (chunkSize: number) => (ctx: ConnectorContext) => ({
  dataRoutes: outboundRoutes({ redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics, chunkSize, chunksAhead: 2 }),
  openapi: outboundOpenApi,
});

const point = (casdu: number, ioa: number, extra: object = {}) => ({ casdu, ioa, type: 36, value: casdu + ioa / 1000, timestamp: '2026-11-21T10:15:00.000Z', source: 'in-1', ...extra });
const put = (casdu: number, ioa: number, extra: object = {}) => client.set(`process:image:casdu:${casdu}:ioa:${ioa}`, JSON.stringify(point(casdu, ioa, extra)));
const get = (q: string) => request(`${app.url}/api/datapoints${q}`);
const addresses = (body: { datapoints: Array<{ casdu: number; ioa: number }> }) => body.datapoints.map((p) => `${p.casdu}:${p.ioa}`);

beforeAll(async () => {
  redis = await TestRedis.start();
  client = redis.client();
  app = await startInProcess('outbound', buildPull(3), redis, {});
});
afterAll(async () => {
  await app.close();
  client.disconnect();
  await redis.destroy();
});

describe('GET /api/datapoints: query validation (CONTRACT 4.1)', () => {
  const casduError = { code: 'invalid_casdu', message: 'casdu must be an unsigned integer in 0 to 65535' };
  const ioaError = { code: 'invalid_ioa', message: 'ioa must be an unsigned integer in 0 to 16777215' };
  it.each([
    ['?casdu=', casduError], ['?casdu=abc', casduError], ['?casdu=-1', casduError], ['?casdu=1.5', casduError], ['?casdu=%201', casduError],
    ['?casdu=%2B1', casduError], ['?casdu=65536', casduError], ['?casdu=1e3', casduError], ['?casdu=0x10', casduError], ['?casdu=1&casdu=2', casduError],
    ['?casdu=99999999999999999999', casduError],
    ['?ioa=', ioaError], ['?ioa=16777216', ioaError], ['?ioa=x', ioaError], ['?ioa=1&ioa=1', ioaError], ['?casdu=1&ioa=-5', ioaError],
    ['?casdu=x&ioa=x', casduError],
  ])('400 for %s', async (q, body) => {
    const r = await get(q);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.json()).toEqual(body);
  });

  it.each([['?casdu=0'], ['?casdu=65535'], ['?ioa=16777215'], ['?casdu=007&ioa=0001'], ['?other=1']])('accepts %s', async (q) => {
    expect((await get(q)).status).toBe(200);
  });
});

describe('GET /api/datapoints: reading', () => {
  beforeAll(async () => {
    await client.flushall();
    for (const ioa of [100, 9, 10, 1]) await put(2, ioa);
    for (const ioa of [10, 9]) await put(10, ioa);
    await put(1, 10, { quality: 'good', extra: { nested: [1, 2] } });
    await put(65535, 16777215);
    // other shapes that a glob could match, and other data
    await client.set('process:image:casdu:1:ioa:5:extra', JSON.stringify(point(1, 5)));
    await client.set('process:image:casdu:01:ioa:5', JSON.stringify(point(1, 5)));
    await client.set('process:image:casdu:x:ioa:5', JSON.stringify(point(1, 5)));
    await client.xadd('process:updates', '*', 'casdu', '1', 'ioa', '5', 'source', 's', 'data', '{}');
    await client.set('process:image:casdu:3:ioa:1', 'not json');
    await client.set('process:image:casdu:3:ioa:2', '[1,2]');
    await client.set('process:image:casdu:3:ioa:3', '42');
  });

  it('no filter: every point, sorted numerically by casdu then ioa, other keys never leaking', async () => {
    const r = await get('');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(addresses(r.json())).toEqual(['1:10', '2:1', '2:9', '2:10', '2:100', '10:9', '10:10', '65535:16777215']);
  });

  it('casdu only, ioa only, both', async () => {
    expect(addresses((await get('?casdu=2')).json())).toEqual(['2:1', '2:9', '2:10', '2:100']);
    expect(addresses((await get('?ioa=10')).json())).toEqual(['1:10', '2:10', '10:10']);
    expect(addresses((await get('?casdu=10&ioa=9')).json())).toEqual(['10:9']);
    expect((await get('?casdu=10&ioa=11')).json()).toEqual({ datapoints: [] });
    expect((await get('?casdu=4')).json()).toEqual({ datapoints: [] });
    expect(addresses((await get('?casdu=0002&ioa=0100')).json())).toEqual(['2:100']);
  });

  it('passes stored fields unknown to us through unchanged', async () => {
    const r = await get('?casdu=1&ioa=10');
    expect(r.json()).toEqual({ datapoints: [point(1, 10, { quality: 'good', extra: { nested: [1, 2] } })] });
    expect(r.text).toBe(`{"datapoints":[${JSON.stringify(point(1, 10, { quality: 'good', extra: { nested: [1, 2] } }))}]}`);
  });

  it('leaves out values that are not JSON objects, logging a warning, without failing', async () => {
    const summaries = () => app.logs().filter((l) => l.msg === 'stored values that are not JSON objects were left out');
    const earlier = summaries().length;
    const r = await get('?casdu=3');
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ datapoints: [] });
    expect((await get('?casdu=3&ioa=1')).json()).toEqual({ datapoints: [] });
    // one summarised line for the list (however many values), one line for a single point read
    const summary = summaries().slice(earlier);
    expect(summary).toHaveLength(1);
    expect(summary[0]).toMatchObject({ count: 3, keys: ['process:image:casdu:3:ioa:1', 'process:image:casdu:3:ioa:2', 'process:image:casdu:3:ioa:3'] });
    expect(app.logs().filter((l) => l.msg === 'stored value is not a JSON object; left out').map((l) => l.key)).toContain('process:image:casdu:3:ioa:1');
  });

  it('streams a large result in chunks, complete and in order', async () => {
    const pipe = client.pipeline();
    for (let ioa = 0; ioa < 5000; ioa++) pipe.set(`process:image:casdu:20:ioa:${ioa}`, JSON.stringify(point(20, ioa)));
    await pipe.exec();
    const r = await get('?casdu=20');
    expect(r.headers['transfer-encoding']).toBe('chunked');
    const ioas = (r.json() as { datapoints: Array<{ ioa: number }> }).datapoints.map((p) => p.ioa);
    expect(ioas).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it('asks for a full collection every collectEvery keys it scans and once after such a response, never for a small one (issue 13)', async () => {
    const pipe = client.pipeline();
    for (let ioa = 0; ioa < 5000; ioa++) pipe.set(`process:image:casdu:21:ioa:${ioa}`, JSON.stringify(point(21, ioa)));
    await pipe.exec();
    let calls = 0;
    const counted = await startInProcess('outbound', (ctx) => ({
      dataRoutes: outboundRoutes({
        redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics,
        collect: () => calls++, collectEvery: 2000,
      }),
      openapi: outboundOpenApi,
    }), redis, {});
    try {
      const r = await request(`${counted.url}/api/datapoints?casdu=21`);
      const ioas = (r.json() as { datapoints: Array<{ ioa: number }> }).datapoints.map((p) => p.ioa);
      expect(ioas).toEqual(Array.from({ length: 5000 }, (_, i) => i));
      // 2,000 and 4,000 keys scanned, then the end of a response of at least 2,000 points
      expect(calls).toBe(3);
      expect((await request(`${counted.url}/api/datapoints?casdu=2`)).status).toBe(200);
      expect(calls).toBe(3);
    } finally {
      await counted.close();
    }
  });

  it('documents the endpoint and the data point schema in /openapi.json', async () => {
    const doc = (await request(`${app.url}/openapi.json`)).json();
    expect(Object.keys(doc.paths['/api/datapoints'].get.responses).sort()).toEqual(['200', '400', '401', '403', '429', '503']);
    expect(doc.components.schemas.DataPoint.required).toEqual(['casdu', 'ioa', 'type', 'value', 'timestamp', 'source']);
  });
});

describe('GET /api/datapoints: data store lost', () => {
  it('503 problem details while Redis is stopped, and recovery after it restarts', async () => {
    await client.flushall();
    await put(1, 1);
    await redis.stop();
    try {
      await new Promise((r) => setTimeout(r, 100));
      for (const q of ['', '?casdu=1', '?casdu=1&ioa=1']) {
        const r = await get(q);
        expect(r.status).toBe(503);
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(r.json()).toEqual({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'data store is not connected' });
      }
    } finally {
      await redis.start();
    }
    await app.ctx.datastore.ready();
    expect(addresses((await get('')).json())).toEqual(['1:1']);
  });

  it('aborts a streamed response when the connection drops in the middle, never sending it as complete', async () => {
    await client.flushall();
    const pipe = client.pipeline();
    for (let ioa = 0; ioa < 60000; ioa++) pipe.set(`process:image:casdu:30:ioa:${ioa}`, JSON.stringify(point(30, ioa, { pad: 'x'.repeat(200) })));
    await pipe.exec();
    const slow = await startInProcess('outbound', buildPull(50), redis, {});
    try {
      const outcome = new Promise<string>((resolve) => {
        get_(`${slow.url}/api/datapoints`, (res) => {
          // The head is out and values are being fetched chunk by chunk: now Redis goes away.
          void redis.stop();
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(res.complete ? `complete ${body.length}` : 'incomplete'));
          res.on('error', () => resolve('incomplete'));
        }).on('error', () => resolve('incomplete'));
      });
      expect(await outcome).toBe('incomplete');
    } finally {
      await redis.start();
      await slow.ctx.datastore.ready();
      await slow.close();
      await app.ctx.datastore.ready();
    }
  });
});
