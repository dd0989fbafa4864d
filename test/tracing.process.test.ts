import { randomBytes } from 'node:crypto';
import { Connector, eventually, runCli } from './helpers/cli';
import { Collector } from './helpers/collector';
import { usePushHarness } from './helpers/push';
import { freePort } from './helpers/redis';
import { compareIds } from '../src/streams/store/streamIds';

/**
 * Issue 25 (CONTRACT 9): traces from the POST to the webhook, exported by both connectors (the
 * built CLI) to a collector in this test process over OTLP/HTTP, with real receivers and a
 * private Redis.
 */
const h = usePushHarness();
const collectors: Collector[] = [];
const inbounds: Connector[] = [];
afterEach(async () => {
  await Promise.all(inbounds.splice(0).map((c) => c.stop('SIGKILL')));
  await Promise.all(collectors.splice(0).map((c) => c.close()));
});

const MAPPINGS = [
  { name: 'a', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'a' },
  { name: 'b', topic: 't', casdu: 1, ioa: 2, type: 36, valuePath: 'b' },
];
/** Spans exported at once (the batch processor's delay), and OTLP/JSON so that this test reads them. */
const OTEL = (collector: Collector, extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100', ...extra,
});
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

const collector = async () => {
  const c = await Collector.start();
  collectors.push(c);
  return c;
};

const inbound = async (id: string, env: Record<string, string>) => {
  const port = await freePort();
  await h.r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: MAPPINGS }));
  const c = new Connector('inbound', { Id: id, ConnectionStrings__Datastore: h.r.redis.url, Datastore__ConnectionRetrySeconds: '0.2', ...env });
  inbounds.push(c);
  await c.waitForLog((l) => l.msg === 'inbound connector listening');
  return { c, base: `http://127.0.0.1:${port}` };
};

const post = (base: string, body: object, traceparent?: string) =>
  fetch(`${base}/api/datapoints?topic=t`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...(traceparent !== undefined ? { traceparent } : {}) }, body: JSON.stringify(body),
  });

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The stream's entries with their fields as an object. */
const streamEntries = async () =>
  ((await h.r.client.xrange('process:updates', '-', '+')) as Array<[string, string[]]>).map(([id, f]) => {
    const o: Record<string, string> = {};
    for (let i = 0; i + 1 < f.length; i += 2) o[f[i]!] = f[i + 1]!;
    return { id, fields: o };
  });

it('one POST with a traceparent: server and producer spans in its trace, the context in each stream entry, a process span linked to each entry, a client span whose context the webhook received', async () => {
  const col = await collector();
  const hook = await h.receiver();
  const { base } = await inbound('tr-in', OTEL(col));
  // a time limit far above any answer time here: every request is answered once
  await h.outbound('tr-out', [{ url: hook.url }], { ...OTEL(col), Webhooks__BatchWindowMilliseconds: '1000', Webhooks__TimeoutMilliseconds: '10000' });
  // five POSTs inside one batch window, each with a trace of its own: one webhook request, ten links
  const traces = Array.from({ length: 5 }, () => ({ traceId: hex(16), spanId: hex(8) }));
  for (const [i, t] of traces.entries()) expect((await post(base, { a: i, b: 10 + i }, `00-${t.traceId}-${t.spanId}-01`)).status).toBe(200);
  await eventually(() => (hook.points().length === 10 ? true : undefined), 20000, 'the webhook got the ten points');

  const entries = await streamEntries();
  expect(entries).toHaveLength(10);
  await eventually(() => {
    const s = col.spans();
    return s.filter((x) => x.kind === SERVER).length === 5 && s.some((x) => x.kind === CLIENT) ? true : undefined;
  }, 20000, 'the spans were exported');
  const spans = col.spans();

  for (const [i, t] of traces.entries()) {
    const server = spans.find((s) => s.kind === SERVER && s.traceId === t.traceId)!;
    expect(server).toMatchObject({ service: 'rest-connector-inbound', name: 'POST /api/datapoints', parentSpanId: t.spanId });
    expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/datapoints', 'http.response.status_code': 200 });
    const producer = spans.find((s) => s.kind === PRODUCER && s.traceId === t.traceId)!;
    expect(producer).toMatchObject({ name: 'send process:updates', parentSpanId: server.spanId });
    expect(producer.attributes).toMatchObject({ 'messaging.system': 'redis', 'messaging.destination.name': 'process:updates', 'messaging.batch.message_count': 2 });
    // the write's two entries carry the producer span's context
    expect(entries.slice(2 * i, 2 * i + 2).map((e) => e.fields.traceparent)).toEqual(Array(2).fill(`00-${t.traceId}-${producer.spanId}-01`));
  }

  // one webhook request, or a few if the window closed between the POSTs on a slow machine: each
  // has its process span, linked to each of its entries with the context stored with it
  const byId = new Map(entries.map((e) => [e.id, e]));
  const linked: string[] = [];
  for (const request of hook.delivered()) {
    const [first, last] = String(request.headers['webhook-id']).split('_');
    const mine = entries.filter((e) => compareIds(e.id, first!) >= 0 && compareIds(e.id, last!) <= 0);
    const processSpan = spans.find((s) => s.kind === CONSUMER && s.attributes['rest_connector.webhook_id'] === request.headers['webhook-id'])!;
    expect(processSpan).toMatchObject({ service: 'rest-connector-outbound', name: 'process process:updates', parentSpanId: '' });
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': 'redis', 'messaging.destination.name': 'process:updates', 'messaging.consumer.group.name': 'rest-outbound:tr-out',
      'messaging.batch.message_count': mine.length, 'messaging.operation.type': 'process',
    });
    expect(processSpan.links.map((l) => [l.traceId, l.spanId, l.attributes['messaging.message.id']])).toEqual(
      mine.map((e) => [...e.fields.traceparent!.split('-').slice(1, 3), e.id]),
    );
    linked.push(...processSpan.links.map((l) => String(l.attributes['messaging.message.id'])));
    const client = spans.find((s) => s.kind === CLIENT && s.parentSpanId === processSpan.spanId)!;
    expect(client).toMatchObject({ name: 'POST', traceId: processSpan.traceId });
    expect(client.attributes).toMatchObject({ 'http.request.method': 'POST', 'url.full': hook.url, 'http.response.status_code': 200 });
    expect(request.headers.traceparent).toBe(`00-${client.traceId}-${client.spanId}-01`);
  }
  expect(linked).toEqual([...byId.keys()]);
});

it('a retried and a redriven request are spans of their own, each linked to the entries; the backlog keeps the contexts', async () => {
  const col = await collector();
  // three 500s exhaust the first delivery (MaxAttempts 3): the batch goes to the backlog, then is redriven
  const hook = await h.receiver((n) => ({ status: n <= 3 ? 500 : 200 }));
  const { base } = await inbound('tr-in2', OTEL(col));
  await h.outbound('tr-out2', [{ url: hook.url }], { ...OTEL(col), Webhooks__CircuitFailureThreshold: '100', Webhooks__TimeoutMilliseconds: '10000' });
  const t = { traceId: hex(16), spanId: hex(8) };
  expect((await post(base, { a: 1, b: 2 }, `00-${t.traceId}-${t.spanId}-01`)).status).toBe(200);
  await eventually(() => (hook.delivered().length === 1 ? true : undefined), 30000, 'the redriven request was delivered');
  const producer = await eventually(() => col.spans().find((s) => s.kind === PRODUCER), 20000, 'the producer span');
  const processSpans = await eventually(() => {
    const p = col.spans().filter((s) => s.kind === CONSUMER);
    return p.length === 4 ? p : undefined;
  }, 20000, 'a process span per request');
  // every request of the four (three failed attempts, one redrive) links to both entries
  for (const p of processSpans) {
    expect(p.links.map((l) => [l.traceId, l.spanId])).toEqual([[t.traceId, producer.spanId], [t.traceId, producer.spanId]]);
  }
  expect(new Set(processSpans.map((p) => p.traceId)).size).toBe(4);
  const failed = processSpans.filter((p) => p.attributes['http.response.status_code'] === 500);
  expect(failed).toHaveLength(3);
  expect(failed.every((p) => p.status.code === 2)).toBe(true);
  // the webhook saw a different traceparent on each request, each a client span's
  const clients = col.spans().filter((s) => s.kind === CLIENT);
  expect(hook.requests.map((r) => r.headers.traceparent).sort()).toEqual(clients.map((c) => `00-${c.traceId}-${c.spanId}-01`).sort());
});

it('a batch of 300 entries gets 300 links (more than the SDK\'s default limit of 128); entries without a context, or with one that is not a W3C context, get none', async () => {
  const col = await collector();
  const hook = await h.receiver();
  await h.outbound('tr-many', [{ url: hook.url }], { ...OTEL(col), Webhooks__BatchWindowMilliseconds: '1000', Webhooks__TimeoutMilliseconds: '10000' });
  const tp = `00-${hex(16)}-${hex(8)}-01`;
  const pipe = h.r.client.pipeline();
  for (let i = 0; i < 302; i++) {
    const trace = i === 300 ? [] : i === 301 ? ['traceparent', 'not-a-context'] : ['traceparent', tp];
    pipe.xadd('process:updates', '*', 'casdu', '1', 'ioa', String(i), 'source', 's', 'data', JSON.stringify({ casdu: 1, ioa: i, type: 36, value: i }), ...trace);
  }
  const ids = (await pipe.exec())!.map(([, id]) => String(id));
  await eventually(() => (hook.points().length === 302 ? true : undefined), 20000, 'delivered');
  const processSpans = await eventually(() => {
    const p = col.spans().filter((s) => s.kind === CONSUMER);
    return p.length === hook.delivered().length ? p : undefined;
  }, 20000, 'a process span per request');
  const links = processSpans.flatMap((p) => p.links.map((l) => String(l.attributes['messaging.message.id'])));
  expect(links.sort()).toEqual(ids.slice(0, 300).sort());
});

it('sampling off adds no stream field and no header, and exports nothing', async () => {
  const col = await collector();
  const hook = await h.receiver();
  const off = OTEL(col, { OTEL_TRACES_SAMPLER: 'always_off' });
  const { base } = await inbound('tr-off-in', off);
  await h.outbound('tr-off-out', [{ url: hook.url }], off);
  expect((await post(base, { a: 1, b: 2 }, `00-${hex(16)}-${hex(8)}-01`)).status).toBe(200);
  await eventually(() => (hook.points().length === 2 ? true : undefined), 20000, 'delivered');
  expect((await streamEntries()).map((e) => Object.keys(e.fields))).toEqual(Array(2).fill(['casdu', 'ioa', 'source', 'data']));
  expect(hook.requests.map((r) => r.headers.traceparent)).toEqual([undefined]);
  // the batch processor's delay is 100 ms: anything there was to export would be here by now
  await new Promise((r) => setTimeout(r, 500));
  expect(col.spans()).toEqual([]);
});

it('tracing off (no endpoint): no field, no header', async () => {
  const hook = await h.receiver();
  const { base } = await inbound('tr-none-in', {});
  await h.outbound('tr-none-out', [{ url: hook.url }]);
  expect((await post(base, { a: 1, b: 2 }, `00-${hex(16)}-${hex(8)}-01`)).status).toBe(200);
  await eventually(() => (hook.points().length === 2 ? true : undefined), 20000, 'delivered');
  expect((await streamEntries()).map((e) => Object.keys(e.fields))).toEqual(Array(2).fill(['casdu', 'ioa', 'source', 'data']));
  expect(hook.requests.map((r) => r.headers.traceparent)).toEqual([undefined]);
});

it('an unreachable collector changes nothing for delivery: every point delivered, the failure logged once', async () => {
  const hook = await h.receiver();
  const port = await freePort(); // nothing listens there
  // the exporter retries a failed export within its time limit: 1 s, so that failures come soon
  const away = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' };
  const { base, c: inC } = await inbound('tr-away-in', away);
  const { c: outC } = await h.outbound('tr-away-out', [{ url: hook.url }], away);
  for (let i = 0; i < 20; i++) expect((await post(base, { a: i, b: i }, `00-${hex(16)}-${hex(8)}-01`)).status).toBe(200);
  await eventually(() => (hook.points().length === 40 ? true : undefined), 20000, 'every point delivered');
  const failure = (l: Record<string, unknown>) => l.msg === 'traces cannot be exported to the collector; spans are dropped';
  await outC.waitForLog(failure);
  await inC.waitForLog(failure);
  // more exports fail meanwhile (the POSTs' spans came in several exports): each connector says so once a minute
  for (let i = 0; i < 20; i++) expect((await post(base, { a: i, b: i }, `00-${hex(16)}-${hex(8)}-01`)).status).toBe(200);
  await eventually(() => (hook.points().length === 80 ? true : undefined), 20000, 'every point delivered');
  await new Promise((r) => setTimeout(r, 3000));
  expect([inC.logs().filter(failure).length, outC.logs().filter(failure).length]).toEqual([1, 1]);
  expect(inC.logs().find(failure)).toMatchObject({ level: 'warn', droppedSpans: expect.any(Number) });
});

it('by default spans go as OTLP/HTTP protobuf to {endpoint}/v1/traces, with OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the caller\'s name on the server span', async () => {
  const col = await collector();
  const { base } = await inbound('tr-proto', {
    OTEL_EXPORTER_OTLP_ENDPOINT: col.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'plant-inbound', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test-bay',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=c0ll3ct', Authentication__ApiKeys: 'scada-a=k1',
  });
  const traceId = hex(16);
  const answer = await fetch(`${base}/api/datapoints?topic=t`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01`, 'X-Api-Key': 'k1' }, body: JSON.stringify({ a: 1, b: 2 }),
  });
  expect(answer.status).toBe(200);
  const request = await eventually(() => col.requests[0], 20000, 'an export');
  expect([request.path, request.headers['content-type'], request.headers['x-collector-key']]).toEqual(['/v1/traces', 'application/x-protobuf', 'c0ll3ct']);
  // the server span names the caller (CONTRACT 7.1), never the key
  expect(request.body.includes(Buffer.from('rest_connector.caller'))).toBe(true);
  expect(request.body.includes(Buffer.from('scada-a'))).toBe(true);
  expect(request.body.includes(Buffer.from('k1'))).toBe(false);
  // protobuf holds the trace ID as its 16 bytes, and the resource's strings as they are
  expect(request.body.includes(Buffer.from(traceId, 'hex'))).toBe(true);
  expect(request.body.includes(Buffer.from('plant-inbound'))).toBe(true);
  expect(request.body.includes(Buffer.from('test-bay'))).toBe(true);
});

it('an OTLP protocol other than http/protobuf or http/json is a start-up error (exit 2)', async () => {
  const r = await runCli(['inbound'], { Id: 'tr-grpc', ConnectionStrings__Datastore: h.r.redis.url, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  expect([r.code, r.stderr.trim()]).toEqual([2, 'rest-connector: OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": traces are exported over OTLP/HTTP only ("http/protobuf", the default, or "http/json")']);
});


it('deadletter replay traces its requests as redrive does: a process span linked to the stored contexts, traceparent sent', async () => {
  const col = await collector();
  const hook = await h.receiver();
  await h.r.client.set('connectors:tr-replay:config', JSON.stringify({ webhooks: [{ url: hook.url }] }));
  const t = { traceId: hex(16), spanId: hex(8) };
  const tp = `00-${t.traceId}-${t.spanId}-01`;
  await h.r.client.xadd('connectors:tr-replay:deadletter', '*', 'webhook', '0', 'url', hook.url, 'webhookId', '5-0_5-1', 'error', 'HTTP 400', 'attempts', '1',
    'body', '{"datapoints":[{"seq":1},{"seq":2}]}', 'reason', 'refused', 'traces', `5-0 ${tp} 5-1 ${tp}`);
  const r = await runCli(['deadletter', 'replay', '--id', 'tr-replay'], { ConnectionStrings__Datastore: h.r.redis.url, ...OTEL(col) });
  expect([r.code, r.stdout.trim().split('\n').pop()]).toEqual([0, 'delivered 1, failed 0']);
  // the replay waits for its spans to be exported before it exits
  const spans = col.spans();
  const processSpan = spans.find((s) => s.kind === CONSUMER)!;
  expect(processSpan.attributes).toMatchObject({ 'messaging.batch.message_count': 2, 'rest_connector.webhook_id': '5-0_5-1', 'messaging.consumer.group.name': 'rest-outbound:tr-replay' });
  expect(processSpan.links.map((l) => [l.traceId, l.spanId, l.attributes['messaging.message.id']])).toEqual([[t.traceId, t.spanId, '5-0'], [t.traceId, t.spanId, '5-1']]);
  const client = spans.find((s) => s.kind === CLIENT)!;
  expect(hook.requests[0]!.headers.traceparent).toBe(`00-${client.traceId}-${client.spanId}-01`);
  expect(r.stderr).toBe('');
});

it('off, the OpenTelemetry SDK and exporters are not even loaded; on, they are', async () => {
  const script = (env: object) => `
    const { startTracing } = require('./dist/src/runtime/tracing.js');
    const { makeLogger } = require('./dist/src/runtime/logger.js');
    const log = makeLogger({}); log.level = 'silent';
    startTracing('inbound', ${JSON.stringify(env)}, log).then(async (t) => {
      const loaded = Object.keys(require.cache).filter((k) => /@opentelemetry[\\/](sdk-trace|exporter|resources)/.test(k)).length > 0;
      console.log(JSON.stringify({ on: t !== undefined, loaded }));
      await t?.shutdown(100);
    });`;
  const { execFileSync } = await import('node:child_process');
  const run = (env: object) => JSON.parse(execFileSync(process.execPath, ['-e', script(env)], { encoding: 'utf8' })) as { on: boolean; loaded: boolean };
  expect(run({})).toEqual({ on: false, loaded: false });
  expect(run({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toEqual({ on: true, loaded: true });
});

it('spans are exported 64 at a time (our default, for spans with many links), or as OTEL_BSP_MAX_EXPORT_BATCH_SIZE says', async () => {
  const col = await collector();
  // a long delay: only a full batch is exported before it
  const { base } = await inbound('tr-batch', OTEL(col, { OTEL_BSP_SCHEDULE_DELAY: '60000' }));
  for (let i = 0; i < 40; i++) expect((await post(base, { a: i, b: i })).status).toBe(200);
  await eventually(() => col.requests[0], 20000, 'an export of a full batch');
  const first = JSON.parse(col.requests[0]!.body.toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }> };
  expect(first.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))).toHaveLength(64);
  const col2 = await collector();
  const { base: base2 } = await inbound('tr-batch2', OTEL(col2, { OTEL_BSP_SCHEDULE_DELAY: '60000', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10' }));
  for (let i = 0; i < 6; i++) expect((await post(base2, { a: i, b: i })).status).toBe(200);
  await eventually(() => col2.requests[0], 20000, 'an export of a full batch');
  const first2 = JSON.parse(col2.requests[0]!.body.toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }> };
  expect(first2.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))).toHaveLength(10);
});
