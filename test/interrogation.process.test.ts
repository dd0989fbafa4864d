import { Connector, eventually, runCli } from './helpers/cli';
import { FAST, pendingCount, usePushHarness } from './helpers/push';
import type { Receiver } from './helpers/receiver';
import { freePort } from './helpers/redis';
import { sign } from '../src/streams/webhook/client';
import { StreamOrderedState } from '../support/streamOrder';

/**
 * Issue 23 (CONTRACT 4.6) against the built CLI, a private Redis and real receivers: a late
 * webhook's initial interrogation and its order, the HTTP endpoint, periodic ones across a replica
 * pair, and `webhooks resend`.
 */
const h = usePushHarness();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Point { casdu: number; ioa: number; type: number; value: string }
type Body = { datapoints: Point[]; cause?: string };
const bodyOf = (r: { body: string }) => JSON.parse(r.body) as Body;

/** Writes points as the inbound connector does: the image key and a stream entry, in one MULTI. */
const write = async (points: Point[]): Promise<string[]> => {
  const m = h.r.client.multi();
  for (const p of points) {
    const json = JSON.stringify(p);
    m.set(`process:image:casdu:${p.casdu}:ioa:${p.ioa}`, json);
    m.xadd('process:updates', '*', 'casdu', String(p.casdu), 'ioa', String(p.ioa), 'source', 'test', 'data', json);
  }
  return ((await m.exec()) ?? []).filter((_, i) => i % 2 === 1).map(([, id]) => String(id));
};
/** Image keys without a stream entry (what was written before the connector's time). */
const seed = async (points: Point[]) => {
  const m = h.r.client.multi();
  for (const p of points) m.set(`process:image:casdu:${p.casdu}:ioa:${p.ioa}`, JSON.stringify(p));
  await m.exec();
};
const point = (casdu: number, ioa: number, value: string, type = 36): Point => ({ casdu, ioa, type, value });

/** What a receiver holds after applying every 2xx request in arrival order. */
const held = (r: Receiver) => {
  const state = new Map<string, string>();
  for (const q of r.delivered()) for (const p of bodyOf(q).datapoints) state.set(`${p.casdu}:${p.ioa}`, p.value);
  return state;
};
/** The image as Redis holds it, for the points a filter keeps. */
const image = async (keep: (p: Point) => boolean) => {
  const keys = await h.r.client.keys('process:image:*');
  const values = keys.length === 0 ? [] : await h.r.client.mget(...keys);
  const state = new Map<string, string>();
  for (const v of values) {
    try {
      const p = JSON.parse(v!) as Point;
      if (keep(p)) state.set(`${p.casdu}:${p.ioa}`, p.value);
    } catch {
      // not a point
    }
  }
  return state;
};
const sorted = (m: Map<string, string>) => [...m.entries()].sort();
/** An interrogation request's `k` (its webhook-id's last part). */
const kOf = (q: { headers: Record<string, unknown> }) => Number(String(q.headers['webhook-id']).split('-').at(-1));

it('a late webhook with initialState gets its filtered image first (sorted, in requests of BatchMaxSize), then the live changes; it ends holding the image; a restart does not repeat it', async () => {
  const keep = (p: Point) => p.casdu === 1 && p.ioa <= 19;
  await seed([...Array.from({ length: 25 }, (_, i) => point(1, i, `old-${i}`)), ...Array.from({ length: 5 }, (_, i) => point(2, i, `other-${i}`))]);
  await h.r.client.set('process:image:casdu:1:ioa:7', 'not json');
  const [p] = await write([point(1, 3, 'before-start')]);
  // each request takes 100 ms to answer: live changes come while the interrogation runs
  const hook = await h.receiver(() => ({ status: 200, delayMs: 100 }));
  const cfg = { url: hook.url, filter: { casdu: [1], ioa: ['0-19'] }, initialState: true };
  const { c, base } = await h.outbound('gi', [cfg], { Webhooks__BatchMaxSize: '7', Webhooks__TimeoutMilliseconds: '5000' });
  const live: string[] = [];
  for (let i = 0; i < 6; i++) {
    live.push(...(await write([point(1, 2 * i, `live-${i}`), point(2, i, `elsewhere-${i}`)])));
    await sleep(40);
  }
  await eventually(async () => ((await pendingCount(h.r.client, 'gi')) === 0 && hook.delivered().filter((q) => bodyOf(q).cause === undefined).length > 0 ? true : undefined), 20000, 'all delivered');
  await eventually(async () => (JSON.stringify(sorted(held(hook))) === JSON.stringify(sorted(await image(keep))) ? true : undefined), 20000, 'the receiver holds the image');

  const requests = hook.delivered();
  // MaxInFlight requests go at once, so they may arrive in any order: in k order here (the lane's
  // own order is the marble tests' subject)
  const gi = requests.filter((q) => String(q.headers['webhook-id']).startsWith('gi-')).sort((x, y) => kOf(x) - kOf(y));
  // P: the newest entry when it began (the one before the start, or a live one already appended)
  const P = /^gi-([0-9]+-[0-9]+)-1$/.exec(String(gi[0]!.headers['webhook-id']))![1]!;
  expect(P === p || live.includes(P)).toBe(true);
  expect(gi.map((q) => q.headers['webhook-id'])).toEqual(gi.map((_, k) => `gi-${P}-${k + 1}`));
  expect(gi.every((q) => bodyOf(q).cause === 'interrogation')).toBe(true);
  const sent = gi.flatMap((q) => bodyOf(q).datapoints);
  expect(gi.map((q) => bodyOf(q).datapoints.length).every((n) => n <= 7)).toBe(true);
  // sorted by ioa within casdu 1; the non-JSON value and the other CASDU left out
  expect(sent.map((x) => x.ioa)).toEqual([...Array(20).keys()].filter((i) => i !== 7));
  expect(sent.every((x) => x.casdu === 1)).toBe(true);
  // every live request after the last request of the interrogation; live ones carry no cause
  const firstLive = requests.findIndex((q) => !String(q.headers['webhook-id']).startsWith('gi-'));
  expect(firstLive).toBe(gi.length);
  expect(requests.slice(firstLive).every((q) => bodyOf(q).cause === undefined)).toBe(true);

  expect(await h.r.client.hget('connectors:gi:interrogated', hook.url)).toBe(P);
  const [status] = ((await (await fetch(`${base}/api/webhooks`)).json()) as { webhooks: Array<Record<string, unknown>> }).webhooks;
  expect(status).toMatchObject({ initialState: true, integrityPeriodSeconds: null, interrogation: null, lastInterrogationAt: expect.any(String) });
  expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/webhook_interrogations_total\{[^}]*cause="interrogation"[^}]*\} 1/);

  // a restart: no interrogation again, the live change delivered
  expect(await c.stop('SIGTERM')).toBe(0);
  const before = hook.requests.length;
  await h.outbound('gi', [cfg], { Webhooks__BatchMaxSize: '7' });
  await write([point(1, 1, 'after-restart')]);
  await eventually(() => (held(hook).get('1:1') === 'after-restart' ? true : undefined), 20000, 'the change after the restart');
  expect(hook.requests.slice(before).map((q) => String(q.headers['webhook-id'])).filter((id) => id.startsWith('gi-'))).toEqual([]);
});

it('a SIGTERM while the interrogation\'s thread waits for an answer: exit 0; not recorded, so the next start begins it again (a new P) and completes it', async () => {
  await seed(Array.from({ length: 30 }, (_, i) => point(5, i, `s-${i}`)));
  let hang = true;
  const hook = await h.receiver(() => (hang ? 'hang' : { status: 200 }));
  const cfg = { url: hook.url, initialState: true };
  const env = { Webhooks__BatchMaxSize: '10', Webhooks__TimeoutMilliseconds: '60000', Webhooks__StopTimeoutMilliseconds: '500' };
  const { c } = await h.outbound('gi-stop', [cfg], env);
  await eventually(() => (hook.requests.length > 0 ? true : undefined), 20000, 'the first request');
  expect(await c.stop('SIGTERM')).toBe(0);
  expect(await h.r.client.hget('connectors:gi-stop:interrogated', hook.url)).toBeNull();
  const [cut] = await write([point(6, 1, 'between')]);
  hang = false;
  await h.outbound('gi-stop', [cfg], env);
  await eventually(async () => ((await h.r.client.hget('connectors:gi-stop:interrogated', hook.url)) === cut ? true : undefined), 20000, 'recorded under the new P');
  const gi = hook.delivered().filter((q) => String(q.headers['webhook-id']).startsWith(`gi-${cut}-`)).sort((x, y) => kOf(x) - kOf(y));
  expect(gi.map((q) => q.headers['webhook-id'])).toEqual([1, 2, 3, 4].map((k) => `gi-${cut}-${k}`));
  expect(gi.flatMap((q) => bodyOf(q).datapoints.map((x) => `${x.casdu}:${x.ioa}`))).toEqual([...Array.from({ length: 30 }, (_, i) => `5:${i}`), '6:1']);
});

it('a request the receiver fails goes to the backlog with its points (its body, held by the thread, taken for it) and is redriven from there; the receiver ends holding the image', async () => {
  await seed(Array.from({ length: 30 }, (_, i) => point(7, i, `b-${i}`)));
  // request 2 of the interrogation: 503 for both of its attempts, 200 when the backlog redrives it
  const tries = new Map<string, number>();
  const hook = await h.receiver((_, r) => {
    const id = String(r.headers['webhook-id']);
    const n = (tries.get(id) ?? 0) + 1;
    tries.set(id, n);
    return /^gi-.*-2$/.test(id) && n <= 2 ? { status: 503 } : { status: 200 };
  });
  const cfg = { url: hook.url, initialState: true };
  await h.outbound('gi-backlog', [cfg], { Webhooks__BatchMaxSize: '10', Webhooks__MaxAttempts: '2', Webhooks__ProbeIntervalSeconds: '1' });
  await eventually(() => (held(hook).size === 30 ? true : undefined), 20000, 'the receiver holds the image');
  const second = hook.requests.filter((q) => /^gi-.*-2$/.test(String(q.headers['webhook-id'])));
  expect(second.map((q) => q.status)).toEqual([503, 503, 200]);
  // the redriven one is the same request: the same points, as the thread made them
  expect(new Set(second.map((q) => q.body)).size).toBe(1);
  expect(bodyOf(second[2]!).datapoints.map((x) => x.ioa)).toEqual([...Array(10).keys()].map((i) => i + 10));
  expect(bodyOf(second[2]!).cause).toBe('interrogation');
  expect([...held(hook).entries()].sort()).toEqual(Array.from({ length: 30 }, (_, i) => [`7:${i}`, `b-${i}`]).sort());
  await eventually(async () => ((await h.r.client.hget('connectors:gi-backlog:interrogated', hook.url)) !== null ? true : undefined), 20000, 'recorded');
});

it('a killed replica\'s batch, claimed after a newer batch and an interrogation, arrives last: applied as requests arrive it leaves a point behind the image, an interrogation of the unchanged stream repeats the same id, and a receiver ordering by the webhook-ids\' stream positions holds the image', async () => {
  // docs/push.md, "Holding exactly the image": what CONTRACT 4.6's "retries aside" means for a
  // receiver, step by step (the chaos run meets it by chance: a replica SIGKILLed near the end)
  let hung = false;
  const hook = await h.receiver((_, r) => (!hung && r.body.includes('"v1"') ? ((hung = true), 'hang') : { status: 200 }));
  const claimFast = { Datastore__ClaimIdleMilliseconds: '1000', Datastore__ClaimIntervalMilliseconds: '500' };
  // replica B reads e1 and its request hangs (no retry within the test: a long timeout)
  const { c: b, base } = await h.outbound('gi-claim', [{ url: hook.url }], { ...claimFast, Datastore__ConsumerName: 'gi-claim-b', Webhooks__TimeoutMilliseconds: '60000' });
  const [e1] = await write([point(8, 1, 'v1')]);
  await eventually(() => (hook.requests.length === 1 ? true : undefined), 20000, 'e1 sent, hanging');
  // e2 goes past it, then an interrogation (P = e2)
  const [e2] = await write([point(8, 1, 'v2')]);
  const ids = () => hook.delivered().map((q) => String(q.headers['webhook-id']));
  await eventually(() => (ids().includes(`${e2}_${e2}`) ? true : undefined), 20000, 'e2 delivered');
  expect((await fetch(`${base}/api/webhooks/0/interrogation`, { method: 'POST' })).status).toBe(202);
  await eventually(() => (ids().includes(`gi-${e2}-1`) ? true : undefined), 20000, 'the interrogation delivered');
  // B dies holding e1; A claims it once B has been idle a second, and sends it under its first id
  await b.stop('SIGKILL');
  const a = new Connector('outbound', { Id: 'gi-claim', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'gi-claim-a', ...FAST, ...claimFast });
  h.running.push(a);
  await eventually(() => (ids().includes(`${e1}_${e1}`) ? true : undefined), 20000, 'e1 claimed and delivered');
  // (its log line may reach this process after the request reaches the receiver)
  await a.waitForLog((l) => l.msg === 'claimed the pending entries of a consumer that stopped reading' && l.from === 'gi-claim-b');
  // the stream has not moved: another interrogation reads the same P, so the same id and content
  const aBase = String(((await a.waitForLog((l) => l.msg === 'outbound connector listening')).addresses as string[])[0]);
  expect((await fetch(`${aBase}/api/webhooks/0/interrogation`, { method: 'POST' })).status).toBe(202);
  await eventually(() => (ids().filter((id) => id === `gi-${e2}-1`).length === 2 ? true : undefined), 20000, 'the second interrogation delivered');
  expect(ids()).toEqual([`${e2}_${e2}`, `gi-${e2}-1`, `${e1}_${e1}`, `gi-${e2}-1`]);
  expect(hook.requests[0]!.headers['webhook-id']).toBe(`${e1}_${e1}`);
  const gi = hook.delivered().filter((q) => q.headers['webhook-id'] === `gi-${e2}-1`);
  expect(gi[0]!.body).toBe(gi[1]!.body);

  const want = await image((x) => x.casdu === 8);
  expect(want.get('8:1')).toBe('v2');
  // de-duplicated by webhook-id: applied as they arrive, e1's value is held; in stream order, the image
  const firstCopies = hook.delivered().filter((q, i, all) => all.findIndex((o) => o.headers['webhook-id'] === q.headers['webhook-id']) === i);
  const arrived = new Map<string, string>();
  for (const q of firstCopies) for (const x of bodyOf(q).datapoints) arrived.set(`${x.casdu}:${x.ioa}`, x.value);
  const ordered = new StreamOrderedState();
  for (const q of firstCopies) ordered.apply(String(q.headers['webhook-id']), bodyOf(q).datapoints);
  expect([arrived.get('8:1'), ordered.value('8:1')]).toEqual(['v1', 'v2']);
});

it('POST /api/webhooks/{index}/interrogation: 202 queued, 409 while it runs, 404 for an index not configured, 401 without a key; the status shows it running, then done', async () => {
  await seed(Array.from({ length: 200 }, (_, i) => point(3, i, `v-${i}`)));
  const hook = await h.receiver(() => ({ status: 200, delayMs: 30 }));
  const secret = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0';
  const { base } = await h.outbound('gi-http', [{ url: hook.url, secret }], { Webhooks__BatchMaxSize: '10', Authentication__ApiKeys: 'ops=k1' });
  const post = (path: string, key?: string) => fetch(`${base}${path}`, { method: 'POST', headers: key === undefined ? {} : { 'X-Api-Key': key } });
  expect((await post('/api/webhooks/0/interrogation')).status).toBe(401);
  const first = await post('/api/webhooks/0/interrogation', 'k1');
  expect([first.status, await first.json()]).toEqual([202, { webhook: 0, state: 'queued' }]);
  const again = await post('/api/webhooks/0/interrogation', 'k1');
  expect([again.status, again.headers.get('content-type')]).toEqual([409, 'application/problem+json; charset=utf-8']);
  for (const path of ['/api/webhooks/1/interrogation', '/api/webhooks/x/interrogation']) {
    const r = await post(path, 'k1');
    expect([r.status, ((await r.json()) as { status: number }).status]).toEqual([404, 404]);
  }
  const running = await eventually(async () => {
    const [s] = ((await (await fetch(`${base}/api/webhooks`, { headers: { 'X-Api-Key': 'k1' } })).json()) as { webhooks: Array<{ interrogation: { cause: string; startedAt: string; sent: number } | null }> }).webhooks;
    return s!.interrogation !== null && s!.interrogation.sent > 0 ? s!.interrogation : undefined;
  }, 20000, 'the status shows it running');
  expect(running).toMatchObject({ cause: 'interrogation', startedAt: expect.any(String) });
  await eventually(() => (hook.delivered().length === 20 ? true : undefined), 20000, 'twenty requests');
  await eventually(async () => {
    const [s] = ((await (await fetch(`${base}/api/webhooks`, { headers: { 'X-Api-Key': 'k1' } })).json()) as { webhooks: Array<{ interrogation: unknown; lastInterrogationAt: unknown }> }).webhooks;
    return s!.interrogation === null && s!.lastInterrogationAt !== null ? true : undefined;
  }, 20000, 'the status shows it done');
  // in k order (MaxInFlight requests go at once and may arrive in any order)
  const byK = [...hook.delivered()].sort((x, y) => kOf(x) - kOf(y));
  expect(byK.flatMap((q) => bodyOf(q).datapoints.map((x) => x.ioa))).toEqual([...Array(200).keys()]);
  // an empty stream: P is 0-0; each request signed as any batch is (CONTRACT 4.6, 6.4)
  expect(byK.map((q) => q.headers['webhook-id'])).toEqual(Array.from({ length: 20 }, (_, k) => `gi-0-0-${k + 1}`));
  for (const q of hook.delivered()) {
    expect(q.headers['webhook-signature']).toBe(sign(secret, String(q.headers['webhook-id']), Number(q.headers['webhook-timestamp']), q.body));
  }
  // done: another may be asked for
  expect((await post('/api/webhooks/0/interrogation', 'k1')).status).toBe(202);
});

it('initialState with a replica pair started together: one of them performs it, once; the other holds its live batches until it is recorded', async () => {
  await seed(Array.from({ length: 60 }, (_, i) => point(5, i, `v-${i}`)));
  const hook = await h.receiver(() => ({ status: 200, delayMs: 50 }));
  const cfg = [{ url: hook.url, initialState: true }];
  await h.r.client.set('connectors:gi-two:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks: cfg }));
  const env = { Id: 'gi-two', ConnectionStrings__Datastore: h.r.redis.url, ...FAST, Webhooks__BatchMaxSize: '10', Webhooks__TimeoutMilliseconds: '5000' };
  const [a, b] = ['gi-two-a', 'gi-two-b'].map((consumer) => new Connector('outbound', { ...env, Datastore__ConsumerName: consumer }));
  h.running.push(a!, b!);
  await Promise.all([a!, b!].map((c) => c.waitForLog((l) => l.msg === 'push pipeline started')));
  const live = await write([point(5, 1, 'live-1'), point(5, 2, 'live-2')]);
  // the live batch itself, by its webhook-id (its values alone are no sign: an interrogation that
  // read the image after the write carries them too, and may be seen before the live batch is read)
  await eventually(async () => ((await pendingCount(h.r.client, 'gi-two')) === 0 && hook.delivered().some((q) => q.headers['webhook-id'] === `${live[0]}_${live[1]}`) ? true : undefined), 20000, 'the live batch delivered');
  const ids = hook.delivered().map((q) => String(q.headers['webhook-id']));
  const gi = ids.filter((id) => id.startsWith('gi-'));
  // one series of six requests, each id once, and the live batch after all of them
  expect(new Set(gi.map((id) => id.replace(/-[0-9]+$/, ''))).size).toBe(1);
  expect(gi.length).toBe(6);
  expect(ids.indexOf(`${live[0]}_${live[1]}`)).toBeGreaterThan(ids.lastIndexOf(gi[5]!));
  expect(held(hook)).toEqual(await image(() => true));
  const performed = () => [a!, b!].map((c) => c.logs().filter((l) => l.msg === 'interrogation completed').length).sort();
  await eventually(() => (performed()[1] === 1 ? true : undefined), 10000, 'the log line of the one that performed it');
  expect(performed()).toEqual([0, 1]);
});

it('integrityPeriodSeconds with a replica pair: one of them performs each periodic interrogation, one period after the previous one ended', async () => {
  await seed(Array.from({ length: 3 }, (_, i) => point(4, i, `v-${i}`)));
  const hook = await h.receiver();
  const cfg = [{ url: hook.url, integrityPeriodSeconds: 10 }];
  // both replicas read one configuration: each listens on a port of its own choosing
  const { c: a } = await h.outbound('gi-pi', cfg, {}, { hostUrls: ['http://127.0.0.1:0'] });
  const b = new Connector('outbound', { Id: 'gi-pi', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'gi-pi-b', ...FAST });
  h.running.push(b);
  await b.waitForLog((l) => l.msg === 'push pipeline started');
  // two periods and a little more
  const periodic = () => hook.delivered().filter((q) => bodyOf(q).cause === 'periodic');
  await eventually(() => (periodic().length >= 2 ? true : undefined), 40000, 'two periodic interrogations');
  const started = (c: Connector) => c.logs().filter((l) => l.msg === 'interrogation started' && l.cause === 'periodic').map((l) => Number(l.time));
  const completed = (c: Connector) => c.logs().filter((l) => l.msg === 'interrogation completed' && l.cause === 'periodic').map((l) => Number(l.time));
  // the log lines of what the receiver already got (a line may reach this process after its request)
  const n = periodic().length;
  await eventually(() => ([...started(a), ...started(b)].length >= n && [...completed(a), ...completed(b)].length >= n ? true : undefined), 10000, 'the log lines');
  const starts = [...started(a), ...started(b)].sort().slice(0, n);
  const ends = [...completed(a), ...completed(b)].sort().slice(0, n);
  // each one performed once (one request of 3 points each), never two at once, the next a period after the previous ended
  expect(starts.length).toBe(n);
  expect(periodic().every((q) => bodyOf(q).datapoints.length === 3 && /^pi-[0-9]+-[0-9]+-1$/.test(String(q.headers['webhook-id'])))).toBe(true);
  // (a log line's time may trail what it reports by a little on a loaded machine: a second's margin,
  // far from the 0 s of two replicas performing one period)
  for (let i = 1; i < starts.length; i++) expect(starts[i]! - ends[i - 1]!).toBeGreaterThanOrEqual(9000);
  for (let i = 1; i < starts.length; i++) expect(starts[i]!).toBeGreaterThan(ends[i - 1]!);
  expect(starts.length).toBeGreaterThanOrEqual(2);
});

describe('webhooks resend', () => {
  it('sends the range\'s matching entries again in stream order, as a new delivery; says so when the stream no longer holds its start', async () => {
    const hook = await h.receiver();
    await h.r.client.set('connectors:rs:config', JSON.stringify({ webhooks: [{ url: hook.url, filter: { casdu: [1] }, secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0' }] }));
    const early = await write([point(1, 1, 'a'), point(2, 1, 'b')]);
    await sleep(20);
    const since = Date.now();
    await sleep(5);
    const ids = await write(Array.from({ length: 12 }, (_, i) => point(i % 2 === 0 ? 1 : 2, 100 + i, `r-${i}`)));
    await sleep(5);
    const until = Date.now();
    await sleep(20);
    await write([point(1, 999, 'late')]);
    const r = await runCli(['webhooks', 'resend', '--id', 'rs', '--webhook', '0', '--since', String(since / 1000), '--until', String(until / 1000)], {
      ConnectionStrings__Datastore: h.r.redis.url, Webhooks__BatchMaxSize: '4',
    });
    expect([r.code, r.stdout.trim()]).toEqual([0, 'sent 6 points in 2 requests, failed 0']);
    const matching = ids.filter((_, i) => i % 2 === 0);
    expect(hook.requests.map((q) => q.headers['webhook-id'])).toEqual([`r-${matching[0]}_${matching[3]}`, `r-${matching[4]}_${matching[5]}`]);
    expect(hook.requests.flatMap((q) => bodyOf(q).datapoints.map((x) => x.value))).toEqual(['r-0', 'r-2', 'r-4', 'r-6', 'r-8', 'r-10']);
    expect(hook.requests.every((q) => bodyOf(q).cause === 'resend' && String(q.headers['webhook-signature']).startsWith('v1,'))).toBe(true);
    // the stream trimmed below the range's start: said, and the rest sent
    await h.r.client.xtrim('process:updates', 'MINID', ids[0]!);
    const trimmed = await runCli(['webhooks', 'resend', '--id', 'rs', '--webhook', '0', '--since', String((since - 60_000) / 1000), '--until', String(until / 1000)], { ConnectionStrings__Datastore: h.r.redis.url });
    expect(trimmed.code).toBe(0);
    expect(trimmed.stdout).toContain(`the stream holds updates from ${new Date(Number(ids[0]!.split('-')[0])).toISOString()} on`);
    expect(trimmed.stdout).toContain('sent 6 points in 1 requests, failed 0');
    void early;
  });

  it('a receiver that is down: each request tried MaxAttempts times, counted as failed, exit 1; bad arguments exit 2 before Redis is asked', async () => {
    const hook = await h.receiver(() => ({ status: 503 }));
    await h.r.client.set('connectors:rs2:config', JSON.stringify({ webhooks: [{ url: hook.url }] }));
    const since = Date.now() - 1000;
    await write([point(1, 1, 'x'), point(1, 2, 'y')]);
    const r = await runCli(['webhooks', 'resend', '--id', 'rs2', '--webhook', '0', '--since', String(since / 1000)], {
      ConnectionStrings__Datastore: h.r.redis.url, Webhooks__MaxAttempts: '2',
    });
    expect(r.code).toBe(1);
    expect(r.stdout.trim().split('\n').pop()).toBe('sent 0 points in 0 requests, failed 1');
    expect(r.stdout).toMatch(/^r-[0-9-]+_[0-9-]+: failed: HTTP 503 after 2 attempts$/m);
    expect(hook.requests).toHaveLength(2);
    // a Redis nobody listens on: the arguments are checked first
    const nowhere = { ConnectionStrings__Datastore: `127.0.0.1:${await freePort()}` };
    for (const [args, message] of [
      [['--webhook', '0', '--since', '0'], '--id ID is required'],
      [['--id', 'x', '--since', '0'], '--webhook N is required'],
      [['--id', 'x', '--webhook', 'one', '--since', '0'], "--webhook takes a webhook index, got 'one'"],
      [['--id', 'x', '--webhook', '0'], '--since T is required'],
      [['--id', 'x', '--webhook', '0', '--since', 'yesterday'], "--since takes ISO 8601 or Unix seconds, got 'yesterday'"],
      [['--id', 'x', '--webhook', '0', '--since', '100', '--until', '50'], '--until (50) is before --since (100)'],
    ] as const) {
      const bad = await runCli(['webhooks', 'resend', ...args], nowhere);
      expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, message]);
    }
    // an index that is not configured: said after reading the configuration, exit 1
    const none = await runCli(['webhooks', 'resend', '--id', 'rs2', '--webhook', '3', '--since', '0'], { ConnectionStrings__Datastore: h.r.redis.url });
    expect([none.code, none.stderr.trim()]).toEqual([1, 'rest-connector: webhook 3 is not configured for rs2 (it has 1)']);
  });
});
