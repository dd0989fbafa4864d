import * as E from 'fp-ts/Either';
import { createServer, get as httpGet } from 'node:http';
import { Writable } from 'node:stream';
import { createApp } from '../src/http/app/app';
import { makeMetrics } from '../src/telemetry/metrics';
import { parseConnectionString, toRedisOptions } from '../src/config/connectionString';
import { parseManagedSettings } from '../src/config/managed';
import { collectRaw, loadStartupSettings } from '../src/config/startup';
import { makeLogger } from '../src/runtime/logger';
import { runConnector } from '../src/runtime/connector';
import { decodeEntry } from '../src/streams/read/entries';
import { Connector, eventually, runCli } from './helpers/cli';
import { request } from './helpers/http';
import { pendingCount, usePushHarness } from './helpers/push';
import { freePort, type TestRedis } from './helpers/redis';
import { tally } from './helpers/tally';
import type { Redis } from 'ioredis';

/** Issue 12, cases 3, 4, 8 and 13: no data and no parameter can crash a connector or turn safety off. */
let redis: TestRedis;
let client: Redis;
const h = usePushHarness();
beforeAll(() => {
  ({ redis, client } = h.r);
});

const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

describe('case 3: a poison entry cannot stop push', () => {
  it('decoding is total: data nested 10,000 levels deep that needs its fields filled in is undeliverable, not a throw', () => {
    const entry = { id: '1-0', fields: ['casdu', '1', 'ioa', '2', 'source', 's', 'data', `{"deep":${nested(10000)}}`] };
    expect(decodeEntry(entry)).toMatchObject({ ok: false, id: '1-0', reason: expect.stringMatching(/^data cannot be serialised again/) });
  });

  it('the entry is logged, acknowledged and counted; delivery goes on, before and after a restart', async () => {
    const rec = await h.receiver();
    const { c, base } = await h.outbound('poison', [{ url: rec.url }]);
    await h.produce(0, 5);
    await client.xadd('process:updates', '*', 'casdu', '1', 'ioa', '2', 'source', 's', 'data', `{"deep":${nested(10000)}}`);
    await h.produce(5, 5);
    await eventually(() => (tally(rec).seqs.size === 10 ? true : undefined), 20000, 'the entries around it delivered');
    await eventually(async () => ((await pendingCount(client, 'poison')) === 0 ? true : undefined));
    await c.waitForLog((l) => l.msg === 'stream entry skipped and acknowledged');
    expect(c.logs().some((l) => l.msg === 'stream entry skipped and acknowledged' && /serialised/.test(String(l.reason)))).toBe(true);
    expect((await request(`${base}/metrics`)).text).toMatch(/^stream_entries_undeliverable_total 1$/m);
    expect((await request(`${base}/health/ready`)).status).toBe(200);
    await c.stop('SIGKILL');
    await h.outbound('poison', [{ url: rec.url }]);
    await h.produce(10, 5);
    await eventually(() => (tally(rec).seqs.size === 15 ? true : undefined), 20000, 'still delivering after the restart');
  });

  it('a background failure ends the connector with a non-zero status; readiness says why meanwhile', async () => {
    const app = createApp({
      log: makeLogger({}, new Writable({ write: (_c, _e, cb) => cb() })), metrics: makeMetrics({ kind: 'outbound', id: 'x', version: '0' }), apiKeys: [],
      isConnected: () => true, isActive: () => true, failure: () => 'push pipeline failed: boom', dataRoutes: [], openapi: () => ({}),
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const ready = await request(`http://127.0.0.1:${(server.address() as { port: number }).port}/health/ready`);
    server.close();
    expect([ready.status, ready.json()]).toEqual([503, { status: 'not ready', reason: 'push pipeline failed: boom' }]);

    const startup = loadStartupSettings(collectRaw({}, { Id: 'dies', ConnectionStrings__Datastore: redis.url }), { requireId: true, hostname: 'h' });
    if (E.isLeft(startup)) throw new Error(startup.left.join());
    const target = parseConnectionString(redis.url);
    if (E.isLeft(target)) throw new Error(target.left);
    const port = await freePort();
    await client.set('connectors:dies:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`] }));
    const lines: string[] = [];
    const log = makeLogger({}, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }));
    let die!: (reason: string) => void;
    const outcome = runConnector('outbound', startup.right, toRedisOptions(target.right), log, () => ({
      dataRoutes: [],
      openapi: { paths: {}, schemas: {} },
      start: () => ({ failed: new Promise<string>((resolve) => (die = resolve)), stop: async () => undefined }),
    }));
    await eventually(async () => ((await request(`http://127.0.0.1:${port}/health/ready`)).status === 200 ? true : undefined));
    die('push pipeline failed: boom');
    expect(await outcome).toEqual({ code: 1, message: 'push pipeline failed: boom' });
  });
});

describe('case 4: a deeply nested value in the config key', () => {
  // built as text: JSON.stringify itself cannot serialise such a value
  const deepConfig = `{"mappings":[{"name":"m","topic":"t","casdu":${nested(10000)},"ioa":1,"type":36,"valuePath":"v"}]}`;

  it('is refused, naming the field, by the decoder (never a throw)', () => {
    expect(parseManagedSettings(deepConfig)).toEqual(E.left(['mappings[0].casdu[0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper than 16 levels']));
    expect(parseManagedSettings(`{"webhooks":[{"url":"http://a/","headers":{"X":${nested(20)}}}]}`)).toMatchObject({ _tag: 'Left' });
  });

  it('at start-up: exit 2 naming the field; at run time: logged as invalid, the connector keeps running', async () => {
    await client.set('connectors:deep-1:config', deepConfig);
    const start = await runCli(['inbound'], { Id: 'deep-1', ConnectionStrings__Datastore: redis.url });
    expect([start.code, start.stderr.trim()]).toEqual([2, expect.stringMatching(/^rest-connector: connectors:deep-1:config is invalid: mappings\[0\]\.casdu(\[0\])+: nested deeper than 16 levels$/)]);
    const port = await freePort();
    await client.set('connectors:deep-2:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`] }));
    const c = new Connector('inbound', { Id: 'deep-2', ConnectionStrings__Datastore: redis.url, Datastore__ConfigPollIntervalMilliseconds: '100' });
    try {
      await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
      await client.set('connectors:deep-2:config', deepConfig);
      await c.waitForLog((l) => l.msg === 'configuration change is invalid; keeping the current configuration');
      expect((await request(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
      expect(c.proc.exitCode).toBeNull();
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });
});

it('case 8: a config key of the wrong type is a startup error naming the key (exit 2), not a retry for ever', async () => {
  await client.hset('connectors:hash:config', 'a', '1');
  const r8 = await runCli(['outbound'], { Id: 'hash', ConnectionStrings__Datastore: redis.url });
  expect([r8.code, r8.stderr.trim()]).toEqual([2, expect.stringMatching(/^rest-connector: connectors:hash:config is not a string \(hash\): WRONGTYPE/)]);
});

describe('case 13: parameters that would disable safety are startup errors', () => {
  it.each([
    ['Authentication__ApiKeys', ' , ', /^rest-connector: Authentication:ApiKeys: no usable key in ' , '/],
    ['Webhooks__TimeoutMilliseconds', '2147483648', /^rest-connector: Webhooks:TimeoutMilliseconds: must be at most 2147483647, got '2147483648'$/],
    ['Datastore__StreamPollIntervalMilliseconds', '99999999999', /^rest-connector: Datastore:StreamPollIntervalMilliseconds: must be at most 2147483647/],
    ['Datastore__ConnectionRetrySeconds', '9999999', /^rest-connector: Datastore:ConnectionRetrySeconds: must be at most 2147483.647/],
  ])('%s=%j: exit 2 naming it', async (name, value, message) => {
    const run = await runCli(['outbound'], { Id: 'p', ConnectionStrings__Datastore: redis.url, [name]: value });
    expect([run.code, run.stderr.trim()]).toEqual([2, expect.stringMatching(message)]);
  });
});

describe('cases 12 and 14: query strings and GET-all', () => {
  const { startInProcess } = require('./helpers/inProcess') as typeof import('./helpers/inProcess');
  const { buildInbound } = require('../src/runtime/inbound') as typeof import('../src/runtime/inbound');
  const { outboundRoutes } = require('../src/http/outbound/routes') as typeof import('../src/http/outbound/routes');
  const { outboundOpenApi } = require('../src/http/openapi/outbound') as typeof import('../src/http/openapi/outbound');
  const pull = (ctx: import('../src/runtime/connector').ConnectorContext) => ({
    dataRoutes: outboundRoutes({ redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics }),
    openapi: outboundOpenApi,
  });
  const junk = Array.from({ length: 1000 }, (_, i) => `j${i}=1`).join('&');
  const scans = async () => Number(/cmdstat_scan:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);

  it('case 12: over 1000 parameters, or a repeated casdu, ioa or topic anywhere, is refused', async () => {
    const out = await startInProcess('outbound', pull, redis, {});
    const inb = await startInProcess('inbound', buildInbound, redis, { mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] });
    try {
      const get = (q: string) => request(`${out.url}/api/datapoints?${q}`);
      expect((await get(`${junk}&casdu=70000`)).json()).toEqual({ code: 'invalid_casdu', message: 'casdu must be an unsigned integer in 0 to 65535' });
      expect((await get(`${junk}&ioa=1`)).json().code).toBe('invalid_ioa');
      expect((await get(`${junk}&x=1`)).json().code).toBe('invalid_query');
      expect((await get('casdu=1&x=2&casdu=1')).json().code).toBe('invalid_casdu');
      expect((await get('ioa=1&ioa=1')).status).toBe(400);
      expect((await get(`${Array.from({ length: 998 }, (_, i) => `j${i}=1`).join('&')}&casdu=1&ioa=1`)).status).toBe(200);
      const post = (q: string) => request(`${inb.url}/api/datapoints?${q}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":1}' });
      const twice = await post(`topic=t&${junk}&topic=b`);
      expect([twice.status, twice.json().code]).toEqual([400, 'missing_topic']);
      expect((await post('topic=t&x=1&topic=t')).status).toBe(400);
      expect(await client.exists('process:image:casdu:1:ioa:1')).toBe(0);
      expect((await post('topic=t')).status).toBe(200);
    } finally {
      await Promise.all([out.close(), inb.close()]);
    }
  });

  it('case 14: HEAD reads no key; a GET-all whose client left stops scanning', async () => {
    const pipe = client.pipeline();
    for (let i = 0; i < 60000; i++) pipe.set(`process:image:casdu:9:ioa:${i}`, '{"casdu":9}');
    await pipe.exec();
    const out = await startInProcess('outbound', pull, redis, {});
    try {
      const before = await scans();
      const head = await request(`${out.url}/api/datapoints`, { method: 'HEAD' });
      expect([head.status, head.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
      expect(await scans()).toBe(before);
      // one full read, to know what a full SCAN costs here
      expect((await request(`${out.url}/api/datapoints?casdu=9`)).json().datapoints).toHaveLength(60000);
      const full = (await scans()) - before;
      expect(full).toBeGreaterThan(3);
      // 10 clients that leave at once
      const { request: raw } = require('node:http') as typeof import('node:http');
      await Promise.all(Array.from({ length: 10 }, () => new Promise<void>((resolve) => {
        const req = raw(`${out.url}/api/datapoints`, { agent: false });
        req.on('error', () => resolve());
        req.on('socket', (s) => s.on('connect', () => setTimeout(() => (req.destroy(), resolve()), 5)));
        req.end();
      })));
      await new Promise((res) => setTimeout(res, 1500));
      const afterLeaving = (await scans()) - before - full;
      expect(afterLeaving).toBeLessThan(10 * full / 2);
    } finally {
      await out.close();
      await client.flushall();
    }
  });
});

describe('case 15: codes and texts', () => {
  const { readTimestamp } = require('../src/mapping/timestamp') as typeof import('../src/mapping/timestamp');
  const { startInProcess } = require('./helpers/inProcess') as typeof import('./helpers/inProcess');
  const { buildInbound } = require('../src/runtime/inbound') as typeof import('../src/runtime/inbound');
  /** The outbound connector's data routes in the test process, against the test's Redis. */
  const startOutbound = () => {
    const { outboundRoutes } = require('../src/http/outbound/routes') as typeof import('../src/http/outbound/routes');
    const { outboundOpenApi } = require('../src/http/openapi/outbound') as typeof import('../src/http/openapi/outbound');
    return startInProcess('outbound', (ctx) => ({
      dataRoutes: outboundRoutes({ redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, log: ctx.log, metrics: ctx.metrics }),
      openapi: outboundOpenApi,
    }), redis, {});
  };

  it('a process image key of another type is left out with a warning (200), not a 503 "not connected"', async () => {
    const app = await startOutbound();
    try {
      await client.hset('process:image:casdu:5:ioa:5', 'a', '1');
      await client.set('process:image:casdu:5:ioa:6', '{"casdu":5,"ioa":6}');
      const one = await request(`${app.url}/api/datapoints?casdu=5&ioa=5`);
      expect([one.status, one.json()]).toEqual([200, { datapoints: [] }]);
      const all = await request(`${app.url}/api/datapoints?casdu=5`);
      expect([all.status, all.json()]).toEqual([200, { datapoints: [{ casdu: 5, ioa: 6 }] }]);
    } finally {
      await client.flushall();
      await app.close();
    }
  });

  it('values that together exceed the longest string V8 can hold (556 MB, 1.05 MB each) are streamed whole (200), within the command deadline, not 503 "not connected"', async () => {
    const app = await startOutbound();
    try {
      // 530 values of 1.05 MB: 556 MB, past V8's ~536.9 M characters; one MGET of 1,000 keys would also outlast the 5 s command deadline
      const pad = 'x'.repeat(1_050_000);
      const values = Array.from({ length: 530 }, (_, ioa) => `{"casdu":9,"ioa":${ioa},"pad":"${pad}"}`);
      for (let i = 0; i < values.length; i += 50) {
        const pipe = client.pipeline();
        values.slice(i, i + 50).forEach((v, j) => pipe.set(`process:image:casdu:9:ioa:${i + j}`, v));
        await pipe.exec();
      }
      const expected = { bytes: '{"datapoints":['.length + values.reduce((n, v) => n + v.length, 0) + values.length - 1 + ']}'.length };
      const got = await new Promise<{ status: number; bytes: number; head: string; tail: string }>((resolve, reject) => {
        httpGet(`${app.url}/api/datapoints?casdu=9`, (res) => {
          let bytes = 0;
          let head = '';
          let tail = '';
          res.on('data', (d: Buffer) => {
            bytes += d.length;
            if (head.length < 40) head += d.subarray(0, 40).toString();
            tail = (tail + d.subarray(Math.max(0, d.length - 40)).toString()).slice(-40);
          });
          res.on('end', () => (res.complete ? resolve({ status: res.statusCode ?? 0, bytes, head: head.slice(0, 30), tail: tail.slice(-8) }) : reject(new Error('incomplete'))));
          res.on('error', reject);
        }).on('error', reject);
      });
      expect(got).toEqual({ status: 200, bytes: expected.bytes, head: '{"datapoints":[{"casdu":9,"ioa', tail: 'xxxx"}]}' });
    } finally {
      await client.flushall();
      await app.close();
    }
  }, 120000);

  it('numbers too large for a double are named as written, wherever they are in the body (not Infinity, not null)', () => {
    const { parseJsonBody, overflowingNumbers, WrittenNumber } = require('../src/mapping/writtenNumbers') as typeof import('../src/mapping/writtenNumbers');
    const { readAs } = require('../src/mapping/convert') as typeof import('../src/mapping/convert');
    const text = '{"v":1e400,"a":[1,{"k\\"x":-2E+999}],"__proto__":1e999,"d":9e999,"d":5,"ok":1e300,"s":"1e400"}';
    expect(overflowingNumbers(text).map((o) => [o.path, o.literal])).toEqual([
      [['v'], '1e400'], [['a', 1, 'k"x'], '-2E+999'], [['__proto__'], '1e999'], [['d'], '9e999'],
    ]);
    const body = parseJsonBody(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype); // __proto__ stays an own key
    expect(body.v).toEqual(new WrittenNumber('1e400'));
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')!.value).toEqual(new WrittenNumber('1e999'));
    expect([body.d, body.ok, body.s]).toEqual([5, 1e300, '1e400']); // the last of a repeated key wins, as in JSON.parse
    expect(readAs('float', body.v, 'v')).toEqual(E.left("value 1e400 at path 'v' is not a float"));
    expect(readAs('int', (body.a as unknown[])[1], 'a[1]')).toEqual(E.left(`value {"k\\"x":-2E+999} at path 'a[1]' is not an int`));
    expect(readTimestamp(body.v, 'ts')).toEqual(E.left("invalid timestamp at path 'ts': 1e400"));
    // deep bodies are walked without recursion
    expect(overflowingNumbers(`${'['.repeat(100000)}1e999${']'.repeat(100000)}`)[0]!.literal).toBe('1e999');
  });

  it('timestamps outside the years 0000-9999 are invalid (no RFC 3339 form)', () => {
    expect(readTimestamp(253402300800000, 'ts')).toEqual(E.left("invalid timestamp at path 'ts': 253402300800000")); // 10000-01-01
    expect(readTimestamp(253402300799999, 'ts')).toEqual(E.right('9999-12-31T23:59:59.999Z'));
    expect(readTimestamp(-62167219200001, 'ts')).toEqual(E.left("invalid timestamp at path 'ts': -62167219200001")); // before 0000
  });

  it('Content-Encoding other than identity is 415; a value nested 5,000 levels deep at a path is 422; the 422 log line lists at most 20 failures', async () => {
    const mappings = Array.from({ length: 30 }, (_, i) => ({ name: `m${i}`, topic: 't', casdu: 1, ioa: i, type: 36, valuePath: `v${i}` }));
    const app = await startInProcess('inbound', buildInbound, redis, { mappings: [...mappings, { name: 'deep', topic: 'd', casdu: 1, ioa: 99, type: 36, valuePath: 'x' }] });
    try {
      const post = (topic: string, body: string, headers: Record<string, string> = {}) =>
        request(`${app.url}/api/datapoints?topic=${topic}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
      const gz = await post('t', '{}', { 'Content-Encoding': 'gzip' });
      expect([gz.status, gz.json().code]).toEqual([415, 'unsupported_media_type']);
      expect((await post('t', '{}', { 'Content-Encoding': 'identity' })).status).toBe(422);
      const line = app.logs().find((l) => l.msg === 'mappings failed; nothing written') as { failedCount: number; failed: unknown[] };
      expect([line.failedCount, line.failed.length]).toEqual([30, 20]);
      const deep = await post('d', `{"x":${nested(5000)}}`);
      expect([deep.status, deep.json().failed[0].error]).toEqual([422, "value [[[[[[[[[…]]]]]]]]] at path 'x' is not a float"]);
      const huge = await post('d', '{"x": 1e400}');
      expect([huge.status, huge.json().failed[0].error]).toEqual([422, "value 1e400 at path 'x' is not a float"]);
    } finally {
      await app.close();
    }
  });
});

describe('cases 5, 6 and 7: connection, memory and time budgets', () => {
  const { connect } = require('node:net') as typeof import('node:net');
  const launch = async (kind: 'inbound' | 'outbound', id: string, env: Record<string, string>) => {
    const port = await freePort();
    await client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] }));
    const c = new Connector(kind, { Id: id, ConnectionStrings__Datastore: redis.url, ...env });
    await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
    return { c, base: `http://127.0.0.1:${port}`, port };
  };
  const open = (port: number) => new Promise<import('node:net').Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });

  it('case 5: connections past Http:MaxConnections are refused at once; slow headers are cut at Http:HeadersTimeoutMilliseconds, and health answers again', async () => {
    const { c, base, port } = await launch('inbound', 'conns', { Http__MaxConnections: '20', Http__HeadersTimeoutMilliseconds: '800' });
    const slow: Array<import('node:net').Socket> = [];
    try {
      for (let i = 0; i < 20; i++) {
        const s = await open(port);
        s.on('error', () => undefined);
        s.write('GET /health/live HTTP/1.1\r\nHost: x\r\n'); // headers never end
        s.resume(); // read what the server sends (its 408), so that its close is seen
        slow.push(s);
      }
      await new Promise((res) => setTimeout(res, 100));
      await expect(request(`${base}/health/live`)).rejects.toThrow(); // the 21st is closed at once
      const closed = await Promise.all(slow.map((s) => new Promise<boolean>((res) => (s.destroyed ? res(true) : s.once('close', () => res(true))))));
      expect(closed.every(Boolean)).toBe(true); // every slow one cut by the headers timeout
      expect((await request(`${base}/health/live`)).status).toBe(200);
    } finally {
      for (const s of slow) s.destroy();
      expect(await c.stop()).toBe(0);
    }
  });

  it('issue 20 case 5: clients that dribble a header byte now and then and never close their side are cut at Http:HeadersTimeoutMilliseconds, so health answers again', async () => {
    const { c, base, port } = await launch('outbound', 'dribble', { Http__MaxConnections: '20', Http__HeadersTimeoutMilliseconds: '800' });
    const dribblers: Array<import('node:net').Socket> = [];
    const timers: NodeJS.Timeout[] = [];
    try {
      // 30 connections for 20 slots: the last 10 are closed at once, the first 20 hold every slot
      for (let i = 0; i < 30; i++) {
        const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
        s.on('error', () => undefined);
        s.on('connect', () => {
          s.write('GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ');
          timers.push(setInterval(() => s.writable && s.write('a'), 300));
        });
        s.resume();
        dribblers.push(s);
      }
      await new Promise((res) => setTimeout(res, 200));
      await expect(request(`${base}/health/live`)).rejects.toThrow(); // every slot is held
      // each one is cut while it still dribbles (its next byte meets a closed connection)
      const closed = await Promise.all(dribblers.map((s) => new Promise<boolean>((res) => (s.destroyed ? res(true) : s.once('close', () => res(true))))));
      expect(closed.every(Boolean)).toBe(true);
      expect((await request(`${base}/health/live`)).status).toBe(200);
    } finally {
      for (const t of timers) clearInterval(t);
      for (const s of dribblers) s.destroy();
      expect(await c.stop()).toBe(0);
    }
  });

  it('case 6: bodies in flight past Http:MaxBodyBytesInFlight get 503 with Retry-After; a GET-all never read is cut off', async () => {
    const { c, base, port } = await launch('inbound', 'budget', { Http__MaxBodyBytesInFlight: '1500', Http__MaxBodyBytes: '1000' });
    const holders: Array<import('node:net').Socket> = [];
    try {
      for (let i = 0; i < 2; i++) {
        const s = await open(port);
        s.on('error', () => undefined);
        s.write('POST /api/datapoints?topic=t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 700\r\n\r\n{"v":'); // never finished
        s.resume();
        holders.push(s);
      }
      await new Promise((res) => setTimeout(res, 200));
      const busy = await request(`${base}/api/datapoints?topic=t`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: `{"v":1,"pad":"${'x'.repeat(600)}"}` });
      expect([busy.status, busy.headers['retry-after'], busy.json().detail]).toEqual([503, '1', expect.stringMatching(/too many request bodies/)]);
      for (const s of holders) s.destroy();
      await new Promise((res) => setTimeout(res, 200));
      expect((await request(`${base}/api/datapoints?topic=t`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":1}' })).status).toBe(200);
    } finally {
      expect(await c.stop()).toBe(0);
    }
    // a client that asks for everything and never reads: cut at Http:RequestTimeoutMilliseconds
    const pipe = client.pipeline();
    for (let i = 0; i < 20000; i++) pipe.set(`process:image:casdu:8:ioa:${i}`, JSON.stringify({ casdu: 8, ioa: i, pad: 'y'.repeat(300) }));
    await pipe.exec();
    const out = await launch('outbound', 'reader', { Http__RequestTimeoutMilliseconds: '1000' });
    try {
      const s = await open(out.port);
      s.on('error', () => undefined);
      s.pause(); // never reads
      s.write('GET /api/datapoints HTTP/1.1\r\nHost: x\r\n\r\n');
      const cut = await out.c.waitForLog((l) => l.msg === 'response cut off: the client stopped reading or left');
      expect(cut.reason).toBe('client stopped reading');
      expect(out.c.proc.exitCode).toBeNull();
      s.destroy();
    } finally {
      expect(await out.c.stop()).toBe(0);
      await client.flushall();
    }
  });

  it('case 7: a stalled Redis (CLIENT PAUSE): requests answer 503 at once, readiness says the store is stalled, and both recover', async () => {
    const { c, base } = await launch('inbound', 'paused', { Datastore__CommandTimeoutMilliseconds: '500' });
    try {
      expect((await request(`${base}/health/ready`)).status).toBe(200);
      await client.call('CLIENT', 'PAUSE', 4000, 'ALL');
      await eventually(async () => ((await request(`${base}/health/ready`)).status === 503 ? true : undefined), 3000, 'readiness 503');
      const ready = await request(`${base}/health/ready`);
      expect(ready.json()).toEqual({ status: 'not ready', reason: 'data store is not answering (stalled)' });
      const post = await request(`${base}/api/datapoints?topic=t`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":1}' });
      expect(post.status).toBe(503);
      await eventually(async () => ((await request(`${base}/health/ready`)).status === 200 ? true : undefined), 10000, 'readiness back');
      expect((await request(`${base}/api/datapoints?topic=t`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":1}' })).status).toBe(200);
    } finally {
      await client.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      expect(await c.stop()).toBe(0);
    }
  });
});

describe('case 11: answers that tell the truth', () => {
  const { startInProcess } = require('./helpers/inProcess') as typeof import('./helpers/inProcess');
  const { buildInbound } = require('../src/runtime/inbound') as typeof import('../src/runtime/inbound');
  const { connect } = require('node:net') as typeof import('node:net');
  const MAPPINGS = [0, 1, 2].map((i) => ({ name: `m${i}`, topic: 't', casdu: 4, ioa: i, type: 36, valuePath: 'v' }));

  it('process:updates that is not a stream: 503 and nothing written (no SET left behind a failed XADD)', async () => {
    const app = await startInProcess('inbound', buildInbound, redis, { mappings: MAPPINGS });
    try {
      await client.set('process:updates', 'not a stream');
      const r11 = await request(`${app.url}/api/datapoints?topic=t`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"v":1}' });
      expect([r11.status, r11.json().detail]).toEqual([503, 'process:updates is not a stream (it is a string); nothing was written']);
      expect(await client.keys('process:image:casdu:4:*')).toEqual([]);
    } finally {
      await client.del('process:updates');
      await app.close();
    }
  });

  it('a valid POST followed by a stray byte: the 200 of the write that was applied, then the connection closes; no raw 400', async () => {
    const app = await startInProcess('inbound', buildInbound, redis, { mappings: MAPPINGS });
    try {
      const port = Number(new URL(app.url).port);
      const body = '{"v":2}';
      const got = await new Promise<string>((resolve, reject) => {
        let text = '';
        const s = connect(port, '127.0.0.1', () => s.write(`POST /api/datapoints?topic=t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}X`));
        s.on('data', (d: Buffer) => (text += d.toString()));
        s.on('close', () => resolve(text));
        s.on('error', reject);
      });
      expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(got).not.toMatch(/400 Bad Request/);
      expect(await client.keys('process:image:casdu:4:*')).toHaveLength(3);
    } finally {
      await client.flushall();
      await app.close();
    }
  });
});

it('CONTRACT 5.1: an EXEC that got no answer in time is reported as of unknown outcome — and may indeed have been applied', async () => {
  const { execAtomically } = require('../src/http/inbound/store') as typeof import('../src/http/inbound/store');
  const { Redis: IORedis } = require('ioredis') as typeof import('ioredis');
  const slow = new IORedis({ port: redis.port, host: '127.0.0.1', protocol: 2, commandTimeout: 300, maxRetriesPerRequest: 0 });
  slow.on('error', () => undefined);
  try {
    await slow.ping();
    await client.call('CLIENT', 'PAUSE', 1000, 'WRITE');
    const result = await execAtomically(slow, [['set', 'process:image:casdu:6:ioa:1', '{"casdu":6}']]);
    expect(result).toEqual(E.left({ tag: 'unknown_outcome', error: 'Command timed out' }));
    await eventually(async () => ((await client.get('process:image:casdu:6:ioa:1')) !== null ? true : undefined), 5000, 'applied after all');
    // a refused transaction is not of unknown outcome
    await client.set('not-a-list', 'x');
    expect(await execAtomically(slow, [['lpush', 'not-a-list', '1']])).toEqual(E.left({ tag: 'aborted', error: expect.stringMatching(/WRONGTYPE/) }));
  } finally {
    slow.disconnect();
    await client.flushall();
  }
});
