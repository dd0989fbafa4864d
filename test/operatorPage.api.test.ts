import { buildInbound } from '../src/runtime/inbound';
import { buildOutbound } from '../src/runtime/outbound';
import { PAGE_CSP } from '../src/http/app/operatorPage';
import { postJson, request } from './helpers/http';
import { startInProcess, type InProcess } from './helpers/inProcess';
import { Receiver } from './helpers/receiver';
import { privateRedis } from './helpers/redis';

/**
 * CONTRACT 6.8 in the test process: the page and its files (headers, `Http:OperatorPage`), the
 * backlog endpoints (shapes, paging, limits, 404, `operate`) with the code of `deadletter`, and the
 * inbound's `GET /api/mappings` and `POST /api/mappings/test` (nothing written).
 */
const r = privateRedis();
const open: InProcess[] = [];
const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  await Promise.all(receivers.splice(0).map((x) => x.close()));
  await r.client.flushall();
});

const KEYS = { Authentication__ApiKeys: 'operator=key-op,viewer=key-viewer,scada=key-scada' };
const CALLERS = { operator: { operate: true, casdu: ['0-65535'] }, viewer: { casdu: [1] }, scada: { topics: ['plant-a/*'] } };
const as = (name: string) => ({ Authorization: `Bearer key-${name === 'operator' ? 'op' : name}` });

/** A refused (not redrivable) backlog entry of webhook `w`, body `body`. */
const entry = (id: string, w: number, url: string, n: number, body = `{"datapoints":[{"seq":${n}}]}`) =>
  r.client.xadd('connectors:test-connector:deadletter', id, 'webhook', String(w), 'url', url, 'webhookId', `${n}-0_${n}-0`, 'error', `HTTP 400 <b>${n}</b>`,
    'attempts', '1', 'body', body, 'reason', 'refused');

const outbound = async (extra: object = {}, env: Record<string, string> = {}) => {
  const a = await Receiver.start();
  const b = await Receiver.start();
  receivers.push(a, b);
  const c = await startInProcess('outbound', buildOutbound, r.redis, { webhooks: [{ url: a.url }, { url: b.url }], ...extra }, env);
  open.push(c);
  return { c, a, b };
};

describe('the page and its files', () => {
  it('GET / answers the page with the CSP of 6.8, nosniff and no-referrer; /ui/ serves the scripts and the style with the last two; nothing else under /ui/', async () => {
    const { c } = await outbound();
    const page = await request(`${c.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(PAGE_CSP);
    expect(PAGE_CSP).toBe("default-src 'self'; frame-ancestors 'none'");
    expect([page.headers['x-content-type-options'], page.headers['referrer-policy']]).toEqual(['nosniff', 'no-referrer']);
    // no inline script or style, nothing from elsewhere
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc="\/ui\/)|<style|style=|https?:\/\//);
    expect(page.text).toContain('data-connector="outbound"');
    for (const [file, type] of [['page.js', 'text/javascript; charset=utf-8'], ['model.js', 'text/javascript; charset=utf-8'], ['page.css', 'text/css; charset=utf-8']]) {
      const f = await request(`${c.url}/ui/${file}`);
      expect([file, f.status, f.headers['content-type'], f.headers['x-content-type-options'], f.headers['referrer-policy']]).toEqual([file, 200, type, 'nosniff', 'no-referrer']);
    }
    expect((await request(`${c.url}/ui/page.js`)).text).toContain("from './model.js'");
    for (const path of ['/ui/nope.js', '/ui/../package.json', '/ui/']) expect([path, (await request(`${c.url}${path}`)).status]).toEqual([path, 404]);
  });

  it('Http:OperatorPage=false: / and /ui/* are unknown paths (404), the API is unchanged', async () => {
    const { c } = await outbound({}, { Http__OperatorPage: 'false' });
    for (const path of ['/', '/ui/page.js', '/ui/page.css']) {
      const got = await request(`${c.url}${path}`);
      expect([path, got.status, got.json().code]).toEqual([path, 404, 'not_found']);
    }
    expect((await request(`${c.url}/api/webhooks`)).status).toBe(200);
  });

  it('the page needs no key; the endpoints it calls do', async () => {
    const { c } = await outbound({ callers: CALLERS }, KEYS);
    expect((await request(`${c.url}/`)).status).toBe(200);
    expect((await request(`${c.url}/ui/page.js`)).status).toBe(200);
    expect((await request(`${c.url}/api/webhooks`)).status).toBe(401);
  });
});

describe('the backlog endpoints (CONTRACT 6.8, the semantics of deadletter list/replay/purge --webhook N)', () => {
  it('GET …/backlog: a webhook\'s entries oldest first, paged by limit and next, with the fields of 6.8 and the first 2,048 bytes of the body', async () => {
    const { c, a, b } = await outbound();
    const long = `{"datapoints":[{"text":"${'é'.repeat(1500)}"}]}`;
    await entry('1000-0', 0, a.url, 1);
    await entry('1001-0', 1, b.url, 2);
    await entry('1002-0', 0, a.url, 3, long);
    await entry('1003-0', 0, a.url, 4);
    const first = await request(`${c.url}/api/webhooks/0/backlog?limit=2`);
    expect(first.status).toBe(200);
    expect(first.json()).toEqual({
      entries: [
        { id: '1000-0', reason: 'refused', webhookId: '1-0_1-0', attempts: 1, error: 'HTTP 400 <b>1</b>', contentType: 'application/json', bodyBytes: 26, bodyPreview: '{"datapoints":[{"seq":1}]}', at: new Date(1000).toISOString() },
        expect.objectContaining({ id: '1002-0', webhookId: '3-0_3-0', bodyBytes: Buffer.byteLength(long) }),
      ],
      next: '1002-0',
    });
    const preview = first.json().entries[1].bodyPreview as string;
    // cut at 2,048 bytes, never inside a character
    expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(2048);
    expect(Buffer.byteLength(preview)).toBeGreaterThan(2045);
    expect(long.startsWith(preview)).toBe(true);
    const second = await request(`${c.url}/api/webhooks/0/backlog?limit=2&after=1002-0`);
    expect(second.json()).toEqual({ entries: [expect.objectContaining({ id: '1003-0' })], next: null });
    expect((await request(`${c.url}/api/webhooks/0/backlog`)).json().entries.map((e: { id: string }) => e.id)).toEqual(['1000-0', '1002-0', '1003-0']);
    expect((await request(`${c.url}/api/webhooks/1/backlog`)).json()).toEqual({ entries: [expect.objectContaining({ id: '1001-0' })], next: null });
  });

  it('limits: limit an integer 1..500 (default 100) and after an entry ID, else 400 problem details; an index not configured is 404', async () => {
    const { c } = await outbound();
    for (const q of ['limit=0', 'limit=501', 'limit=x', 'limit=1.5', 'limit=-1', 'limit=', 'limit=1&limit=2', 'after=abc', 'after=1-0&after=2-0']) {
      const got = await request(`${c.url}/api/webhooks/0/backlog?${q}`);
      expect([q, got.status, got.headers['content-type'], got.json().status]).toEqual([q, 400, 'application/problem+json; charset=utf-8', 400]);
    }
    for (const q of ['limit=1', 'limit=500', 'after=5-0']) expect([q, (await request(`${c.url}/api/webhooks/0/backlog?${q}`)).status]).toEqual([q, 200]);
    for (const [method, path] of [['GET', '/api/webhooks/2/backlog'], ['GET', '/api/webhooks/x/backlog'], ['POST', '/api/webhooks/9/backlog/replay'], ['DELETE', '/api/webhooks/2/backlog']] as const) {
      const got = await request(`${c.url}${path}`, { method });
      expect([method, path, got.status, got.json().status]).toEqual([method, path, 404, 404]);
    }
  });

  it('POST …/backlog/replay sends each entry of that webhook once under its webhook-id and deletes what was delivered; DELETE …/backlog purges that webhook\'s entries only', async () => {
    const { c, a, b } = await outbound();
    await entry('1000-0', 0, a.url, 1);
    await entry('1001-0', 1, b.url, 2);
    await entry('1002-0', 0, a.url, 3);
    const replayed = await request(`${c.url}/api/webhooks/0/backlog/replay`, { method: 'POST' });
    expect([replayed.status, replayed.json()]).toEqual([200, { delivered: 2, failed: 0 }]);
    expect(a.delivered().map((x) => x.headers['webhook-id'])).toEqual(['1-0_1-0', '3-0_3-0']);
    expect(b.requests).toEqual([]);
    expect((await r.client.xrange('connectors:test-connector:deadletter', '-', '+')).map(([id]) => id)).toEqual(['1001-0']);
    await entry('1003-0', 0, a.url, 4);
    const purged = await request(`${c.url}/api/webhooks/1/backlog`, { method: 'DELETE' });
    expect([purged.status, purged.json()]).toEqual([200, { purged: 1 }]);
    expect((await r.client.xrange('connectors:test-connector:deadletter', '-', '+')).map(([id]) => id)).toEqual(['1003-0']);
    expect(a.requests).toHaveLength(2);
  });

  it('pages past the stream\'s own reading pages: 250 entries of two webhooks interleaved, read 120 at a time, each of webhook 1 once, in order', async () => {
    const { c, a, b } = await outbound();
    const pipe = r.client.pipeline();
    for (let n = 0; n < 250; n++) {
      const [w, url] = n % 2 === 0 ? [0, a.url] : [1, b.url];
      pipe.xadd('connectors:test-connector:deadletter', `${1000 + n}-0`, 'webhook', String(w), 'url', url, 'webhookId', `${n}-0_${n}-0`, 'error', 'x', 'attempts', '1', 'body', '{}', 'reason', 'refused');
    }
    await pipe.exec();
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: { entries: Array<{ webhookId: string }>; next: string | null } = (await request(`${c.url}/api/webhooks/1/backlog?limit=120${after === null ? '' : `&after=${after}`}`)).json();
      seen.push(...page.entries.map((e) => e.webhookId));
      after = page.next;
      pages++;
    } while (after !== null);
    expect(pages).toBe(2);
    expect(seen).toEqual(Array.from({ length: 125 }, (_, k) => `${2 * k + 1}-0_${2 * k + 1}-0`));
  });

  it('a replay sends the entries present when it began: entries appended meanwhile (the webhook failing again) wait for the next', async () => {
    let appended = 0;
    // each request that arrives appends one more entry, as the lane would while its webhook is down
    // (at most 150: a replay that walked into them would otherwise never end)
    const hook = await Receiver.start(() => {
      if (appended < 150) void entry(`${5000 + appended}-0`, 0, hook.url, 1000 + appended++);
      return { status: 200 };
    });
    receivers.push(hook);
    const c = await startInProcess('outbound', buildOutbound, r.redis, { webhooks: [{ url: hook.url }] });
    open.push(c);
    // more than a reading page (100): the replay reads again after the appends began
    for (let n = 1; n <= 101; n++) await entry(`${1000 + n}-0`, 0, hook.url, n);
    const got = await request(`${c.url}/api/webhooks/0/backlog/replay`, { method: 'POST' });
    // the fault took effect: entries were appended while the replay ran
    expect(appended).toBe(101);
    expect([got.status, got.json()]).toEqual([200, { delivered: 101, failed: 0 }]);
    expect(hook.requests.map((q) => q.headers['webhook-id'])).toEqual(Array.from({ length: 101 }, (_, k) => `${k + 1}-0_${k + 1}-0`));
    expect(await r.client.xlen('connectors:test-connector:deadletter')).toBe(101);
  });

  it('a replay answered with a failure keeps the entry and counts it', async () => {
    const failing = await Receiver.start(() => ({ status: 400 }));
    receivers.push(failing);
    const c = await startInProcess('outbound', buildOutbound, r.redis, { webhooks: [{ url: failing.url }] });
    open.push(c);
    await entry('1000-0', 0, failing.url, 1);
    const got = await request(`${c.url}/api/webhooks/0/backlog/replay`, { method: 'POST' });
    // the fault took effect: the receiver was asked and refused
    expect(failing.requests.map((x) => x.status)).toEqual([400]);
    expect([got.status, got.json()]).toEqual([200, { delivered: 0, failed: 1 }]);
    expect(await r.client.xlen('connectors:test-connector:deadletter')).toBe(1);
  });

  it('callers: without operate every backlog endpoint is 403 (nothing sent, nothing deleted); with it, allowed', async () => {
    const { c, a } = await outbound({ callers: CALLERS }, KEYS);
    await entry('1000-0', 0, a.url, 1);
    for (const [method, path] of [['GET', '/api/webhooks/0/backlog'], ['POST', '/api/webhooks/0/backlog/replay'], ['DELETE', '/api/webhooks/0/backlog']] as const) {
      const got = await request(`${c.url}${path}`, { method, headers: as('viewer') });
      expect([method, got.status, got.json().detail]).toEqual([method, 403, "caller 'viewer' may not operate the webhooks"]);
    }
    expect([a.requests.length, await r.client.xlen('connectors:test-connector:deadletter')]).toEqual([0, 1]);
    expect((await request(`${c.url}/api/webhooks/0/backlog`, { headers: as('operator') })).json().entries).toHaveLength(1);
    expect((await request(`${c.url}/api/webhooks/0/backlog`, { method: 'DELETE', headers: as('operator') })).json()).toEqual({ purged: 1 });
  });
});

describe('the inbound side (CONTRACT 6.8): GET /api/mappings, POST /api/mappings/test', () => {
  const MAPPINGS = [
    { name: 'level', topic: 'plant-a/tank', casdu: 1, ioa: 10, type: 36, valuePath: 'level', timestampPath: 'ts' },
    { name: 'on', topic: 'plant-b', casdu: 2, ioa: 20, type: 1, valuePath: 'on', valueType: 'bool' },
  ];
  const inbound = async (extra: object = {}, env: Record<string, string> = {}) => {
    const c = await startInProcess('inbound', buildInbound, r.redis, { mappings: MAPPINGS, ...extra }, env);
    open.push(c);
    return c;
  };
  /** Every key in the private Redis: what a test wrote, and nothing else. */
  const keys = async () => (await r.client.keys('*')).sort();

  it('GET /api/mappings: the mappings as configured (defaults filled in); with callers, only the topics the caller may write', async () => {
    const c = await inbound();
    expect((await request(`${c.url}/api/mappings`)).json()).toEqual({
      mappings: [
        { topic: 'plant-a/tank', name: 'level', casdu: 1, ioa: 10, type: 36, valuePath: 'level', valueType: 'float', timestampPath: 'ts', array: 'each' },
        { topic: 'plant-b', name: 'on', casdu: 2, ioa: 20, type: 1, valuePath: 'on', valueType: 'bool', array: 'each' },
      ],
    });
    await Promise.all(open.splice(0).map((x) => x.close()));
    const guarded = await inbound({ callers: CALLERS }, KEYS);
    expect((await request(`${guarded.url}/api/mappings`, { headers: as('scada') })).json().mappings.map((m: { topic: string }) => m.topic)).toEqual(['plant-a/tank']);
    expect((await request(`${guarded.url}/api/mappings`, { headers: as('viewer') })).json()).toEqual({ mappings: [] });
    expect((await request(`${guarded.url}/api/mappings`)).status).toBe(401);
  });

  it('POST /api/mappings/test: what mappings test prints (200 with the points, 422 with the failures), and nothing written — no point, no stream entry, no error entry', async () => {
    const c = await inbound();
    const before = await keys();
    const ok = await postJson(`${c.url}/api/mappings/test?topic=plant-a/tank`, { level: 4.5, ts: '2026-11-28T10:00:00Z' });
    expect(ok.status).toBe(200);
    expect(ok.json()).toEqual({ topic: 'plant-a/tank', succeeded: ['level'], datapoints: [{ casdu: 1, ioa: 10, type: 36, value: 4.5, timestamp: '2026-11-28T10:00:00.000Z', source: 'test-connector' }] });
    const bad = await postJson(`${c.url}/api/mappings/test?topic=plant-a/tank`, { level: 'high' });
    expect(bad.status).toBe(422);
    expect(bad.json()).toMatchObject({ topic: 'plant-a/tank', failed: [expect.objectContaining({ signalId: 'level' })] });
    // a POST of the same would have written: the test endpoint did not
    expect(await keys()).toEqual(before);
    expect((await postJson(`${c.url}/api/mappings/test?topic=nope`, {})).status).toBe(404);
    expect((await postJson(`${c.url}/api/mappings/test`, {})).status).toBe(400);
    expect((await postJson(`${c.url}/api/mappings/test?topic=plant-b`, '{not json')).status).toBe(400);
    expect((await request(`${c.url}/api/mappings/test?topic=plant-b`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{}' })).status).toBe(415);
    expect(await keys()).toEqual(before);
  });

  it('POST /api/mappings/test follows the caller\'s topics as a POST does: 403 problem details for a topic it may not write', async () => {
    const c = await inbound({ callers: CALLERS }, KEYS);
    const refused = await postJson(`${c.url}/api/mappings/test?topic=plant-b`, { on: true }, as('scada'));
    expect([refused.status, refused.json().detail]).toEqual([403, "caller 'scada' may not write topic 'plant-b'"]);
    expect((await postJson(`${c.url}/api/mappings/test?topic=plant-a/tank`, { level: 1, ts: '2026-11-28T10:00:00Z' }, as('scada'))).status).toBe(200);
    expect(await keys()).toEqual([]);
  });
});
