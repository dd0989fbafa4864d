import type { Redis } from 'ioredis';
import { eventually, runCli } from './helpers/cli';
import { request } from './helpers/http';
import { pendingCount, usePushHarness } from './helpers/push';
import type { TestRedis } from './helpers/redis';
import { missing, tally } from './helpers/tally';

/**
 * Issue 10 / CONTRACT 4.4 against the built CLI, a real Redis and real receivers: a webhook's
 * outage heals by itself, in order; the cap drops and counts; a changed configuration never sends
 * a backlog elsewhere; replicas redrive each entry once; a crash during redrive repeats at most a
 * batch under its webhook-id; and the operator commands and GET /api/webhooks.
 */
let redis: TestRedis;
let client: Redis;
const h = usePushHarness();
beforeAll(() => {
  ({ redis, client } = h.r);
});

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
/** Fast outage settings: no retries, the circuit opens at the first failure, a probe every 300 ms. */
const OUTAGE = { Webhooks__MaxAttempts: '1', Webhooks__CircuitFailureThreshold: '1', Webhooks__ProbeIntervalSeconds: '0.3' };
const backlogLen = async (id: string) => (await client.exists(`connectors:${id}:deadletter`)) ? client.xlen(`connectors:${id}:deadletter`) : 0;

/** Appends `count` entries over `ms`, in 20 steps. */
const steady = async (from: number, count: number, ms: number) => {
  const step = Math.ceil(count / 20);
  for (let i = 0; i < count; i += step) {
    await h.produce(from + i, Math.min(step, count - i));
    await sleep(ms / 20);
  }
};

/** The points in the order a de-duplicating receiver first saw them. */
const firstSeenOrder = (rec: Awaited<ReturnType<typeof h.receiver>>) => {
  const seen = new Set<string>();
  return rec.delivered().filter((q) => !seen.has(String(q.headers['webhook-id'])) && seen.add(String(q.headers['webhook-id'])))
    .flatMap((q) => (JSON.parse(q.body) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq));
};

it('a webhook down for 20 s under steady load gets every point afterwards, in stream order, under the original webhook-ids; the healthy one is never held back', async () => {
  let down = false;
  const healthy = await h.receiver();
  const outage = await h.receiver(() => (down ? { status: 503 } : { status: 200 }));
  // one request at a time, so that the receiver sees the order they go out in (with 4 in flight, two
  // sent together can be handled swapped on a loaded machine: a CI run saw it)
  const { c, base } = await h.outbound('heal', [{ url: healthy.url }, { url: outage.url }], { ...OUTAGE, Webhooks__MaxInFlight: '1' });
  await steady(0, 100, 500);
  await eventually(() => (tally(outage).seqs.size === 100 ? true : undefined));
  down = true;
  await steady(100, 2000, 20000);
  // while it is down: the healthy webhook has everything produced so far, the other's circuit is open
  await eventually(() => (tally(healthy).seqs.size === 2100 ? true : undefined), 10000, 'healthy not held back');
  const status = (await request(`${base}/api/webhooks`)).json() as { webhooks: Array<Record<string, unknown>> };
  expect(status.webhooks.map((w) => [w.index, w.state])).toEqual([[0, 'healthy'], [1, 'open']]);
  expect(status.webhooks[1]).toMatchObject({ host: new URL(outage.url).host, consecutiveFailures: expect.any(Number), lastError: 'HTTP 503', backlog: expect.any(Number) });
  expect(JSON.stringify(status)).not.toContain('/hook');
  expect((await request(`${base}/metrics`)).text).toMatch(/^webhook_state\{webhook="1",host="[^"]+",state="open"\} 1$/m);
  expect(await pendingCount(client, 'heal')).toBeLessThan(2100); // in the backlog counts as having it: acknowledged
  down = false;
  await steady(2100, 100, 500);
  await eventually(() => (tally(outage).seqs.size === 2200 ? true : undefined), 20000, 'the outage healed');
  await eventually(async () => ((await backlogLen('heal')) === 0 ? true : undefined), 10000, 'backlog emptied');
  const t = tally(outage);
  expect([missing(t, 0, 2200), t.duplicatesAfterDedup, t.idsWithTwoContents]).toEqual([[], 0, 0]);
  expect(firstSeenOrder(outage)).toEqual(Array.from({ length: 2200 }, (_, i) => i)); // stream order, every point once
  // the same batches as the healthy webhook got: same ids, same bodies
  for (const [id, body] of t.bodies) expect(tally(healthy).bodies.get(id)).toBe(body);
  expect(c.logs().some((l) => l.msg === 'webhook state changed' && l.to === 'open')).toBe(true);
  expect(c.logs().some((l) => l.msg === 'webhook state changed' && l.to === 'healthy')).toBe(true);
  // healthy again: no error stands; when the last failure was is still shown
  const healed = (await request(`${base}/api/webhooks`)).json() as { webhooks: Array<Record<string, unknown>> };
  expect(healed.webhooks[1]).toMatchObject({ state: 'healthy', backlog: 0, lastError: null, lastFailureAt: expect.stringMatching(/^\d{4}-/) });
});

it('the cap drops the oldest backlog entries, and every dropped batch is logged and counted', async () => {
  let down = true;
  const outage = await h.receiver(() => (down ? { status: 503 } : { status: 200 }));
  const { c, base } = await h.outbound('cap', [{ url: outage.url }], { ...OUTAGE, Webhooks__DeadLetterMaxLength: '50', Webhooks__BatchMaxSize: '1' });
  const dropped = async () => Number(/^webhook_deadletter_dropped_total\{webhook="0",host="[^"]+"\} (\d+)$/m.exec((await request(`${base}/metrics`)).text)?.[1] ?? 0);
  await h.produce(0, 400); // 400 one-point batches into a backlog capped at ~50 (MAXLEN ~ trims whole nodes)
  await eventually(async () => ((await backlogLen('cap')) > 0 && (await pendingCount(client, 'cap')) === 0 ? true : undefined), 20000, 'all in the backlog');
  await eventually(async () => ((await dropped()) > 0 ? true : undefined), 10000, 'drops counted by a probe scan');
  down = false;
  await eventually(async () => ((await backlogLen('cap')) === 0 ? true : undefined), 20000, 'backlog redriven');
  const lost = missing(tally(outage), 0, 400).length;
  expect(lost).toBeGreaterThan(0);
  // every batch the receiver never got was reported as dropped (each batch is one point), once
  expect(await dropped()).toBe(lost);
  expect(c.logs().filter((l) => l.msg === 'a backlog batch was trimmed by Webhooks:DeadLetterMaxLength before it was delivered')).toHaveLength(lost);
});

it('issue 20 case 6: with AutoRedrive=false the status and gauge show what waits in the backlog, also what a previous run left', async () => {
  const rec = await h.receiver(() => ({ status: 503 }));
  const env = { Webhooks__MaxAttempts: '1', Webhooks__CircuitFailureThreshold: '100', Webhooks__AutoRedrive: 'false', Webhooks__BatchMaxSize: '1' };
  const first = await h.outbound('noredrive', [{ url: rec.url }], env);
  const backlogOf = async (base: string) => ((await request(`${base}/api/webhooks`)).json() as { webhooks: Array<{ backlog: number }> }).webhooks[0]!.backlog;
  const gaugeOf = async (base: string) => Number(/^webhook_backlog_batches\{webhook="0",host="[^"]+"\} (\d+)$/m.exec((await request(`${base}/metrics`)).text)?.[1]);
  await h.produce(0, 1);
  await eventually(async () => ((await backlogLen('noredrive')) === 1 && (await pendingCount(client, 'noredrive')) === 0 ? true : undefined), 10000, 'one batch in the backlog');
  expect([await backlogOf(first.base), await gaugeOf(first.base)]).toEqual([1, 1]);
  await first.c.stop('SIGTERM');
  const second = await h.outbound('noredrive', [{ url: rec.url }], env);
  await eventually(async () => ((await backlogOf(second.base)) === 1 ? true : undefined), 10000, 'the backlog a previous run left');
  expect(await gaugeOf(second.base)).toBe(1);
});

it('issue 20 case 7: refused entries trimmed by the cap before anyone replayed them are counted and logged as dropped', async () => {
  const rec = await h.receiver(() => ({ status: 400 })); // not retried: every batch is refused
  const { c, base } = await h.outbound('refusedcap', [{ url: rec.url }], { ...OUTAGE, Webhooks__CircuitFailureThreshold: '100000', Webhooks__DeadLetterMaxLength: '50', Webhooks__BatchMaxSize: '1' });
  await h.produce(0, 400);
  await eventually(async () => ((await pendingCount(client, 'refusedcap')) === 0 && rec.requests.length >= 400 ? true : undefined), 20000, 'all refused and acknowledged');
  await eventually(async () => ((await backlogLen('refusedcap')) < 400 ? true : undefined), 5000, 'the cap trimmed');
  const kept = await backlogLen('refusedcap');
  const dropped = async () => Number(/^webhook_deadletter_dropped_total\{webhook="0",host="[^"]+"\} (\d+)$/m.exec((await request(`${base}/metrics`)).text)?.[1] ?? 0);
  // every refused batch not in the backlog any more was trimmed before anyone replayed it: each counted and logged once
  await eventually(async () => ((await dropped()) === 400 - kept ? true : undefined), 15000, `${400 - kept} drops counted`);
  const logged = () => c.logs().filter((l) => l.msg === 'a backlog batch was trimmed by Webhooks:DeadLetterMaxLength before it was delivered').length;
  await eventually(() => (logged() >= 400 - kept ? true : undefined), 5000, 'every drop logged'); // the log lines arrive through a pipe
  expect(logged()).toBe(400 - kept);
});

it('a configuration change that replaces a webhook leaves its backlog for the operator: not redriven elsewhere; list, replay and purge', async () => {
  const a = await h.receiver(() => ({ status: 503 }));
  const b = await h.receiver();
  const first = await h.outbound('moved', [{ url: a.url }], OUTAGE);
  await h.produce(0, 30);
  await eventually(async () => ((await backlogLen('moved')) > 0 && (await pendingCount(client, 'moved')) === 0 ? true : undefined));
  await first.c.stop('SIGTERM');
  await h.outbound('moved', [{ url: b.url }], OUTAGE); // index 0 is now another URL
  await h.produce(30, 10);
  await eventually(() => (tally(b).seqs.size === 10 ? true : undefined));
  await sleep(1000);
  expect(missing(tally(b), 30, 40)).toEqual([]);
  expect([...tally(b).seqs].filter((s) => s < 30)).toEqual([]); // a's backlog never sent to b
  const env = { ConnectionStrings__Datastore: redis.url };
  const list = await runCli(['deadletter', 'list', '--id', 'moved', '--webhook', '0'], env);
  expect(list.code).toBe(0);
  const lines = list.stdout.trim().split('\n');
  expect(lines[lines.length - 1]).toMatch(/^\d+ entries$/);
  expect(lines[0]).toMatch(new RegExp(`^\\d+-\\d+  webhook 0  (exhausted|circuit)\\s+attempts \\d+  \\d+-\\d+_\\d+-\\d+  \\d+ points  ${a.url.replace(/[/.]/g, '\\$&')}  `));
  const json = (await runCli(['deadletter', 'list', '--id', 'moved', '--json'], env)).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(json.length).toBe(lines.length - 1);
  expect(Object.keys(json[0]!).sort()).toEqual(['attempts', 'body', 'error', 'id', 'reason', 'url', 'webhook', 'webhookId']);
  const points = json.flatMap((e) => (JSON.parse(String(e.body)) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq));
  expect(points.sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  // purge before a time that is earlier than every entry: nothing; replay to the current URL of webhook 0 (b)
  expect((await runCli(['deadletter', 'purge', '--id', 'moved', '--before', '2000-01-01T00:00:00Z'], env)).stdout.trim()).toBe('purged 0');
  const replay = await runCli(['deadletter', 'replay', '--id', 'moved', '--webhook', '0'], env);
  expect([replay.code, replay.stdout.trim().split('\n').pop()]).toEqual([0, `delivered ${json.length}, failed 0`]);
  expect(missing(tally(b), 0, 40)).toEqual([]);
  expect(await backlogLen('moved')).toBe(0);
  // replay to a webhook that is down: failed, exit 1, entries stay; purge removes them
  await client.set('connectors:moved:config', JSON.stringify({ webhooks: [{ url: a.url }] }));
  await client.xadd('connectors:moved:deadletter', '*', 'webhook', '0', 'url', a.url, 'webhookId', '1-0_1-0', 'error', 'x', 'attempts', '1', 'body', '{"datapoints":[{"seq":99}]}', 'reason', 'refused');
  const failing = await runCli(['deadletter', 'replay', '--id', 'moved'], env);
  expect([failing.code, failing.stdout.trim().split('\n').pop()]).toEqual([1, 'delivered 0, failed 1']);
  expect((await runCli(['deadletter', 'purge', '--id', 'moved', '--webhook', '0'], env)).stdout.trim()).toBe('purged 1');
  expect((await runCli(['deadletter', 'list', '--id', 'moved', '--since', 'yesterday'], env)).code).toBe(2);
});

it('two replicas redrive each backlog entry once', async () => {
  let down = true;
  const outage = await h.receiver(() => (down ? { status: 503 } : { status: 200 }));
  const shared = { hostUrls: ['http://127.0.0.1:0'] };
  await h.outbound('pair', [{ url: outage.url }], { ...OUTAGE, Datastore__ConsumerName: 'one' }, shared);
  await h.outbound('pair', [{ url: outage.url }], { ...OUTAGE, Datastore__ConsumerName: 'two' }, shared);
  await steady(0, 400, 1000);
  await eventually(async () => ((await backlogLen('pair')) > 0 && (await pendingCount(client, 'pair')) === 0 ? true : undefined));
  down = false;
  await eventually(() => (tally(outage).seqs.size === 400 ? true : undefined), 20000, 'all redriven');
  await eventually(async () => ((await backlogLen('pair')) === 0 ? true : undefined));
  await sleep(500);
  const t = tally(outage);
  expect([t.rawDuplicates, t.duplicatesAfterDedup, t.idsWithTwoContents]).toEqual([0, 0, 0]);
});

it('a SIGKILL during redrive loses nothing and repeats at most batches under their webhook-id', async () => {
  let down = true;
  const outage = await h.receiver(() => (down ? { status: 503 } : { status: 200, delayMs: 20 }));
  const env = { ...OUTAGE, Webhooks__BatchMaxSize: '10', Webhooks__MaxInFlight: '2' };
  const first = await h.outbound('killed', [{ url: outage.url }], env);
  await h.produce(0, 1000);
  await eventually(async () => ((await backlogLen('killed')) > 0 && (await pendingCount(client, 'killed')) === 0 ? true : undefined));
  down = false;
  await eventually(() => (tally(outage).seqs.size > 100 ? true : undefined), 20000, 'redrive under way');
  await first.c.stop('SIGKILL');
  expect(tally(outage).seqs.size).toBeLessThan(1000);
  await h.outbound('killed', [{ url: outage.url }], env);
  await eventually(() => (tally(outage).seqs.size === 1000 ? true : undefined), 20000, 'redrive finished after the restart');
  await eventually(async () => ((await backlogLen('killed')) === 0 ? true : undefined));
  const t = tally(outage);
  expect([t.duplicatesAfterDedup, t.idsWithTwoContents]).toEqual([0, 0]);
});

it('a start with an empty backlog shows every webhook healthy throughout: no redriving and back while the first scan looks (CONTRACT 4.4)', async () => {
  const rec = await h.receiver();
  const { c } = await h.outbound('start', [{ url: rec.url }, { url: rec.url }]);
  await h.produce(0, 10);
  await eventually(() => (tally(rec).seqs.size === 10 ? true : undefined));
  // the first scan of each backlog happened (new batches went live after it)
  expect(await backlogLen('start')).toBe(0);
  expect(c.logs().filter((l) => l.msg === 'webhook state changed').map((l) => [l.webhook, l.from, l.to])).toEqual([]);
});
