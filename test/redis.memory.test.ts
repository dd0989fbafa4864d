import { belowLimit, HOUR_MS, INITIAL, observe, parseInfo, type MemoryReading, type WatchState } from '../src/runtime/memory';
import { defaultIfEmpty, firstValueFrom } from 'rxjs';
import { isOutOfMemory } from '../src/streams/store/replies';
import { redisDeliveryState } from '../src/streams/read/deliveryState';
import { Connector, eventually } from './helpers/cli';
import { postJson, request } from './helpers/http';
import { FAST, pendingCount, usePushHarness } from './helpers/push';
import { freePort } from './helpers/redis';
import { tally } from './helpers/tally';

/**
 * Issue 20 / CONTRACT 6.6: Redis's eviction policy and evictions are read at start and every
 * interval; a policy other than noeviction is an error (or exit 2 with Datastore:RequireNoEviction);
 * writes refused with OOM answer 503 with Retry-After, turn readiness 503 while they last, and on
 * the push side keep the entries pending, logged at most once a minute per kind of write.
 */
const reading = (over: Partial<MemoryReading>): MemoryReading => ({ policy: 'noeviction', evictedKeys: 0, usedMemory: 1000, notCounted: 0, maxMemory: 0, ...over });
const run = (readings: Array<[number, Partial<MemoryReading>]>) => {
  let s: WatchState = INITIAL;
  return readings.map(([t, r]) => {
    const next = observe(s, reading(r), t);
    s = next.state;
    return next.events.map((e) => e.kind);
  });
};

describe('the memory watch, invariant by invariant (src/runtime/memory.ts)', () => {
  it('1: an unsafe policy is reported at the first reading, on a change to another unsafe one, hourly while it lasts; a return to noeviction once', () => {
    expect(run([
      [0, { policy: 'allkeys-lru' }],
      [60_000, { policy: 'allkeys-lru' }],
      [HOUR_MS - 1, { policy: 'allkeys-lru' }],
      [HOUR_MS, { policy: 'allkeys-lru' }],
      [HOUR_MS + 60_000, { policy: 'volatile-lru' }],
      [HOUR_MS + 120_000, { policy: 'noeviction' }],
      [HOUR_MS + 180_000, { policy: 'noeviction' }],
      [HOUR_MS + 240_000, { policy: 'allkeys-lru' }],
    ])).toEqual([['unsafe'], [], [], ['unsafe'], ['unsafe'], ['safe_again'], [], ['unsafe']]);
    expect(run([[0, { policy: 'noeviction' }], [60_000, { policy: 'noeviction' }]])).toEqual([[], []]);
  });

  it('2: a policy that cannot be read is unknown: reported once, never as unsafe', () => {
    expect(run([
      [0, { policy: null, unknownWhy: 'INFO memory: NOPERM' }],
      [60_000, { policy: null }],
      [HOUR_MS * 2, { policy: null }],
    ])).toEqual([['unknown'], [], []]);
  });

  it('3: evictions count from the first reading, as growth between readings; a reset starts again', () => {
    let s: WatchState = INITIAL;
    const counts = [5, 5, 12, 3, 4, null, 10].map((n, i) => {
      const next = observe(s, reading({ evictedKeys: n }), i * 60_000);
      s = next.state;
      return next.events.flatMap((e) => (e.kind === 'evicted' ? [e.count] : []));
    });
    expect(counts).toEqual([[], [], [7], [], [1], [], [6]]);
  });

  it('4: Redis takes writes again below its limit (less what it does not count), without one, or when it cannot be read', () => {
    expect(belowLimit(reading({ maxMemory: 0, usedMemory: 10 ** 9 }))).toBe(true);
    expect(belowLimit(reading({ maxMemory: 1000, usedMemory: 1000 }))).toBe(true);
    expect(belowLimit(reading({ maxMemory: 1000, usedMemory: 1001 }))).toBe(false);
    expect(belowLimit(reading({ maxMemory: 1000, usedMemory: 1500, notCounted: 600 }))).toBe(true);
    expect(belowLimit(reading({ maxMemory: null, usedMemory: null }))).toBe(true);
  });

  it('INFO text is read totally; OOM replies are told apart', () => {
    const f = parseInfo('# Memory\r\nused_memory:1024\r\nmaxmemory_policy:allkeys-lru\r\n\r\ngarbage\r\n:x\r\nk:v:w\r\n');
    expect([...f]).toEqual([['used_memory', '1024'], ['maxmemory_policy', 'allkeys-lru'], ['k', 'v:w']]);
    expect(isOutOfMemory("OOM command not allowed when used memory > 'maxmemory'.")).toBe(true);
    expect(isOutOfMemory("EXECABORT Transaction discarded because of previous errors.; OOM command not allowed when used memory > 'maxmemory'.")).toBe(true);
    expect(isOutOfMemory('ERR no such key ROOM')).toBe(false);
  });
});

const h = usePushHarness();
const MAPPING = { name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' };

afterEach(async () => {
  await h.r.client.config('SET', 'maxmemory', '0');
  await h.r.client.config('SET', 'maxmemory-policy', 'noeviction');
});

const inbound = async (id: string, env: Record<string, string> = {}, connection?: string) => {
  const port = await freePort();
  await h.r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: [MAPPING] }));
  const c = new Connector('inbound', { Id: id, ConnectionStrings__Datastore: connection ?? h.r.redis.url, Datastore__ConnectionRetrySeconds: '0.2', ...env });
  h.running.push(c);
  return { c, base: `http://127.0.0.1:${port}` };
};
const listening = (c: Connector) => c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
const metric = async (base: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec((await request(`${base}/metrics`)).text)?.[1]);

describe('the eviction policy at start and at run time', () => {
  it('allkeys-lru: an error naming the risk and the gauge at 0; a return to noeviction is logged and the gauge goes back to 1', async () => {
    await h.r.client.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const { c, base } = await inbound('lru', { Datastore__MemoryCheckIntervalMilliseconds: '200' });
    await listening(c);
    const line = await c.waitForLog((l) => String(l.msg).startsWith('Redis may evict connector data'));
    expect([line.level, line.policy, String(line.msg)]).toEqual(['error', 'allkeys-lru', expect.stringContaining('set maxmemory-policy noeviction')]);
    expect(await metric(base, 'datastore_eviction_policy_safe')).toBe(0);
    await h.r.client.config('SET', 'maxmemory-policy', 'noeviction');
    await c.waitForLog((l) => l.msg === 'Redis maxmemory_policy is noeviction again');
    expect(await metric(base, 'datastore_eviction_policy_safe')).toBe(1);
    // at most hourly while it lasts: one line for the whole run
    expect(c.logs().filter((l) => String(l.msg).startsWith('Redis may evict connector data'))).toHaveLength(1);
    expect(await c.stop()).toBe(0);
  });

  it('Datastore:RequireNoEviction=true: start-up exits 2 under any other policy, naming it, and starts under noeviction', async () => {
    await h.r.client.config('SET', 'maxmemory-policy', 'volatile-ttl');
    const refused = await inbound('strict', { Datastore__RequireNoEviction: 'true' });
    expect(await refused.c.exited).toBe(2);
    expect(refused.c.stderr).toMatch(/Datastore:RequireNoEviction is true, but Redis's maxmemory_policy is volatile-ttl/);
    await h.r.client.config('SET', 'maxmemory-policy', 'noeviction');
    const ok = await inbound('strict', { Datastore__RequireNoEviction: 'true' });
    await listening(ok.c);
    expect(await metric(ok.base, 'datastore_eviction_policy_safe')).toBe(1);
    expect(await ok.c.stop()).toBe(0);
  });

  it('INFO denied to the ACL user: the policy is unknown, logged once at info level, the gauge 1; RequireNoEviction then stops the start', async () => {
    await h.r.client.call('ACL', 'SETUSER', 'noinfo', 'on', '>pw', '~*', '&*', '+@all', '-info');
    const connection = `${h.r.redis.url},user=noinfo,password=pw`;
    const { c, base } = await inbound('noinfo', { Datastore__MemoryCheckIntervalMilliseconds: '200' }, connection);
    await listening(c);
    await new Promise((r) => setTimeout(r, 700)); // a few more readings
    const lines = c.logs().filter((l) => l.msg === 'Redis maxmemory_policy cannot be read; it is not checked');
    expect(lines).toEqual([expect.objectContaining({ level: 'info', why: expect.stringMatching(/NOPERM/) })]);
    expect(await metric(base, 'datastore_eviction_policy_safe')).toBe(1);
    expect(await c.stop()).toBe(0);
    const strict = await inbound('noinfo', { Datastore__RequireNoEviction: 'true' }, connection);
    expect(await strict.c.exited).toBe(2);
    expect(strict.c.stderr).toMatch(/maxmemory_policy cannot be read/);
  });

  it('evictions between two readings are logged as an error with their count and counted', async () => {
    const { c, base } = await inbound('evict', { Datastore__MemoryCheckIntervalMilliseconds: '300' });
    await listening(c);
    const used = Number(parseInfo(await h.r.client.info('memory')).get('used_memory'));
    await h.r.client.config('SET', 'maxmemory-policy', 'allkeys-lru');
    // a reading of the connector's after the change (it logs the policy), so before any eviction:
    // evictions are counted from a reading on, and the count starts there
    await c.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('Redis may evict connector data'));
    await h.r.client.config('SET', 'maxmemory', String(used + 2_000_000));
    const pipe = h.r.client.pipeline();
    for (let i = 0; i < 400; i++) pipe.set(`filler:${i}`, 'x'.repeat(20_000));
    await pipe.exec();
    const evictedNow = async () => Number(parseInfo(await h.r.client.info('stats')).get('evicted_keys'));
    // the fault took effect: Redis evicted keys
    expect(await evictedNow()).toBeGreaterThan(0);
    // Redis may go on evicting a little after the fillers (its own and the connector's writes): the
    // count to reach is what Redis says when the metric has caught up with it
    const evicted = await eventually(async () => {
      const n = await evictedNow();
      return (await metric(base, 'datastore_evicted_keys_total')) === n ? n : undefined;
    }, 10000, 'the evictions counted');
    // the log line reaches this process through a pipe, possibly after the metric is visible over HTTP
    const logged = () => c.logs().filter((l) => l.msg === 'Redis evicted keys since the last check: connector data may be lost');
    await eventually(() => (logged().reduce((n, l) => n + Number(l.evicted), 0) >= evicted ? true : undefined), 10000, `${evicted} evictions logged`);
    expect([logged().every((l) => l.level === 'error'), logged().reduce((n, l) => n + Number(l.evicted), 0)]).toEqual([true, evicted]);
    expect(await c.stop()).toBe(0);
  });
});

describe('out of memory (noeviction and Redis full)', () => {
  it('inbound: 503 saying so with Retry-After: 5 and nothing written; readiness 503 while it lasts, ready again without traffic once Redis has room', async () => {
    const { c, base } = await inbound('oom');
    await listening(c);
    await h.r.client.config('SET', 'maxmemory', '1');
    const refused = await postJson(`${base}/api/datapoints?topic=t`, { v: 1 });
    expect([refused.status, refused.headers['retry-after'], refused.json().detail]).toEqual([503, '5', 'the data store is out of memory (it refuses writes); nothing was written']);
    const withKey = await postJson(`${base}/api/datapoints?topic=t`, { v: 2 }, { 'Idempotency-Key': 'k1' });
    expect([withKey.status, withKey.headers['retry-after']]).toEqual([503, '5']);
    expect(await h.r.client.exists('process:image:casdu:1:ioa:1', 'process:updates', 'connectors:oom:idempotency:k1')).toBe(0);
    const ready = await request(`${base}/health/ready`);
    expect([ready.status, ready.json().reason]).toEqual([503, 'data store is out of memory: writes are refused (OOM)']);
    expect(await metric(base, 'datastore_out_of_memory_errors_total')).toBe(2);
    await h.r.client.config('SET', 'maxmemory', '0');
    // no request meanwhile: the connector's own reading brings readiness back
    await eventually(async () => ((await request(`${base}/health/ready`)).status === 200 ? true : undefined), 15000, 'ready again');
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 3 }, { 'Idempotency-Key': 'k1' })).status).toBe(200);
    expect(await c.stop()).toBe(0);
  });

  it('inbound: a write that succeeds ends the out-of-memory readiness at once', async () => {
    const { c, base } = await inbound('oom2');
    await listening(c);
    await h.r.client.config('SET', 'maxmemory', '1');
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 1 })).status).toBe(503);
    expect((await request(`${base}/health/ready`)).status).toBe(503);
    await h.r.client.config('SET', 'maxmemory', '0');
    expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 1 })).status).toBe(200);
    expect((await request(`${base}/health/ready`)).status).toBe(200);
    expect(await c.stop()).toBe(0);
  });

  it('outbound: the group cannot be read (XREADGROUP is refused too): the cause logged once a minute, nothing acknowledged; everything delivered once Redis has room', async () => {
    const rec = await h.receiver();
    const first = await h.outbound('oomout', [{ url: rec.url }]);
    await first.c.stop('SIGTERM'); // the group exists; nothing read meanwhile
    await h.produce(0, 20);
    await h.r.client.config('SET', 'maxmemory', '1');
    // the same connector again, on its stored configuration (the harness would write it: refused now)
    const c = new Connector('outbound', { Id: 'oomout', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'oomout-a', ...FAST });
    h.running.push(c);
    const base = String(((await c.waitForLog((l) => l.msg === 'outbound connector listening')).addresses as string[])[0]);
    await c.waitForLog((l) => l.msg === 'push pipeline started');
    // several refused reads (one every 0.2 s with FAST), one log line
    await eventually(async () => ((await metric(base, 'datastore_out_of_memory_errors_total').catch(() => 0)) >= 4 ? true : undefined), 15000, 'reads refused');
    const lines = c.logs().filter((l) => String(l.msg).startsWith('the data store is out of memory: cannot write the consumer group (XREADGROUP)'));
    expect(lines).toEqual([expect.objectContaining({ level: 'error', err: expect.stringMatching(/^OOM/) })]);
    expect(c.logs().filter((l) => l.msg === 'reading process:updates failed; retrying')).toEqual([]);
    expect([rec.requests.length, await pendingCount(h.r.client, 'oomout')]).toEqual([0, 0]);
    await h.r.client.config('SET', 'maxmemory', '0');
    await eventually(() => (tally(rec).seqs.size === 20 ? true : undefined), 10000, 'delivered');
    await eventually(async () => ((await pendingCount(h.r.client, 'oomout')) === 0 ? true : undefined), 10000, 'acknowledged');
  });

  it('outbound: a batch record refused for want of memory is retried, each failure reported, until Redis takes it', async () => {
    const failures: Array<[string, string]> = [];
    const state = redisDeliveryState(h.r.client, 'oomrecord', 'rest-outbound:oomrecord', 100, (write, err) => failures.push([write, (err as Error).message]));
    await h.r.client.config('SET', 'maxmemory', '1');
    const done = firstValueFrom(state.record(['1-0', '1-5']).pipe(defaultIfEmpty('done')));
    await eventually(() => (failures.length >= 3 ? true : undefined), 5000, 'retried');
    expect(await h.r.client.exists('connectors:oomrecord:batches')).toBe(0);
    await h.r.client.config('SET', 'maxmemory', '0');
    await done;
    expect(await h.r.client.hgetall('connectors:oomrecord:batches')).toEqual({ '1-0': '1-5' });
    expect(new Set(failures.map(([w, m]) => `${w}: ${isOutOfMemory(m)}`))).toEqual(new Set(['delivery record: true']));
  });

  it('outbound: a refused batch whose backlog entry cannot be written stays pending, the cause logged; written and acknowledged once Redis has room', async () => {
    const rec = await h.receiver(() => ({ status: 400, delayMs: 800 }));
    const { c } = await h.outbound('oomback', [{ url: rec.url }], { ...FAST, Webhooks__BatchMaxSize: '5' });
    await h.produce(0, 5);
    // every entry read and a request made: one, or two when a loaded machine reads the five
    // entries as two batches (then both may arrive at once)
    await eventually(async () => (rec.requests.length >= 1 && (await pendingCount(h.r.client, 'oomback')) === 5 ? true : undefined), 10000, 'the request arrived');
    await h.r.client.config('SET', 'maxmemory', '1'); // before its answer: the backlog append meets OOM
    await c.waitForLog((l) => String(l.msg).startsWith('the data store is out of memory: cannot write the backlog'), 10000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(c.logs().filter((l) => String(l.msg).startsWith('the data store is out of memory: cannot write the backlog'))).toHaveLength(1);
    expect(await pendingCount(h.r.client, 'oomback')).toBe(5);
    await h.r.client.config('SET', 'maxmemory', '0');
    await eventually(async () => ((await pendingCount(h.r.client, 'oomback')) === 0 ? true : undefined), 10000, 'in the backlog, acknowledged');
    // every point in the backlog once (a loaded machine may read the five entries as two batches)
    const bodies = (await h.r.client.xrange('connectors:oomback:deadletter', '-', '+')).map(([, f]) => f[f.indexOf('body') + 1]!);
    expect(bodies.flatMap((b) => (JSON.parse(b) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq)).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
