import { createHmac } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Connector, eventually } from './helpers/cli';
import { request } from './helpers/http';
import { FAST, pendingCount as pendingCount_, usePushHarness, range, seqs } from './helpers/push';
import { freePort, type TestRedis } from './helpers/redis';

const pkg = require('../package.json') as { version: string };

let redis: TestRedis;
let client: Redis;
const h = usePushHarness();
const { receiver, outbound, produce } = h;

beforeAll(() => {
  ({ redis, client } = h.r);
});

const flat = (a: unknown[]): Record<string, unknown> => Object.fromEntries(Array.from({ length: a.length / 2 }, (_, i) => [String(a[2 * i]), a[2 * i + 1]]));
const pendingCount = (id: string) => pendingCount_(client, id);

describe('push mode', () => {
  it('sends the contract headers, a verifiable Standard Webhooks signature and the points in stream order', async () => {
    const r = await receiver();
    const secretBytes = Buffer.from('a signing key of ours');
    const secret = `whsec_${secretBytes.toString('base64')}`;
    await outbound('headers', [{ url: r.url, headers: { Authorization: 'Bearer T0KEN', 'X-Tenant': 'plant-a' }, secret }]);
    // data lacking casdu/ioa/source gets them from the entry's fields; unknown fields pass through
    // in one transaction: read at once, one batch, whatever the machine's load (three round trips
    // could straddle the 50 ms batch window: a CI run saw the first entry batched alone)
    const ids = (await client.multi()
      .xadd('process:updates', '*', 'casdu', '7', 'ioa', '70', 'source', 'other-connector', 'data', '{"type":1,"value":true,"timestamp":"2026-11-21T10:00:00.000Z","quality":"good"}')
      .xadd('process:updates', '*', 'casdu', '1', 'ioa', '2', 'source', 's', 'data', 'not json')
      .xadd('process:updates', '*', 'casdu', '8', 'ioa', '80', 'source', 's', 'data', '{"casdu":8,"ioa":80,"type":36,"value":1.5,"timestamp":"2026-11-21T10:00:00.000Z","source":"s"}')
      .exec())!.map(([err, id]) => {
      if (err !== null) throw err;
      return String(id);
    });
    await eventually(() => (r.delivered().length > 0 ? true : undefined));
    const req = r.delivered()[0]!;
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers.authorization).toBe('Bearer T0KEN');
    expect(req.headers['x-tenant']).toBe('plant-a');
    expect(req.headers['user-agent']).toBe(`rest-connectors/${pkg.version}`);
    expect(req.headers['webhook-id']).toBe(`${ids[0]}_${ids[2]}`);
    const ts = Number(req.headers['webhook-timestamp']);
    expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(30);
    // verified as a receiver would: HMAC-SHA256 over "{id}.{timestamp}.{body}" with the decoded whsec_ key
    const expected = createHmac('sha256', secretBytes).update(`${req.headers['webhook-id']}.${ts}.${req.body}`).digest('base64');
    expect(req.headers['webhook-signature']).toBe(`v1,${expected}`);
    expect(JSON.parse(req.body)).toEqual({
      datapoints: [
        { casdu: 7, ioa: 70, source: 'other-connector', type: 1, value: true, timestamp: '2026-11-21T10:00:00.000Z', quality: 'good' },
        { casdu: 8, ioa: 80, type: 36, value: 1.5, timestamp: '2026-11-21T10:00:00.000Z', source: 's' },
      ],
    });
    await eventually(async () => ((await pendingCount('headers')) === 0 ? true : undefined), 20000, 'all acknowledged');
  });

  it('signs with every listed secret: the official standardwebhooks library verifies with the old or the new one (rotation without a window)', async () => {
    const { Webhook } = require('standardwebhooks') as typeof import('standardwebhooks');
    const r = await receiver();
    const fresh = `whsec_${Buffer.from('the new signing key, 32 bytes long').toString('base64')}`;
    const plain = 'an old plain secret';
    await outbound('rotation', [{ url: r.url, secret: [fresh, plain] }]);
    await produce(0, 3);
    await eventually(() => (r.delivered().length > 0 ? true : undefined));
    const req = r.delivered()[0]!;
    const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    // a receiver that knows only the new whsec_ secret, and one that knows only the old plain one
    expect(new Webhook(fresh).verify(req.body, headers)).toEqual(JSON.parse(req.body));
    expect(new Webhook(plain, { format: 'raw' }).verify(req.body, headers)).toEqual(JSON.parse(req.body));
    // and the check can fail: a secret the connector does not hold, or a changed body
    expect(() => new Webhook(`whsec_${Buffer.from('some other key').toString('base64')}`).verify(req.body, headers)).toThrow();
    expect(() => new Webhook(fresh).verify(req.body.replace('"seq":0', '"seq":9'), headers)).toThrow();
  });

  it('isolates webhooks: 500 forever, hanging, 500-twice-then-200 and 400 receivers never hold back a healthy one', async () => {
    const failing = await receiver(() => ({ status: 500 }));
    const hanging = await receiver(() => 'hang');
    let flakyCalls = 0;
    const flaky = await receiver(() => (++flakyCalls <= 2 ? { status: 500 } : { status: 200 }));
    const rejecting = await receiver(() => ({ status: 400 }));
    const healthy = await receiver();
    // every batch gets its own attempts here, however many batches the 200 points make on a loaded
    // machine: no circuit opens and nothing queues behind the backlog (both have tests of their own)
    const env = { Webhooks__CircuitFailureThreshold: '1000', Webhooks__AutoRedrive: 'false' };
    const { c } = await outbound('isolation', [failing, hanging, flaky, rejecting, healthy].map((r) => ({ url: r.url })), env);
    await produce(0, 200);
    await eventually(() => (healthy.points().length >= 200 ? true : undefined), 20000, 'healthy receiver got everything');
    expect(seqs(healthy.points())).toEqual(range(0, 200));
    await eventually(() => (seqs(flaky.pointsDeduplicated()).length >= 200 ? true : undefined), 20000, 'flaky receiver got everything');
    expect(seqs(flaky.pointsDeduplicated()).sort((a, b) => a - b)).toEqual(range(0, 200));
    // everything acknowledged once every webhook is done with it
    await eventually(async () => ((await pendingCount('isolation')) === 0 ? true : undefined), 20000, 'all acknowledged');
    const dead = (await client.xrange('connectors:isolation:deadletter', '-', '+')).map(([, f]) => {
      const o: Record<string, string> = {};
      for (let i = 0; i < f.length; i += 2) o[f[i]!] = f[i + 1]!;
      return o;
    });
    const byUrl = (u: string) => dead.filter((d) => d.url === u);
    expect(byUrl(failing.url).length).toBeGreaterThan(0);
    expect(byUrl(failing.url).every((d) => d.webhook === '0' && d.reason === 'exhausted' && d.attempts === '3' && /HTTP 500 after 3 attempts/.test(d.error!))).toBe(true);
    expect(byUrl(rejecting.url).every((d) => d.webhook === '3' && d.reason === 'refused' && d.attempts === '1' && d.error === 'HTTP 400')).toBe(true);
    expect(byUrl(hanging.url).every((d) => d.webhook === '1' && d.reason === 'exhausted' && d.attempts === '3' && /timeout/.test(d.error!))).toBe(true);
    for (const u of [failing.url, hanging.url, rejecting.url]) {
      const points = byUrl(u).flatMap((d) => (JSON.parse(d.body!) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq));
      expect(points.sort((a, b) => a - b)).toEqual(range(0, 200));
      expect(byUrl(u).every((d) => /^\d+-\d+_\d+-\d+$/.test(d.webhookId!))).toBe(true);
    }
    expect(byUrl(flaky.url)).toEqual([]);
    expect(byUrl(healthy.url)).toEqual([]);
    // promptly: the healthy receiver had everything before the always-failing webhook even gave up
    // on its first batch (after 0.5 s + 1 s of backoff) — an order of events, not a wall-clock limit
    const firstGiveUp = Math.min(...(await client.xrange('connectors:isolation:deadletter', '-', '+'))
      .filter(([, f]) => f[f.indexOf('url') + 1] === failing.url && f[f.indexOf('attempts') + 1] === '3')
      .map(([id]) => Number(id.split('-')[0])));
    expect(healthy.delivered().at(-1)!.at).toBeLessThan(firstGiveUp);
    // logged with url, status and attempts, never the header values
    const errors = c.logs().filter((l) => l.msg === 'batch dead-lettered to the webhook backlog');
    expect(errors.length).toBeGreaterThan(0);
    const metrics = (await request(`${(await c.waitForLog((l) => Array.isArray(l.addresses))).addresses as string[]}`.replace(/,.*$/, '') + '/metrics')).text;
    expect(metrics).toMatch(/webhook_deliveries_total\{webhook="4",host="127\.0\.0\.1:\d+",outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/webhook_deadlettered_total\{webhook="3",host="127\.0\.0\.1:\d+",reason="refused"\} [1-9]/);
    expect(metrics).not.toMatch(/\/hook/);
  });

  it('webhook_delivery_lag_seconds: one observation per delivered entry, from its append (stream ID) to the 2xx', async () => {
    const r = await receiver();
    const { base } = await outbound('lag', [{ url: r.url }], { Datastore__StartFromLatest: 'false' });
    // entries appended "5 s ago": their IDs carry that time
    const then = Date.now() - 5000;
    for (let i = 0; i < 7; i++) {
      await client.xadd('process:updates', `${then}-${i}`, 'casdu', '1', 'ioa', String(i), 'source', 'p', 'data', JSON.stringify({ casdu: 1, ioa: i, seq: i }));
    }
    await eventually(() => (seqs(r.points()).length === 7 ? true : undefined));
    await eventually(async () => {
      const t = await (await fetch(`${base}/metrics`)).text();
      return /^webhook_delivery_lag_seconds_count\{[^}]*\} 7$/m.test(t) ? true : undefined;
    });
    const now = await (await fetch(`${base}/metrics`)).text();
    const sum = Number(/^webhook_delivery_lag_seconds_sum\{[^}]*\} (\S+)$/m.exec(now)?.[1]);
    expect(sum).toBeGreaterThanOrEqual(7 * 5);
    expect(sum).toBeLessThan(7 * 60);
    expect(Number(/^webhook_delivery_lag_seconds_bucket\{[^}]*le="2.5"[^}]*\} (\S+)$/m.exec(now)?.[1])).toBe(0);
  });

  it('StartFromLatest true skips what was there before the group existed; false replays it', async () => {
    const r1 = await receiver();
    await produce(0, 5);
    await outbound('latest', [{ url: r1.url }]);
    await produce(5, 5);
    await eventually(() => (r1.points().length >= 5 ? true : undefined));
    await new Promise((res) => setTimeout(res, 300));
    expect(seqs(r1.points())).toEqual(range(5, 10));

    const r2 = await receiver();
    await outbound('replay', [{ url: r2.url }], { Datastore__StartFromLatest: 'false' });
    await eventually(() => (r2.points().length >= 10 ? true : undefined));
    expect(seqs(r2.points())).toEqual(range(0, 10));
  });

  it('with no webhook configured, acknowledges every entry and sends nothing', async () => {
    await outbound('none', []);
    await produce(0, 50);
    await eventually(async () => {
      const groups = (await client.xinfo('GROUPS', 'process:updates')) as unknown[][];
      const g = flat(groups.find((x) => x[1] === 'rest-outbound:none')!);
      return g.pending === 0 && g['entries-read'] === 50 ? true : undefined;
    });
  });

  it('SIGTERM mid-load, then a restart: every entry delivered, none twice', async () => {
    const r = await receiver();
    const first = await outbound('graceful', [{ url: r.url }]);
    let produced = 0;
    const producing = (async () => {
      while (produced < 3000) {
        await produce(produced, 100);
        produced += 100;
        await new Promise((res) => setTimeout(res, 20));
      }
    })();
    await eventually(() => (r.points().length > 300 ? true : undefined));
    expect(await first.c.stop('SIGTERM')).toBe(0);
    await producing;
    const second = await outbound('graceful', [{ url: r.url }]);
    await eventually(() => (r.points().length >= 3000 ? true : undefined), 20000, 'all 3000 delivered');
    await new Promise((res) => setTimeout(res, 300));
    expect(seqs(r.points()).sort((a, b) => a - b)).toEqual(range(0, 3000));
    expect(second.c.logs().some((l) => l.msg === 'push pipeline started')).toBe(true);
  });

  it('SIGKILL mid-load, then a restart: nothing lost, and duplicates carry the same webhook-id', async () => {
    let slow = true;
    const r = await receiver(() => (slow ? 'hang' : { status: 200 }));
    const first = await outbound('crash', [{ url: r.url }], { Webhooks__TimeoutMilliseconds: '5000' });
    await produce(0, 500);
    await eventually(() => (r.requests.length > 0 ? true : undefined));
    await first.c.stop('SIGKILL');
    slow = false;
    await produce(500, 500);
    const hungIds = new Set(r.requests.map((q) => String(q.headers['webhook-id'])));
    await outbound('crash', [{ url: r.url }]);
    await eventually(() => (r.pointsDeduplicated().length >= 1000 ? true : undefined), 20000, 'all 1000 delivered');
    expect(seqs(r.pointsDeduplicated()).sort((a, b) => a - b)).toEqual(range(0, 1000));
    // the batches that were in flight at the crash went out again under their first webhook-id
    const redelivered = r.delivered().map((q) => String(q.headers['webhook-id']));
    for (const id of hungIds) expect(redelivered).toContain(id);
  });

  it('two processes with the same Id share the stream without duplicates', async () => {
    const r = await receiver();
    // replicas share one configuration: any port, so that the second start rewrites the same settings
    const a = await outbound('shared', [{ url: r.url }], { Datastore__ConsumerName: 'replica-a' }, { hostUrls: ['http://127.0.0.1:0'] });
    const b = await outbound('shared', [{ url: r.url }], { Datastore__ConsumerName: 'replica-b' }, { hostUrls: ['http://127.0.0.1:0'] });
    for (let i = 0; i < 20; i++) {
      await produce(i * 100, 100);
      await new Promise((res) => setTimeout(res, 10));
    }
    await eventually(() => (r.points().length >= 2000 ? true : undefined), 20000, 'all 2000 delivered');
    await new Promise((res) => setTimeout(res, 300));
    expect(seqs(r.points()).sort((a, b) => a - b)).toEqual(range(0, 2000));
    const consumers = (await client.xinfo('CONSUMERS', 'process:updates', 'rest-outbound:shared')) as unknown[][];
    expect(consumers.map((c) => c[1]).sort()).toEqual(['replica-a', 'replica-b']);
    // both kept running (the second start was no configuration change) and both read
    expect([a.c.proc.exitCode, b.c.proc.exitCode]).toEqual([null, null]);
    expect(consumers.every((c) => (c[5] as number) < 5000)).toBe(true);
  });

  it('Redis stopped and restarted mid-run: delivery resumes and nothing is lost', async () => {
    const r = await receiver();
    await outbound('outage', [{ url: r.url }]);
    await produce(0, 300);
    await eventually(() => (r.points().length >= 300 ? true : undefined));
    await redis.stop();
    await new Promise((res) => setTimeout(res, 600));
    await redis.start();
    await produce(300, 300);
    await eventually(() => (r.points().length >= 600 ? true : undefined), 20000, 'delivery resumed');
    await new Promise((res) => setTimeout(res, 300));
    expect(seqs(r.points()).sort((a, b) => a - b)).toEqual(range(0, 600));
    await eventually(async () => ((await pendingCount('outage')) === 0 ? true : undefined), 20000, 'all acknowledged');
  });

  it('pull and push run at once: GET answers while the pipeline pushes', async () => {
    const r = await receiver();
    const { base } = await outbound('both', [{ url: r.url }]);
    await client.set('process:image:casdu:1:ioa:1', JSON.stringify({ casdu: 1, ioa: 1, type: 36, value: 1, timestamp: '2026-11-21T10:00:00.000Z', source: 's' }));
    const pushing = produce(0, 2000);
    const gets = await Promise.all(Array.from({ length: 20 }, () => request(`${base}/api/datapoints?casdu=1&ioa=1`)));
    await pushing;
    expect(gets.every((g) => g.status === 200 && g.json().datapoints.length === 1)).toBe(true);
    await eventually(() => (r.points().length >= 2000 ? true : undefined));
  });

  it('an inactive connector neither reads nor acknowledges the stream', async () => {
    const r = await receiver();
    await client.xgroup('CREATE', 'process:updates', 'rest-outbound:asleep', '$', 'MKSTREAM');
    const port = await freePort();
    await client.set('connectors:asleep:config', JSON.stringify({ isActive: false, hostUrls: [`http://127.0.0.1:${port}`], webhooks: [{ url: r.url }] }));
    const c = new Connector('outbound', { Id: 'asleep', ConnectionStrings__Datastore: redis.url, ...FAST });
    h.running.push(c);
    await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
    await produce(0, 10);
    await new Promise((res) => setTimeout(res, 500));
    expect(r.requests).toEqual([]);
    const groups = (await client.xinfo('GROUPS', 'process:updates')) as unknown[][];
    const g = flat(groups.find((x) => x[1] === 'rest-outbound:asleep')!);
    expect([g.pending, g['last-delivered-id'], g.consumers]).toEqual([0, '0-0', 0]);
  });

  it('detects entries trimmed before they were read: error log with the count, and a metric', async () => {
    const r = await receiver();
    await client.xgroup('CREATE', 'process:updates', 'rest-outbound:trimmed', '$', 'MKSTREAM');
    await produce(0, 100);
    await client.xtrim('process:updates', 'MAXLEN', 40);
    const { c, base } = await outbound('trimmed', [{ url: r.url }]);
    const line = await c.waitForLog((l) => l.msg === 'entries of process:updates were trimmed before this connector read them');
    expect(line).toMatchObject({ level: 'error', lost: 60 });
    expect((await request(`${base}/metrics`)).text).toMatch(/^stream_entries_lost_total 60$/m);
    await eventually(() => (r.points().length >= 40 ? true : undefined));
    expect(seqs(r.points())).toEqual(range(60, 100));
  });
});
