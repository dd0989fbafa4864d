import { gunzipSync } from 'node:zlib';
import { eventually, runCli } from './helpers/cli';
import { backlogEntries, keepProducingUntil, webhookStates, type StoredEntry } from './helpers/outage';
import { range, usePushHarness } from './helpers/push';
import type { Answer, Received } from './helpers/receiver';

/**
 * CONTRACT 4.4 and 4.7 "Backlog": whatever the reason a batch entered a webhook's backlog —
 * `exhausted`, `overflow`, `circuit` (with or without an attempt), `disabled`, `refused` — its entry
 * holds the body its webhook takes, and the requests that send it again (redrive, or an operator's
 * replay for `refused`) are parsed by the receiver in that webhook's format. One connector, one
 * webhook of each format; each test first shows that the fault took effect (entries of its reason
 * for every webhook, unsent ones among them where the reason has them), then that every point
 * arrived, each request parsed in its format.
 */
const { outbound, receiver, produce, r } = usePushHarness();

type Mode = 'ok' | 'down' | 'gone' | 'refuse' | 'slow';
const FORMATS = [
  { name: 'datapoints', format: undefined, contentType: 'application/json' },
  { name: 'ndjson', format: { type: 'ndjson' }, contentType: 'application/x-ndjson' },
  { name: 'influx-line', format: { type: 'influx-line', measurement: 'm' }, contentType: 'text/plain; charset=utf-8', gzip: true },
  { name: 'jsonata', format: { type: 'jsonata', expression: '{ "seqs": [datapoints.seq] }' }, contentType: 'application/json' },
] as const;

/** The seqs of a request's body, read as its format says; throws for a body of any other shape. */
const PARSE: Record<(typeof FORMATS)[number]['name'], (body: string) => number[]> = {
  datapoints: (b) => (JSON.parse(b) as { datapoints: Array<{ seq: number }> }).datapoints.map((p) => p.seq),
  ndjson: (b) => {
    if (!b.endsWith('\n')) throw new Error(`not ndjson: ${b.slice(0, 80)}`);
    return b.slice(0, -1).split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq);
  },
  'influx-line': (b) =>
    b.slice(0, -1).split('\n').map((l) => {
      const m = /^m,casdu=1,ioa=(\d+),source=producer,type=36 value=\d+,seq=(\d+) \d+$/.exec(l);
      if (m === null || m[1] !== m[2]) throw new Error(`not line protocol: ${l.slice(0, 80)}`);
      return Number(m[2]);
    }),
  jsonata: (b) => {
    const seqs = (JSON.parse(b) as { seqs: number[] }).seqs;
    if (!Array.isArray(seqs)) throw new Error(`not the expression's shape: ${b.slice(0, 80)}`);
    return seqs;
  },
};

/** Four receivers, one per format, answering as `mode` says. */
const webhooksOf = async (mode: () => Mode) => {
  const answer = (): Answer => {
    switch (mode()) {
      case 'ok': return { status: 200 };
      case 'down': return { status: 503 };
      case 'gone': return { status: 410 };
      case 'refuse': return { status: 400 };
      case 'slow': return { status: 200, delayMs: 1500 };
    }
  };
  const hooks = await Promise.all(FORMATS.map(() => receiver(answer)));
  const webhooks = FORMATS.map((f, i) => ({ url: hooks[i]!.url, ...(f.format !== undefined ? { format: f.format } : {}), ...('gzip' in f ? { compression: 'gzip' } : {}) }));
  return { hooks, webhooks };
};

const bodyOf = (q: Received, i: number) => ('gzip' in FORMATS[i]! ? gunzipSync(q.raw).toString('utf8') : q.body);

/** Every seq each receiver got in 2xx requests, one request per webhook-id, each parsed in its format. */
const delivered = (hooks: Awaited<ReturnType<typeof webhooksOf>>['hooks']) =>
  hooks.map((h, i) => {
    const byId = new Map(h.delivered().map((q) => [String(q.headers['webhook-id']), q]));
    return [...byId.values()].flatMap((q) => PARSE[FORMATS[i]!.name](bodyOf(q, i))).sort((a, b) => a - b);
  });

/** The fault took effect: every webhook has entries of `reason`, each holding its format's body and content type. */
const expectEntries = async (id: string, reason: string): Promise<StoredEntry[]> => {
  const entries = await backlogEntries(r.client, id);
  for (const [i, f] of FORMATS.entries()) {
    const own = entries.filter((e) => e.webhook === String(i));
    expect([f.name, own.some((e) => e.reason === reason)]).toEqual([f.name, true]);
    for (const e of own) {
      // a missing contentType means application/json (CONTRACT 4.7)
      expect([f.name, e.reason, e.contentType ?? 'application/json']).toEqual([f.name, e.reason, f.contentType]);
      expect(PARSE[f.name](e.body!).length).toBeGreaterThan(0);
    }
  }
  return entries;
};

/** Each receiver got every seq of [0, n) (after de-duplication), and the requests of the entries' webhook-ids among them. */
const expectAllArrived = async (id: string, hooks: Awaited<ReturnType<typeof webhooksOf>>['hooks'], n: number, entries: StoredEntry[]) => {
  await eventually(async () => ((await backlogEntries(r.client, id)).length === 0 && delivered(hooks).every((s) => s.length >= n) ? true : undefined), 60000, 'every point delivered, the backlog empty');
  expect(delivered(hooks)).toEqual(FORMATS.map(() => range(0, n)));
  for (const [i, h] of hooks.entries()) {
    const got = new Set(h.delivered().map((q) => String(q.headers['webhook-id'])));
    expect(entries.filter((e) => e.webhook === String(i) && !got.has(e.webhookId!))).toEqual([]);
  }
};

const FAST_CIRCUIT = { Webhooks__MaxAttempts: '2', Webhooks__ProbeIntervalSeconds: '0.3' };

/**
 * Appends two points at a time until every webhook shows `state`, then until the backlog holds an
 * entry of `reason` without an attempt for every webhook: the fault took effect while batches came.
 * Returns how many points were appended.
 */
const produceUntilUnsent = async (id: string, base: string, state: string, reason: string): Promise<number> => {
  let n = 0;
  const more = async () => (await produce(n, 2), (n += 2));
  await keepProducingUntil(more, async () => (await webhookStates(base)).every((w) => w.state === state), `every webhook ${state}`);
  await keepProducingUntil(more, async () => {
    const unsent = (await backlogEntries(r.client, id)).filter((e) => e.reason === reason && e.attempts === '0');
    return FORMATS.every((_, i) => unsent.some((e) => e.webhook === String(i)));
  }, `unsent ${reason} entries of every webhook`);
  return n;
};

it('exhausted: redriven in each format', async () => {
  let mode: Mode = 'down';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  await outbound('bx', webhooks, { ...FAST_CIRCUIT, Webhooks__CircuitFailureThreshold: '1000' });
  let n = 0;
  // every webhook's own (the jsonata one renders in a process of its own: on a busy machine it is
  // the last to have one, after the others already have several)
  const exhaustedEach = async () => {
    const exhausted = (await backlogEntries(r.client, 'bx')).filter((e) => e.reason === 'exhausted');
    return FORMATS.every((_, i) => exhausted.some((e) => e.webhook === String(i)));
  };
  await keepProducingUntil(async () => (await produce(n, 2), (n += 2)), exhaustedEach, 'exhausted entries of every webhook');
  const entries = await expectEntries('bx', 'exhausted');
  mode = 'ok';
  await expectAllArrived('bx', hooks, n, entries);
}, 90000);

it('circuit: batches sent there unsent while the circuit is open, redriven in each format after a probe closed it', async () => {
  let mode: Mode = 'down';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  const { base } = await outbound('bc', webhooks, { ...FAST_CIRCUIT, Webhooks__CircuitFailureThreshold: '1' });
  const n = await produceUntilUnsent('bc', base, 'open', 'circuit');
  const entries = await expectEntries('bc', 'circuit');
  mode = 'ok';
  await expectAllArrived('bc', hooks, n, entries);
}, 90000);

it('overflow: a webhook\'s queue full (1000 batches), what overflows redriven in each format', async () => {
  let mode: Mode = 'slow';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  await outbound('bo', webhooks, { Webhooks__MaxInFlight: '1', Webhooks__BatchMaxSize: '1', Webhooks__TimeoutMilliseconds: '10000', Webhooks__ProbeIntervalSeconds: '0.3' });
  const n = 1100;
  await produce(0, n);
  await eventually(async () => {
    const over = (await backlogEntries(r.client, 'bo')).filter((e) => e.reason === 'overflow');
    return FORMATS.every((_, i) => over.some((e) => e.webhook === String(i))) ? true : undefined;
  }, 60000, 'overflow entries of every webhook');
  const entries = await expectEntries('bo', 'overflow');
  mode = 'ok';
  await expectAllArrived('bo', hooks, n, entries);
}, 150000);

it('disabled: 410 Gone, then every batch to the backlog unsent; enabled by a configuration change, redriven in each format', async () => {
  let mode: Mode = 'gone';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  const { base, c } = await outbound('bd', webhooks, FAST_CIRCUIT);
  const n = await produceUntilUnsent('bd', base, 'disabled', 'disabled');
  const entries = await expectEntries('bd', 'disabled');
  mode = 'ok';
  // the configuration changes (a header added; the connector restarts on a change): every webhook enabled again, its backlog redriven
  expect(await c.stop('SIGTERM')).toBe(0);
  await outbound('bd', webhooks.map((w) => ({ ...w, headers: { 'X-Plant': 'a' } })), FAST_CIRCUIT);
  await expectAllArrived('bd', hooks, n, entries);
}, 90000);

it('refused: answered 400, then replayed by the operator in each format', async () => {
  let mode: Mode = 'refuse';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  await outbound('bf', webhooks, FAST_CIRCUIT);
  await produce(0, 10);
  await eventually(async () => ((await backlogEntries(r.client, 'bf')).reduce((k, e) => k + PARSE[FORMATS[Number(e.webhook)]!.name](e.body!).length, 0) === 40 ? true : undefined), 30000, 'every point refused by every webhook');
  const entries = await expectEntries('bf', 'refused');
  // deadletter list counts the points of every entry, whatever its format (JSONata's body included)
  const listed = await runCli(['deadletter', 'list', '--id', 'bf'], { ConnectionStrings__Datastore: r.redis.url });
  const stored = await backlogEntries(r.client, 'bf');
  const counted = listed.stdout.trim().split('\n').filter((l) => / points /.test(l)).map((l) => [Number(/webhook (\d+)/.exec(l)![1]), Number(/ (\d+) points /.exec(l)?.[1] ?? NaN)]);
  expect(counted).toHaveLength(stored.length);
  for (let w = 0; w < FORMATS.length; w++) {
    const inEntries = stored.filter((e) => Number(e.webhook) === w).reduce((k, e) => k + PARSE[FORMATS[w]!.name](e.body!).length, 0);
    expect([FORMATS[w]!.name, counted.filter(([hook]) => hook === w).reduce((k, [, n]) => k + n!, 0)]).toEqual([FORMATS[w]!.name, inEntries]);
  }
  mode = 'ok';
  const replay = await runCli(['deadletter', 'replay', '--id', 'bf'], { ConnectionStrings__Datastore: r.redis.url });
  expect([replay.code, replay.stdout.trim().split('\n').pop()]).toEqual([0, `delivered ${entries.length}, failed 0`]);
  await expectAllArrived('bf', hooks, 10, entries);
}, 90000);

it('an interrogation\'s requests sent to the backlog keep their cause: redriven in each format with Webhook-Cause', async () => {
  let mode: Mode = 'down';
  const { hooks, webhooks } = await webhooksOf(() => mode);
  const { base } = await outbound('bi', webhooks, { ...FAST_CIRCUIT, Webhooks__CircuitFailureThreshold: '1' });
  // the image: points written before the connector's time
  const m = r.client.multi();
  for (let seq = 100; seq < 105; seq++) {
    m.set(`process:image:casdu:1:ioa:${seq}`, JSON.stringify({ casdu: 1, ioa: seq, type: 36, value: seq, timestamp: new Date().toISOString(), source: 'producer', seq }));
  }
  await m.exec();
  let n = 0;
  await keepProducingUntil(async () => (await produce(n, 2), (n += 2)), async () => (await webhookStates(base)).every((w) => w.state === 'open'), 'every circuit open');
  for (const i of FORMATS.keys()) expect((await fetch(`${base}/api/webhooks/${i}/interrogation`, { method: 'POST' })).status).toBe(202);
  await eventually(async () => {
    const asked = (await backlogEntries(r.client, 'bi')).filter((e) => e.cause === 'interrogation');
    return FORMATS.every((_, i) => asked.some((e) => e.webhook === String(i))) ? asked : undefined;
  }, 30000, 'the interrogations\' requests in the backlog, with their cause');
  const entries = await backlogEntries(r.client, 'bi');
  expect(entries.filter((e) => e.cause === 'interrogation').every((e) => /^gi-/.test(e.webhookId!) && e.reason === 'circuit')).toBe(true);
  mode = 'ok';
  await eventually(async () => ((await backlogEntries(r.client, 'bi')).length === 0 ? true : undefined), 60000, 'the backlog redriven');
  for (const [i, h] of hooks.entries()) {
    const asked = h.delivered().filter((q) => String(q.headers['webhook-id']).startsWith('gi-'));
    expect([FORMATS[i]!.name, asked.length > 0, asked.every((q) => q.headers['webhook-cause'] === 'interrogation')]).toEqual([FORMATS[i]!.name, true, true]);
    // the image's points (and the live ones written before the interrogation), parsed in the webhook's format
    expect(asked.flatMap((q) => PARSE[FORMATS[i]!.name](bodyOf(q, i))).filter((s) => s >= 100).sort((a, b) => a - b)).toEqual(range(100, 105));
  }
}, 90000);
