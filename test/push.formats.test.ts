import { gunzipSync } from 'node:zlib';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, runCli } from './helpers/cli';
import { pendingCount, range, usePushHarness } from './helpers/push';
import type { Received } from './helpers/receiver';
import { after, streamId } from '../support/streamOrder';

/**
 * CONTRACT 4.7 through the built CLI, with real receivers: each webhook gets the body its format
 * says, signed before compression; a format that cannot render a batch dead-letters that batch for
 * that webhook alone.
 */
const { receiver, outbound, produce, r } = usePushHarness();
const { Webhook } = require('standardwebhooks') as typeof import('standardwebhooks');

const SECRET = `whsec_${Buffer.from('a signing key of thirty-two bytes').toString('base64')}`;
const signed = (req: Received, body: string) => {
  const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
  // the library parses the payload as JSON once the signature holds: a SyntaxError means it held
  try {
    new Webhook(SECRET).verify(body, headers);
    return true;
  } catch (err) {
    if (err instanceof SyntaxError) return true;
    return false;
  }
};
/**
 * One request per webhook-id, in stream order of its first entry: CONTRACT 4.2 promises first
 * attempts in stream order, not their arrival (up to MaxInFlight requests are open at once, and a
 * busy machine may answer a later one first).
 */
const byId = (reqs: Received[]) => {
  const first = (q: Received) => streamId(String(q.headers['webhook-id']).split('_')[0]!);
  return [...new Map(reqs.map((q) => [String(q.headers['webhook-id']), q])).values()].sort((a, b) => (after(first(a), first(b)) ? 1 : after(first(b), first(a)) ? -1 : 0));
};

describe('formats (CONTRACT 4.7)', () => {
  it('ndjson, jsonata (json and ndjson output) and the default body side by side; a failing expression dead-letters its batches alone', async () => {
    const plain = await receiver();
    const nd = await receiver();
    const shaped = await receiver();
    const bulk = await receiver();
    const failing = await receiver();
    const none = await receiver();
    const { base } = await outbound('formats', [
      { url: plain.url },
      { url: nd.url, format: { type: 'ndjson' }, secret: SECRET },
      { url: shaped.url, format: { type: 'jsonata', expression: '{ "records": datapoints.{ "tag": casdu & "." & ioa, "v": value } }' }, secret: SECRET },
      { url: bulk.url, format: { type: 'jsonata', output: 'ndjson', expression: '$reduce(datapoints, function($a, $p) { $append($a, [{ "index": {} }, $p]) }, [])' } },
      { url: failing.url, format: { type: 'jsonata', expression: '$error("no shape for " & $string($count(datapoints)))' } },
      // JSONata's nothing: no request, and the batch counts as delivered (it is acknowledged)
      { url: none.url, format: { type: 'jsonata', expression: 'datapoints[value > 1000]' } },
    ]);
    await produce(0, 30);
    // pending 0 once every webhook has every batch (the failing one's in its backlog): read, then acknowledged
    await eventually(async () => (plain.pointsDeduplicated().length === 30 && (await pendingCount(r.client, 'formats')) === 0 ? true : undefined), 20000, 'all acknowledged');

    expect(plain.pointsDeduplicated().map((p) => p.seq)).toEqual(range(0, 30));
    // ndjson: a line per point, as it stands in datapoints
    const ndReqs = byId(nd.delivered());
    expect(ndReqs.every((q) => q.headers['content-type'] === 'application/x-ndjson' && q.body.endsWith('\n') && signed(q, q.body))).toBe(true);
    expect(ndReqs.flatMap((q) => q.body.slice(0, -1).split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq))).toEqual(range(0, 30));
    // jsonata, json output: the records shape, signed
    const shapedReqs = byId(shaped.delivered());
    expect(shapedReqs.every((q) => q.headers['content-type'] === 'application/json' && signed(q, q.body))).toBe(true);
    const records = shapedReqs.flatMap((q) => {
      const rec = (JSON.parse(q.body) as { records: unknown }).records;
      return Array.isArray(rec) ? rec : [rec];
    }) as Array<{ tag: string; v: number }>;
    expect(records.map((x) => x.tag)).toEqual(range(0, 30).map((i) => `1.${i}`));
    expect(records.map((x) => x.v)).toEqual(range(0, 30));
    // jsonata, ndjson output: an action line before each point
    const lines = byId(bulk.delivered()).flatMap((q) => q.body.slice(0, -1).split('\n').map((l) => JSON.parse(l) as Record<string, unknown>));
    expect(lines.filter((_, i) => i % 2 === 0).every((l) => JSON.stringify(l) === '{"index":{}}')).toBe(true);
    expect(lines.filter((_, i) => i % 2 === 1).map((l) => l.seq)).toEqual(range(0, 30));
    // the failing one: never sent, every batch in its backlog as refused, with the default body
    expect(failing.requests).toHaveLength(0);
    expect(none.requests).toHaveLength(0);
    const list = await runCli(['deadletter', 'list', '--id', 'formats', '--json'], { ConnectionStrings__Datastore: r.redis.url });
    expect(list.code).toBe(0);
    const entries = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as { webhook: number; reason: string; error: string; body: string });
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => e.webhook === 4 && e.reason === 'refused' && /^format: no shape for \d+/.test(e.error))).toBe(true);
    expect(entries.flatMap((e) => (JSON.parse(e.body) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq)).sort((a, b) => a - b)).toEqual(range(0, 30));
    // counted, one a batch
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain(`webhook_render_failures_total{webhook="4",host="${new URL(failing.url).host}"} ${entries.length}`);
  });

  it('a filtered webhook\'s body is rendered from its own points: ndjson and jsonata webhooks of the same format and different filters each get theirs', async () => {
    const low = await receiver();
    const high = await receiver();
    const shaped = await receiver();
    await outbound('ff', [
      { url: low.url, format: { type: 'ndjson' }, filter: { ioa: ['0-9'] } },
      { url: high.url, format: { type: 'ndjson' }, filter: { ioa: ['20-29'] } },
      { url: shaped.url, format: { type: 'jsonata', expression: '{ "ioas": [datapoints.ioa] }' }, filter: { ioa: ['10-14'] } },
    ]);
    await produce(0, 30);
    const ndIoas = (q: Received[]) => byId(q).flatMap((x) => x.body.slice(0, -1).split('\n').map((l) => (JSON.parse(l) as { ioa: number }).ioa));
    const shapedIoas = () => byId(shaped.delivered()).flatMap((x) => (JSON.parse(x.body) as { ioas: number | number[] }).ioas);
    // every point read and acknowledged, and each webhook's share arrived (pending is 0 before the first read, too)
    const arrived = () => ndIoas(low.delivered()).length >= 10 && ndIoas(high.delivered()).length >= 10 && shapedIoas().length >= 5;
    await eventually(async () => (arrived() && (await pendingCount(r.client, 'ff')) === 0 ? true : undefined), 20000, 'all delivered and acknowledged');
    // which points, not their order (two batches may be in flight at once)
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    expect(sorted(ndIoas(low.delivered()))).toEqual(range(0, 10));
    expect(sorted(ndIoas(high.delivered()))).toEqual(range(20, 30));
    expect(sorted(shapedIoas())).toEqual(range(10, 15));
  });

  it('a jsonata webhook catching up after the connector was down: 100,000 waiting points, all delivered (in stream order of their batches), none refused', async () => {
    const hook = await receiver();
    const webhooks = [{ url: hook.url, format: { type: 'jsonata', expression: '{ "records": [datapoints.{ "tag": casdu & "." & ioa, "seq": seq }] }' } }];
    const first = await outbound('catchup', webhooks);
    expect(await first.c.stop('SIGTERM')).toBe(0);
    // what arrived while it was down: batches of up to 1,000, read while the renders run on the same thread
    await produce(0, 100_000);
    const { base } = await outbound('catchup', webhooks);
    const seqsOf = () => byId(hook.delivered()).flatMap((q) => (JSON.parse(q.body) as { records: Array<{ seq: number }> }).records.map((x) => x.seq));
    await eventually(async () => ((await pendingCount(r.client, 'catchup')) === 0 && seqsOf().length >= 100_000 ? true : undefined), 90000, 'caught up');
    expect(seqsOf()).toEqual(range(0, 100_000));
    expect(await r.client.xlen('connectors:catchup:deadletter')).toBe(0);
    expect(await (await fetch(`${base}/metrics`)).text()).not.toMatch(/webhook_render_failures_total\{[^}]*\} [1-9]/);
  }, 150000);

  it('a retry sends the bytes rendered once (an expression reading the clock renders differently each time); a backlog entry keeps its body and content type, and a replay sends them as stored after the format changed, compressed as the webhook now says', async () => {
    let answers = 0;
    // 503 for the first request of each webhook-id, 200 for its retry
    const hook = await receiver((_n, q) => {
      answers++;
      const id = String(q.headers['webhook-id']);
      const seen = hook.requests.filter((x) => String(x.headers['webhook-id']) === id).length;
      return { status: seen === 1 ? 503 : 200 };
    });
    await outbound('retry', [{ url: hook.url, format: { type: 'jsonata', output: 'ndjson', expression: '[datapoints.{ "seq": seq, "at": $millis() }]' } }], { Webhooks__MaxAttempts: '3' });
    await produce(0, 5);
    await eventually(() => (hook.delivered().length > 0 && hook.delivered().reduce((n, q) => n + q.body.split('\n').length - 1, 0) === 5 ? true : undefined));
    expect(answers).toBeGreaterThanOrEqual(2);
    for (const q of hook.delivered()) {
      const first = hook.requests.find((x) => x.headers['webhook-id'] === q.headers['webhook-id'])!;
      expect([first.status, first.body]).toEqual([503, q.body]);
    }

    const refusing = await receiver(() => ({ status: 400 }));
    await outbound('stored', [{ url: refusing.url, format: { type: 'ndjson' } }]);
    await produce(10, 3);
    const list = async () => {
      const l = await runCli(['deadletter', 'list', '--id', 'stored', '--json'], { ConnectionStrings__Datastore: r.redis.url });
      return l.stdout.trim() === '' ? [] : l.stdout.trim().split('\n').map((x) => JSON.parse(x) as { body: string; contentType?: string });
    };
    const stored = await eventually(async () => ((await list()).length > 0 ? list() : undefined));
    expect(stored.every((e) => e.contentType === 'application/x-ndjson' && e.body.endsWith('\n'))).toBe(true);
    // the webhook's format changes, and it now wants gzip; the receiver is healthy again at another URL
    const healthy = await receiver();
    await r.client.set('connectors:stored:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks: [{ url: healthy.url, format: { type: 'influx-line' }, compression: 'gzip' }] }));
    const replay = await runCli(['deadletter', 'replay', '--id', 'stored', '--webhook', '0'], { ConnectionStrings__Datastore: r.redis.url });
    expect(replay.code).toBe(0);
    expect(healthy.requests).toHaveLength(stored.length);
    for (const q of healthy.requests) {
      expect([q.headers['content-type'], q.headers['content-encoding']]).toEqual(['application/x-ndjson', 'gzip']);
    }
    expect(healthy.requests.map((q) => gunzipSync(q.raw).toString('utf8')).sort()).toEqual(stored.map((e) => e.body).sort());
  });

  it('influx-line with gzip: Content-Encoding gzip, the lines signed before compression, a time from each point\'s timestamp; GET /api/webhooks shows format and compression', async () => {
    const influx = await receiver();
    const { base, c } = await outbound('lines', [{ url: `${influx.url}?db=plant&precision=ms`, format: { type: 'influx-line', measurement: 'scada' }, compression: 'gzip', secret: SECRET }]);
    await produce(0, 10);
    await eventually(() => (byId(influx.delivered()).reduce((n, q) => n + gunzipSync(q.raw).toString().split('\n').length - 1, 0) >= 10 ? true : undefined));
    const reqs = byId(influx.delivered());
    expect(reqs.every((q) => q.headers['content-encoding'] === 'gzip' && q.headers['content-type'] === 'text/plain; charset=utf-8')).toBe(true);
    const texts = reqs.map((q) => gunzipSync(q.raw).toString('utf8'));
    expect(reqs.every((q, i) => signed(q, texts[i]!))).toBe(true);
    // the compressed bytes are not what was signed
    expect(signed(reqs[0]!, reqs[0]!.body)).toBe(false);
    const lines = texts.join('').split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(10);
    for (const [i, line] of lines.entries()) {
      expect(line).toMatch(new RegExp(`^scada,casdu=1,ioa=${i},source=producer,type=36 value=${i},seq=${i} \\d{13}$`));
    }
    const shown = (await (await fetch(`${base}/api/webhooks`)).json()) as { webhooks: Array<{ format: string; compression: string }> };
    expect(shown.webhooks[0]).toMatchObject({ format: 'influx-line', compression: 'gzip' });
    // a point whose value line protocol cannot carry is left out, counted and logged; the others go
    const before = influx.delivered().length;
    await r.client.xadd('process:updates', '*', 'data', JSON.stringify({ casdu: 1, ioa: 77, value: { nested: 1 } }), 'casdu', '1', 'ioa', '77');
    await r.client.xadd('process:updates', '*', 'data', JSON.stringify({ casdu: 1, ioa: 78, value: 7 }), 'casdu', '1', 'ioa', '78');
    await eventually(() => (influx.delivered().length > before ? true : undefined));
    const later = influx.delivered().slice(before).map((q) => gunzipSync(q.raw).toString('utf8')).join('');
    expect(later).toContain('ioa=78 value=7 ');
    expect(later).not.toContain('ioa=77');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/webhook_points_skipped_total\{webhook="0",host="[^"]+",reason="unformattable"\} 1/);
    await c.waitForLog((l) => l.reason === 'unformattable' && l.webhook === 0 && l.points === 1);
  });

  it('an interrogation in each format (on its thread): ndjson lines with Webhook-Cause; an expression that fails puts each request in the backlog at once and the interrogation completes', async () => {
    const pipe = r.client.pipeline();
    for (let ioa = 0; ioa < 5; ioa++) pipe.set(`process:image:casdu:4:ioa:${ioa}`, JSON.stringify({ casdu: 4, ioa, type: 13, value: ioa * 1.5, timestamp: '2026-11-21T10:15:00.000Z' }));
    await pipe.exec();
    const nd = await receiver();
    const failing = await receiver();
    const { c } = await outbound('gi', [
      { url: nd.url, format: { type: 'ndjson' }, initialState: true },
      { url: failing.url, format: { type: 'jsonata', expression: '$error("no " & cause)' }, initialState: true },
    ]);
    await c.waitForLog((l) => l.msg === 'interrogation completed' && l.webhook === 1);
    await eventually(() => (nd.delivered().length > 0 ? true : undefined));
    const req = nd.delivered()[0]!;
    expect(req.headers['webhook-cause']).toBe('interrogation');
    expect(req.headers['content-type']).toBe('application/x-ndjson');
    expect(req.body.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { ioa: number }).ioa)).toEqual([0, 1, 2, 3, 4]);
    expect(failing.requests).toHaveLength(0);
    const list = await runCli(['deadletter', 'list', '--id', 'gi', '--json'], { ConnectionStrings__Datastore: r.redis.url });
    const entries = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as { webhook: number; reason: string; error: string; body: string });
    expect(entries.map((e) => [e.webhook, e.reason, e.error])).toEqual([[1, 'refused', expect.stringMatching(/^format: no interrogation \(D3137/)]]);
    expect(JSON.parse(entries[0]!.body)).toMatchObject({ cause: 'interrogation', datapoints: expect.arrayContaining([expect.objectContaining({ casdu: 4, ioa: 4 })]) });
  });

  it('webhooks resend renders in the webhook\'s format: line protocol with Webhook-Cause resend; an expression that fails fails its request', async () => {
    const lines = await receiver();
    const failing = await receiver();
    await r.client.set('connectors:rsf:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'], webhooks: [
      { url: `${lines.url}?precision=s`, format: { type: 'influx-line' } },
      { url: failing.url, format: { type: 'jsonata', expression: '$error("no")' } },
    ] }));
    const since = Math.floor(Date.now() / 1000) - 1;
    await produce(0, 3);
    const env = { ConnectionStrings__Datastore: r.redis.url };
    const ok = await runCli(['webhooks', 'resend', '--id', 'rsf', '--webhook', '0', '--since', String(since)], env);
    expect([ok.code, ok.stdout.trim().split('\n').pop()]).toEqual([0, 'sent 3 points in 1 requests, failed 0']);
    expect(lines.requests).toHaveLength(1);
    expect(lines.requests[0]!.headers['webhook-cause']).toBe('resend');
    expect(lines.requests[0]!.body).toMatch(/^datapoints,casdu=1,ioa=0,source=producer,type=36 value=0,seq=0 \d{10}\ndatapoints,casdu=1,ioa=1,/);
    const bad = await runCli(['webhooks', 'resend', '--id', 'rsf', '--webhook', '1', '--since', String(since)], env);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('failed: format: no');
    expect(failing.requests).toHaveLength(0);
  });

  it('webhooks render prints the body byte for byte; exit 1 when it cannot be rendered, 2 for a bad BATCH file or expression', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'render-'));
    const cfg = join(dir, 'cfg.json');
    writeFileSync(cfg, JSON.stringify({ hostUrls: ['http://127.0.0.1:1'], webhooks: [
      { url: 'http://influx:8086/write?db=p&precision=s', format: { type: 'influx-line' } },
      { url: 'http://x/', format: { type: 'jsonata', expression: '$error("nope")' } },
    ] }));
    const batch = join(dir, 'batch.json');
    writeFileSync(batch, JSON.stringify({ datapoints: [{ casdu: 3, ioa: 4, type: 13, value: 1.5, timestamp: '2026-11-21T10:15:00.999Z' }, { casdu: 3, ioa: 5, value: 2 }] }));
    const ok = await runCli(['webhooks', 'render', cfg, '--webhook', '0', batch]);
    expect(ok).toMatchObject({ code: 0, stdout: 'datapoints,casdu=3,ioa=4,type=13 value=1.5 1795256100\ndatapoints,casdu=3,ioa=5 value=2\n' });
    const failed = await runCli(['webhooks', 'render', cfg, '--webhook', '1', batch]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('format: nope');
    writeFileSync(join(dir, 'bad.json'), '[1]');
    expect((await runCli(['webhooks', 'render', cfg, '--webhook', '0', join(dir, 'bad.json')])).code).toBe(2);
    writeFileSync(cfg, JSON.stringify({ hostUrls: ['http://127.0.0.1:1'], webhooks: [{ url: 'http://x/', format: { type: 'jsonata', expression: 'datapoints.(' } }] }));
    const invalid = await runCli(['webhooks', 'render', cfg, '--webhook', '0', batch]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('webhooks[0].format.expression: does not compile');
  });
});

it('any number of formats: 300 influx-line webhooks, each its own measurement (more formats than the format cache keeps), each gets its lines', async () => {
  const hook = await receiver();
  const webhooks = Array.from({ length: 300 }, (_, k) => ({ url: `${hook.url}?w=${k}`, format: { type: 'influx-line', measurement: `m${k}` } }));
  await outbound('many', webhooks);
  await produce(0, 3);
  await eventually(async () => (new Set(hook.delivered().map((q) => q.body.split(',')[0])).size === 300 && (await pendingCount(r.client, 'many')) === 0 ? true : undefined), 60000, 'every webhook\'s lines');
  // each request is the lines of its own webhook's measurement, and nothing was refused
  const byMeasurement = new Map<string, number[]>();
  for (const q of hook.delivered()) {
    for (const l of q.body.slice(0, -1).split('\n')) {
      const m = /^(m\d+),casdu=1,ioa=(\d+),/.exec(l);
      if (m === null) throw new Error(`not line protocol: ${l}`);
      byMeasurement.set(m[1]!, [...(byMeasurement.get(m[1]!) ?? []), Number(m[2])]);
    }
  }
  expect([...byMeasurement.keys()].sort()).toEqual(webhooks.map((_, k) => `m${k}`).sort());
  for (const seqs of byMeasurement.values()) expect([...new Set(seqs)].sort((a, b) => a - b)).toEqual(range(0, 3));
  // nothing refused for its format (what a lost format would give); a request that timed out on a
  // loaded machine (300 ms here) may have gone through the backlog, and been redriven, as any would
  const backlog = (await r.client.xrange('connectors:many:deadletter', '-', '+')).map(([, f]) => [f[f.indexOf('reason') + 1], f[f.indexOf('error') + 1]]);
  expect(backlog.filter(([reason, error]) => reason === 'refused' || String(error).startsWith('format:'))).toEqual([]);
}, 90000);
