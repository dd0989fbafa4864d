import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connector, eventually, runCli } from './helpers/cli';
import { FAST, pendingCount, usePushHarness } from './helpers/push';
import type { Received } from './helpers/receiver';
import { reference } from '../support/reportReference';

/**
 * Issue 48 (CONTRACT 4.8): report by exception against the built CLI, a private Redis and real
 * receivers. Entries are appended with IDs of our choosing, so that stream time (what
 * `maxSilenceSeconds` measures) is the test's, never the clock's.
 */
const h = usePushHarness();
const CLAIM = { Datastore__ClaimIdleMilliseconds: '1000', Datastore__ClaimIntervalMilliseconds: '500' };
const REPORT = { deadband: [{ absolute: 0.5 }], maxSilenceSeconds: 60 };

type Row = readonly [offsetMs: number, ioa: number, value: unknown, extra?: Record<string, unknown>];
const T0 = Date.UTC(2026, 0, 1);
let base = 0;
let seq = 0;
beforeEach(() => {
  base = Date.now();
  seq = 0;
});
/**
 * Appends the rows in one round trip (one batch, when read at once); gives their IDs and points. A
 * point's number in the test (`seq`) is carried in its `timestamp` (milliseconds after T0), which
 * 4.8 does not compare: a field of its own would differ in every entry, and every entry be reported.
 */
const add = async (rows: readonly Row[]) => {
  const pipe = h.r.client.pipeline();
  const points = rows.map(([offset, ioa, value, extra], i) => {
    const point = { casdu: 1, ioa, type: 36, value, timestamp: new Date(T0 + seq++).toISOString(), ...extra };
    pipe.xadd('process:updates', `${base + offset}-${i}`, 'data', JSON.stringify(point));
    return point;
  });
  const ids = (await pipe.exec())!.map(([err, id]) => {
    if (err !== null) throw err;
    return String(id);
  });
  return ids.map((id, i) => ({ id, point: points[i]! as Record<string, unknown> }));
};
const seqOf = (p: Record<string, unknown>) => Date.parse(p.timestamp as string) - T0;
const seqsOf = (q: Received) => (JSON.parse(q.body) as { datapoints: Array<Record<string, unknown>> }).datapoints.map(seqOf);
const sentSeqs = (r: { delivered(): Received[] }) => r.delivered().flatMap(seqsOf);
const metric = async (base: string, name: string, webhook: number) => {
  const m = new RegExp(`^${name}\\{webhook="${webhook}",[^}]*\\} ([0-9.]+)$`, 'm').exec(await (await fetch(`${base}/metrics`)).text());
  return m === null ? 0 : Number(m[1]);
};

it('a report webhook gets exactly what a stream-order reader applying 4.8 chooses, under ids of its own points; a plain one gets everything; the counters and the status say so', async () => {
  const plain = await h.receiver();
  const report = await h.receiver();
  const { base: api } = await h.outbound('rbe', [{ url: plain.url }, { url: report.url, report: REPORT }]);
  // three points, slow noisy floats, a status flip, a silence of over a minute, a string value
  const rows: Row[] = [];
  for (let i = 0; i < 40; i++) rows.push([i * 2500, 1 + (i % 3), 20 + Math.round(Math.sin(i) * 3) / 10 + (i > 30 ? 2 : 0), i === 17 ? { quality: 'bad' } : {}]);
  rows.push([200_000, 1, 'off'], [200_001, 1, 'off'], [200_002, 2, 20.1]);
  const stream = [...(await add(rows.slice(0, 20))), ...(await add(rows.slice(20)))];
  const expected = reference(REPORT, undefined, stream);
  // the fault is the rules' doing: they hold back a good share of the entries
  expect(expected.length).toBeLessThan(stream.length * 0.6);
  await eventually(() => (sentSeqs(plain).length === stream.length ? true : undefined), 20000, 'the plain webhook got everything');
  await eventually(async () => ((await pendingCount(h.r.client, 'rbe')) === 0 ? true : undefined), 20000, 'all acknowledged');
  const seqToId = new Map(stream.map((e) => [seqOf(e.point), e.id]));
  expect(sentSeqs(report).map((s) => seqToId.get(s))).toEqual(expected);
  for (const q of report.delivered()) {
    const s = seqsOf(q);
    expect(q.headers['webhook-id']).toBe(`${seqToId.get(s[0]!)}_${seqToId.get(s[s.length - 1]!)}`);
  }
  expect([await metric(api, 'webhook_points_sent_total', 0), await metric(api, 'webhook_points_sent_total', 1)]).toEqual([stream.length, expected.length]);
  expect([await metric(api, 'webhook_points_suppressed_total', 0), await metric(api, 'webhook_points_suppressed_total', 1)]).toEqual([0, stream.length - expected.length]);
  const status = ((await (await fetch(`${api}/api/webhooks`)).json()) as { webhooks: Array<Record<string, unknown>> }).webhooks;
  expect(status.map((s) => s.report)).toEqual([null, REPORT]);
  // the state: one record per point, and the settings' digest
  expect((await h.r.client.hkeys('connectors:rbe:reported:1')).sort()).toEqual(['1:1', '1:2', '1:3', '~']);
  expect(await h.r.client.exists('connectors:rbe:reported:0')).toBe(0);
});

/** A batch of one point whose re-decision against the state it left would differ: 10, 11 and 12 go out, 10.2 and 11.1 not. */
const BATCH: Row[] = [[0, 1, 10], [1, 1, 10.2], [2, 1, 11], [3, 1, 11.1], [4, 1, 12]];

/** A receiver that holds every request open until `open()`, then answers 200. */
const holding = async () => {
  let isOpen = false;
  const r = await h.receiver(() => (isOpen ? { status: 200 } : 'hang'));
  return { r, open: () => (isOpen = true) };
};

it('SIGKILL between the record and the delivery: after the restart the batch goes out under the same id with the same points, and the state goes on from it', async () => {
  const { r, open } = await holding();
  const env = { Webhooks__TimeoutMilliseconds: '60000' };
  const first = await h.outbound('rbe-kill', [{ url: r.url, report: { deadband: [{ absolute: 0.5 }] } }], env);
  const stream = await add(BATCH);
  await eventually(() => (r.requests.length > 0 ? true : undefined), 20000, 'the first request arrived (and hangs)');
  // the fault took effect: the decision is recorded with the batch, and the process is gone before any answer
  const recorded = await h.r.client.hgetall('connectors:rbe-kill:batches');
  expect(Object.entries(recorded).filter(([k]) => k.includes('#')).map(([, v]) => v)).toEqual([`${stream[0]!.id}_${stream[4]!.id} -${stream[1]!.id},${stream[3]!.id}`]);
  expect(await first.c.stop('SIGKILL')).toBeNull();
  expect(r.delivered()).toHaveLength(0);
  const sentFirst = r.requests[0]!;
  expect(seqsOf(sentFirst)).toEqual([0, 2, 4]);
  open();
  const again = new Connector('outbound', { Id: 'rbe-kill', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'rbe-kill-a', ...FAST, ...env });
  h.running.push(again);
  await eventually(() => (r.delivered().length > 0 ? true : undefined), 20000, 'the batch delivered after the restart');
  expect([r.delivered()[0]!.headers['webhook-id'], r.delivered()[0]!.body]).toEqual([sentFirst.headers['webhook-id'], sentFirst.body]);
  // nothing repeated, nothing held back: 12.3 is within 0.5 of 12, 12.6 is not
  await add([[10, 1, 12.3], [11, 1, 12.6]]);
  await eventually(() => (sentSeqs(r).includes(6) ? true : undefined), 20000, '12.6 sent');
  expect(sentSeqs(r)).toEqual([0, 2, 4, 6]);
  const bodies = new Map<string, Set<string>>();
  for (const q of r.delivered()) bodies.set(String(q.headers['webhook-id']), (bodies.get(String(q.headers['webhook-id'])) ?? new Set()).add(q.body));
  expect([...bodies.values()].filter((b) => b.size > 1)).toEqual([]);
});

it('a replica claims a batch its crashed peer recorded: it sends the recorded part under its id, and decides the next batches against the state the peer left', async () => {
  const { r, open } = await holding();
  const env = { Webhooks__TimeoutMilliseconds: '60000', ...CLAIM };
  const a = await h.outbound('rbe-claim', [{ url: r.url, report: { deadband: [{ absolute: 0.5 }] } }], env);
  await add(BATCH);
  await eventually(() => (r.requests.length > 0 ? true : undefined), 20000, 'the first request arrived (and hangs)');
  expect(await a.c.stop('SIGKILL')).toBeNull();
  const sentFirst = r.requests[0]!;
  open();
  const b = new Connector('outbound', { Id: 'rbe-claim', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'rbe-claim-b', ...FAST, ...env });
  h.running.push(b);
  // the fault took effect: replica b claimed the entries replica a had
  const claim = await b.waitForLog((l) => l.msg === 'claimed the pending entries of a consumer that stopped reading');
  expect(claim.count).toBe(BATCH.length);
  await eventually(() => (r.delivered().length > 0 ? true : undefined), 20000, 'the claimed batch delivered');
  expect([r.delivered()[0]!.headers['webhook-id'], r.delivered()[0]!.body]).toEqual([sentFirst.headers['webhook-id'], sentFirst.body]);
  await add([[10, 1, 12.3], [11, 1, 12.6]]);
  await eventually(() => (sentSeqs(r).includes(6) ? true : undefined), 20000, '12.6 sent');
  expect(sentSeqs(r)).toEqual([0, 2, 4, 6]);
});

it('a graceful restart neither repeats an unchanged point nor holds back a due one (a change, a new point, a silence measured between stream IDs)', async () => {
  const r = await h.receiver();
  const a = await h.outbound('rbe-restart', [{ url: r.url, report: REPORT }]);
  await add([[0, 1, 10], [1, 2, 5]]);
  await eventually(() => (sentSeqs(r).length === 2 ? true : undefined), 20000, 'the first values sent');
  await eventually(async () => ((await pendingCount(h.r.client, 'rbe-restart')) === 0 ? true : undefined));
  // the fault: the process ended (exit 0) and another one started
  expect(await a.c.stop('SIGTERM')).toBe(0);
  const b = new Connector('outbound', { Id: 'rbe-restart', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'rbe-restart-a', ...FAST });
  h.running.push(b);
  await b.waitForLog((l) => l.msg === 'push pipeline started');
  // 10.2: within the band (held back); 5 at 59.999 s: unchanged, not yet silent; 3:1 new; 5 at 60 s: silent long enough; 10.6: beyond the band
  await add([[100, 1, 10.2], [59_999, 2, 5], [60_000, 3, 1], [60_001, 2, 5], [60_002, 1, 10.6]]);
  await eventually(() => (sentSeqs(r).includes(6) ? true : undefined), 20000, '10.6 sent');
  await eventually(async () => ((await pendingCount(h.r.client, 'rbe-restart')) === 0 ? true : undefined));
  expect(sentSeqs(r)).toEqual([0, 1, 4, 5, 6]);
});

it('a configuration change of the report resets the state (every point\'s next entry is reported); a webhook that lost its report loses its state', async () => {
  const r = await h.receiver();
  const other = await h.receiver();
  const a = await h.outbound('rbe-config', [{ url: r.url, report: REPORT }, { url: other.url, report: REPORT }]);
  await add([[0, 1, 10], [1, 2, 5]]);
  await eventually(() => (sentSeqs(r).length === 2 && sentSeqs(other).length === 2 ? true : undefined), 20000, 'the first values sent');
  await eventually(async () => ((await pendingCount(h.r.client, 'rbe-config')) === 0 ? true : undefined));
  expect(await h.r.client.exists('connectors:rbe-config:reported:1')).toBe(1);
  await h.r.client.set('connectors:rbe-config:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks: [{ url: r.url, report: { ...REPORT, deadband: [{ absolute: 0.6 }] } }, { url: other.url }] }));
  // the change took effect: the connector stops for its restart, and the next one resets the state
  expect(await a.c.exited).toBe(0);
  const b = new Connector('outbound', { Id: 'rbe-config', ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConsumerName: 'rbe-config-a', ...FAST });
  h.running.push(b);
  const reset = await b.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('report state reset'));
  expect([reset.webhook, reset.points]).toEqual([0, 2]);
  // deleted at start, before the first batch is decided (the "started" line comes as reading begins, not after)
  await eventually(async () => ((await h.r.client.exists('connectors:rbe-config:reported:1')) === 0 ? true : undefined), 20000, 'the state of the webhook without report deleted');
  await add([[10, 1, 10], [11, 2, 5.1]]);
  await eventually(() => (sentSeqs(r).length === 4 ? true : undefined), 20000, 'both points reported again');
  expect(sentSeqs(r)).toEqual([0, 1, 2, 3]);
});

it('a report that is not valid stops the start with exit 2, naming the field; config validate says the same', async () => {
  const config = { webhooks: [{ url: 'http://127.0.0.1:9/', report: { deadband: [{ absolute: 1, percent: 2 }] } }] };
  await h.r.client.set('connectors:rbe-bad:config', JSON.stringify(config));
  const c = new Connector('outbound', { Id: 'rbe-bad', ConnectionStrings__Datastore: h.r.redis.url, ...FAST });
  h.running.push(c);
  expect(await c.exited).toBe(2);
  const message = 'webhooks[0].report.deadband[0]: give absolute or percent, not both';
  expect(c.stdout + c.stderr).toContain(message);
  const file = join(mkdtempSync(join(tmpdir(), 'rc-report-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const v = await runCli(['config', 'validate', file]);
  expect([v.code, v.stderr.includes(message)]).toEqual([2, true]);
  writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.1:9/', report: REPORT }] }));
  expect((await runCli(['config', 'validate', file])).code).toBe(0);
});

it('every later sending keeps the decision: redrive from the backlog sends the recorded part under its id; an interrogation and a resend send everything and leave the state as it is', async () => {
  let down = true;
  const r = await h.receiver(() => (down ? { status: 503 } : { status: 200 }));
  const env = { Webhooks__CircuitFailureThreshold: '1', Webhooks__ProbeIntervalSeconds: '0.3', Webhooks__MaxAttempts: '1' };
  const { base: api } = await h.outbound('rbe-later', [{ url: r.url, report: { deadband: [{ absolute: 0.5 }] } }], env);
  const stream = await add(BATCH);
  // the fault took effect: the batch is in the backlog, nothing was delivered
  await eventually(async () => ((await h.r.client.xlen('connectors:rbe-later:deadletter')) > 0 ? true : undefined), 20000, 'a backlog entry');
  expect(r.delivered()).toHaveLength(0);
  const first = r.requests[0]!;
  expect(seqsOf(first)).toEqual([0, 2, 4]);
  down = false;
  await eventually(() => (r.delivered().length > 0 ? true : undefined), 20000, 'redriven');
  expect([r.delivered()[0]!.headers['webhook-id'], r.delivered()[0]!.body]).toEqual([first.headers['webhook-id'], first.body]);
  const state = await h.r.client.hgetall('connectors:rbe-later:reported:0');
  // an interrogation: the whole image, whatever report says (12.1 is within 0.5 of 12)
  await h.r.client.set('process:image:casdu:1:ioa:1', JSON.stringify({ casdu: 1, ioa: 1, type: 36, value: 12.1, timestamp: new Date(T0 + 100).toISOString() }));
  expect((await fetch(`${api}/api/webhooks/0/interrogation`, { method: 'POST' })).status).toBe(202);
  await eventually(() => (r.delivered().some((q) => q.headers['webhook-cause'] === 'interrogation') ? true : undefined), 20000, 'the interrogation');
  expect(r.delivered().filter((q) => q.headers['webhook-cause'] === 'interrogation').flatMap(seqsOf)).toEqual([100]);
  // a resend: every entry of its range, the held-back ones too
  const since = Math.floor(Number(stream[0]!.id.split('-')[0]) / 1000) - 1;
  const resend = await runCli(['webhooks', 'resend', '--id', 'rbe-later', '--webhook', '0', '--since', String(since)], { ConnectionStrings__Datastore: h.r.redis.url });
  expect(resend.code).toBe(0);
  expect(r.delivered().filter((q) => q.headers['webhook-cause'] === 'resend').flatMap(seqsOf)).toEqual([0, 1, 2, 3, 4]);
  expect(await h.r.client.hgetall('connectors:rbe-later:reported:0')).toEqual(state);
});
