import { Redis } from 'ioredis';
import { makeRateWindow } from '../src/http/app/rateWindow';
import { makeRefusals } from '../src/http/app/refusals';
import { makeMetrics } from '../src/telemetry/metrics';
import { privateRedis } from './helpers/redis';
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/**
 * CONTRACT 7.2: `maxRequestsPerSecond` counted in a private Redis in windows of whole Unix seconds
 * (the clock is the test's), and refusals logged at most once a second per caller and reason.
 */
const r = privateRedis();
afterEach(async () => {
  await r.client.flushall();
});

const verdicts = (vs: Array<{ allowed: boolean }>) => vs.map((v) => (v.allowed ? 'ok' : 'failed' in v ? 'failed' : 'no')).join(' ');

it('N requests of a window pass, in their order; the rest are refused with Retry-After until the window ends', async () => {
  let now = 1_700_000_000_250;
  const take = makeRateWindow({ redis: r.client, isConnected: () => true, connectorId: 'rt', now: () => now });
  const first = await Promise.all(Array.from({ length: 7 }, () => take('scada-a', 3)));
  expect(verdicts(first)).toBe('ok ok ok no no no no');
  expect(first[3]).toEqual({ allowed: false, retryAfterSeconds: 1 });
  expect(await r.client.get('connectors:rt:rate:scada-a:1700000000')).toBe('7');
  // the counter lives two seconds at most
  const ttl = await r.client.pttl('connectors:rt:rate:scada-a:1700000000');
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(2000);
  // used up: refused here, without another count
  now += 500;
  expect(await take('scada-a', 3)).toEqual({ allowed: false, retryAfterSeconds: 1 });
  expect(await r.client.get('connectors:rt:rate:scada-a:1700000000')).toBe('7');
  // another caller has its own window; the next second is a new one
  expect((await take('historian', 3)).allowed).toBe(true);
  now += 500;
  expect(verdicts(await Promise.all([take('scada-a', 3), take('scada-a', 3)]))).toBe('ok ok');
  expect(await r.client.get('connectors:rt:rate:scada-a:1700000001')).toBe('2');
});

it('a window used up exactly (N of N) refuses the next request here, without another count; below N one request after another all pass', async () => {
  const now = () => 1_700_000_050_000;
  const take = makeRateWindow({ redis: r.client, isConnected: () => true, connectorId: 'ex', now });
  // one after another: each waits for the count before it, and the next is counted on its own
  expect((await take('gw', 3)).allowed).toBe(true);
  expect((await take('gw', 3)).allowed).toBe(true);
  // a request that comes once the last count is wholly done (another turn of the event loop) is counted too
  await new Promise((res) => setTimeout(res, 10));
  expect((await take('gw', 3)).allowed).toBe(true);
  expect(await take('gw', 3)).toEqual({ allowed: false, retryAfterSeconds: 1 });
  expect(await r.client.get('connectors:ex:rate:gw:1700000050')).toBe('3');
});

it('a window key of another type (a foreign writer) fails the count: Redis answered, so the requests fail (not let through), and it is reported', async () => {
  await r.client.hset('connectors:wt:rate:gw:1700000060', 'x', '1');
  const failures: string[] = [];
  const take = makeRateWindow({ redis: r.client, isConnected: () => true, connectorId: 'wt', now: () => 1_700_000_060_000, countFailed: (e) => failures.push(e) });
  const all = await Promise.all([take('gw', 1), take('gw', 1), take('gw', 1)]);
  expect(verdicts(all)).toBe('failed failed failed');
  expect(all[0]).toEqual({ allowed: false, failed: expect.stringMatching(/WRONGTYPE/) });
  expect(failures).toEqual([expect.stringMatching(/WRONGTYPE/)]);
});

it('a failing count without a listener for it rejects nothing unhandled', async () => {
  const seen: unknown[] = [];
  const onUnhandled = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const broken = r.redis.client();
  await broken.quit();
  try {
    const take = makeRateWindow({ redis: broken, isConnected: () => true, connectorId: 'quiet', now: () => 1_700_000_070_000 });
    expect(verdicts(await Promise.all([take('gw', 1), take('gw', 1)]))).toBe('ok ok');
    await new Promise((res) => setTimeout(res, 50));
    expect(seen).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

it('two replicas share the count: what both let through in a window is N', async () => {
  const now = () => 1_700_000_100_000;
  const a = makeRateWindow({ redis: r.client, isConnected: () => true, connectorId: 'two', now });
  const other = r.redis.client();
  try {
    const b = makeRateWindow({ redis: other, isConnected: () => true, connectorId: 'two', now });
    const all = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b)('gw', 10)));
    expect(all.filter((v) => v.allowed)).toHaveLength(10);
    expect(await r.client.get('connectors:two:rate:gw:1700000100')).not.toBeNull();
  } finally {
    other.disconnect();
  }
});

it('requests that arrive while a count is in flight are counted together by the next one', async () => {
  const sent: string[] = [];
  const spy = r.redis.client();
  try {
    await spy.monitor().then((m) => m.on('monitor', (_t: string, args: string[]) => sent.push(args.join(' '))));
    const take = makeRateWindow({ redis: r.client, isConnected: () => true, connectorId: 'co', now: () => 1_700_000_200_000 });
    const all = await Promise.all(Array.from({ length: 20 }, () => take('gw', 100)));
    expect(all.every((v) => v.allowed)).toBe(true);
    await new Promise((res) => setTimeout(res, 100));
    // the first request raised alone, the 19 that came meanwhile together
    const raises = sent.filter((c) => /^incrby connectors:co:rate:gw:1700000200 /i.test(c)).map((c) => c.split(' ')[2]);
    expect(raises).toEqual(['1', '19']);
    expect(await r.client.get('connectors:co:rate:gw:1700000200')).toBe('20');
  } finally {
    spy.disconnect();
  }
});

it('without a data store connection the request goes on, and nothing is counted', async () => {
  const take = makeRateWindow({ redis: r.client, isConnected: () => false, connectorId: 'off', now: () => 1_700_000_300_000 });
  expect(verdicts(await Promise.all([take('gw', 1), take('gw', 1), take('gw', 1)]))).toBe('ok ok ok');
  expect(await r.client.keys('connectors:off:*')).toEqual([]);
});

it('a count that fails lets its requests go on, and says so at most once every 10 s', async () => {
  const broken = r.redis.client();
  await broken.quit();
  let now = 1_700_000_400_000;
  const failures: string[] = [];
  const take = makeRateWindow({ redis: broken, isConnected: () => true, connectorId: 'err', now: () => now, countFailed: (e) => failures.push(e) });
  expect(verdicts(await Promise.all([take('gw', 1), take('gw', 1)]))).toBe('ok ok');
  now += 9_000;
  expect((await take('gw', 1)).allowed).toBe(true);
  expect(failures).toEqual(['Connection is closed.']);
  now += 1_000;
  expect((await take('gw', 1)).allowed).toBe(true);
  expect(failures).toHaveLength(2);
});

it('a count refused by Redis (an ACL without INCRBY) fails its requests, never lets them through uncounted, and is reported', async () => {
  await r.client.call('ACL', 'SETUSER', 'no-incrby', 'on', '>pw', '~*', '+@all', '-incrby');
  const user = new Redis({ port: r.redis.port, host: '127.0.0.1', protocol: 2, username: 'no-incrby', password: 'pw' });
  try {
    const failures: string[] = [];
    const take = makeRateWindow({ redis: user, isConnected: () => true, connectorId: 'acl', countFailed: (e) => failures.push(e) });
    expect(verdicts(await Promise.all([take('gw', 1), take('gw', 1)]))).toBe('failed failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/NOPERM|EXECABORT/);
  } finally {
    user.disconnect();
    await r.client.call('ACL', 'DELUSER', 'no-incrby');
  }
});

describe('refusals', () => {
  const fakeRes = () => {
    const res = { statusCode: 0, headers: {} as Record<string, unknown>, body: '', setHeader(n: string, v: unknown) { this.headers[n.toLowerCase()] = v; }, end(b: string) { this.body = b; } };
    return res;
  };
  it('every refusal is counted and answered; the warn line comes at most once a second per caller and reason, with how many it left out', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = { warn: (o: Record<string, unknown>, msg: string) => lines.push({ ...o, msg }) } as unknown as Logger;
    const metrics = makeMetrics({ kind: 'inbound', id: 'x', version: 't' });
    let now = 10_000;
    const refuse = makeRefusals(log, metrics, () => now);
    const answers = [];
    for (let i = 0; i < 5; i++) {
      const res = fakeRes();
      refuse(res as unknown as ServerResponse, 'gw', 'rate_limited', 'too many', { 'Retry-After': '1' });
      answers.push(res);
      now += 100;
    }
    const res = fakeRes();
    refuse(res as unknown as ServerResponse, 'gw', 'forbidden', 'no');
    refuse(fakeRes() as unknown as ServerResponse, undefined, 'forbidden', 'nobody');
    now += 500; // exactly 1,000 ms after the first line
    refuse(fakeRes() as unknown as ServerResponse, 'gw', 'rate_limited', 'too many', { 'Retry-After': '1' });
    now += 1000; // a quiet second: the next line has nothing left out to tell
    refuse(fakeRes() as unknown as ServerResponse, 'gw', 'rate_limited', 'too many', { 'Retry-After': '1' });
    expect(answers.map((a) => a.statusCode)).toEqual([429, 429, 429, 429, 429]);
    expect(answers[0]!.headers['retry-after']).toBe('1');
    expect(JSON.parse(answers[0]!.body)).toEqual({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail: 'too many' });
    expect(res.statusCode).toBe(403);
    expect(lines.map((l) => [l.caller, l.reason, l.refusedSinceLastLine])).toEqual([
      ['gw', 'rate_limited', undefined], ['gw', 'forbidden', undefined], ['-', 'forbidden', undefined], ['gw', 'rate_limited', 4], ['gw', 'rate_limited', undefined],
    ]);
    expect(lines.every((l) => l.msg === 'request refused' && typeof l.detail === 'string')).toBe(true);
    const text = await metrics.registry.metrics();
    expect(text).toContain('http_requests_refused_total{caller="gw",reason="rate_limited"} 7');
    expect(text).toContain('http_requests_refused_total{caller="gw",reason="forbidden"} 1');
    expect(text).toContain('http_requests_refused_total{caller="-",reason="forbidden"} 1');
  });

  it('remembers at most 1,000 callers and reasons: the oldest is forgotten, and its next refusal is logged again', () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = { warn: (o: Record<string, unknown>) => lines.push(o) } as unknown as Logger;
    const refuse = makeRefusals(log, makeMetrics({ kind: 'inbound', id: 'x', version: 't' }), () => 5_000);
    for (let i = 0; i <= 1000; i++) refuse(fakeRes() as unknown as ServerResponse, `c${i}`, 'forbidden', 'no');
    expect(lines).toHaveLength(1001);
    // within the same second: c1000 is remembered (not logged again), c0 was forgotten (logged again)
    refuse(fakeRes() as unknown as ServerResponse, 'c1000', 'forbidden', 'no');
    expect(lines).toHaveLength(1001);
    refuse(fakeRes() as unknown as ServerResponse, 'c0', 'forbidden', 'no');
    expect(lines.map((l) => l.caller).slice(1001)).toEqual(['c0']);
    // c2 is still remembered: each new entry made room by forgetting only the oldest (c0, then c1)
    refuse(fakeRes() as unknown as ServerResponse, 'c2', 'forbidden', 'no');
    expect(lines).toHaveLength(1002);
  });
});
