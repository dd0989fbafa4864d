import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { imageThread, type ThreadInit, type ThreadLogLevel } from '../src/runtime/interrogation/imageThread';
import { interrogationRequest } from '../src/streams/webhook/interrogation';
import type { ImageThread } from '../src/streams/interrogation/thread';
import { sign } from '../src/streams/webhook/client';
import { Receiver } from './helpers/receiver';
import { privateRedis, TestRedis } from './helpers/redis';

/**
 * CONTRACT 4.6: an interrogation run reads the image and sends its requests on a thread of its own
 * (src/runtime/interrogation/imageThread.ts). Against a real Redis and a real receiver: what it reads, what it
 * sends (the webhook's headers and signature), what it answers, and its faults — Redis away, a
 * command that times out, a request cut, a thread closed or dead.
 */
// the thread runs the built module (`npm test` builds first); this file tests it through the host
const THREAD = join(__dirname, '..', 'dist', 'src', 'runtime', 'interrogation', 'imageThreadMain.js');
const r = privateRedis();
const SECRET = 'whsec_' + Buffer.from('thread-test-secret').toString('base64');

const initFor = (port: number, url: string, o: Partial<Pick<ThreadInit, 'maxSize'>> & { filter?: ThreadInit['subscription']['webhook']['filter']; commandTimeout?: number } = {}): ThreadInit => ({
  redis: { host: '127.0.0.1', port, protocol: 2, ...(o.commandTimeout !== undefined ? { commandTimeout: o.commandTimeout } : {}) },
  retrySeconds: 0.2,
  subscription: {
    index: 0,
    webhook: { url, headers: { 'X-Plant': 'north' }, secrets: [SECRET], ...(o.filter !== undefined ? { filter: o.filter } : {}) },
    settings: { maxAttempts: 3, maxInFlight: 2, queueCap: 1000, circuitThreshold: 5, probeIntervalMs: 1000, autoRedrive: true, timeoutMs: 2000 },
    files: {},
  },
  userAgent: 'rest-connectors/test',
  cause: 'interrogation',
  p: '5-0',
  maxSize: o.maxSize ?? 3,
});

const logs: Array<{ level: ThreadLogLevel; fields: Record<string, unknown>; msg: string }> = [];
const threads: ImageThread[] = [];
const start = (init: ThreadInit, file = THREAD): ImageThread => {
  const t = imageThread(init, { file, log: (level, fields, msg) => void logs.push({ level, fields, msg }) });
  threads.push(t);
  return t;
};
const receivers: Receiver[] = [];
const receiver = async (...a: Parameters<typeof Receiver.start>) => {
  const x = await Receiver.start(...a);
  receivers.push(x);
  return x;
};
afterEach(async () => {
  for (const t of threads.splice(0)) t.close();
  for (const x of receivers.splice(0)) await x.close();
  logs.length = 0;
  await r.client.flushall();
});

/** Every request of the run: its size, and its body as the backlog would take it. */
const readAll = async (t: ImageThread) => {
  const out: Array<{ size: number; body: string }> = [];
  for (let n = await t.next(); n !== null; n = await t.next()) out.push({ size: n.size, body: (await t.take(`gi-5-0-${out.length + 1}`)).body });
  return out;
};
/** Request k as the lane has it: no body (the thread holds it). */
const request = (k: number, size = 1) => interrogationRequest('interrogation', '5-0', k, size);
const point = (casdu: number, ioa: number) => JSON.stringify({ casdu, ioa, type: 36, value: `${casdu}/${ioa}` });

it('reads the filtered image in casdu-then-ioa order, maxSize points a request, then null; keeps each body until it is taken or answered 2xx', async () => {
  const pairs: string[] = [];
  for (const c of [2, 1, 9]) for (const i of [30, 4, 17, 1]) pairs.push(`process:image:casdu:${c}:ioa:${i}`, point(c, i));
  await r.client.mset(...pairs);
  const t = start(initFor(r.redis.port, 'http://127.0.0.1:1/', { filter: { casdu: [[1, 2]] } }));
  const requests = await readAll(t);
  expect(requests.map((q) => q.size)).toEqual([3, 3, 2]);
  const sent = requests.flatMap((q) => (JSON.parse(q.body) as { datapoints: Array<{ casdu: number; ioa: number }>; cause: string }).datapoints);
  expect(sent.map((p) => `${p.casdu}/${p.ioa}`)).toEqual(['1/1', '1/4', '1/17', '1/30', '2/1', '2/4', '2/17', '2/30']);
  expect(requests.every((q) => (JSON.parse(q.body) as { cause: string }).cause === 'interrogation')).toBe(true);
  // taken: the thread has let go of it
  await expect(t.take('gi-5-0-1')).rejects.toThrow('the body of gi-5-0-1 is gone');
  await expect(firstValueFrom(t.post(request(1)))).rejects.toThrow('the body of gi-5-0-1 is gone');
});

it('sends a request with the webhook\'s headers and signature and answers with its status and Retry-After; after a 2xx the body is let go', async () => {
  await r.client.mset('process:image:casdu:1:ioa:1', point(1, 1), 'process:image:casdu:1:ioa:2', point(1, 2));
  const hook = await receiver((n) => (n === 1 ? { status: 503, headers: { 'Retry-After': '7' } } : { status: 200 }));
  const t = start(initFor(r.redis.port, hook.url));
  expect(await t.next()).toEqual({ size: 2 });
  expect(await firstValueFrom(t.post(request(1, 2)))).toEqual({ status: 503, retryAfter: '7' });
  expect(await firstValueFrom(t.post(request(1, 2)))).toEqual({ status: 200 });
  expect(hook.requests).toHaveLength(2);
  const q = hook.requests[1]!;
  expect(q.body).toBe(`{"datapoints":[${point(1, 1)},${point(1, 2)}],"cause":"interrogation"}`);
  expect(hook.requests[0]!.body).toBe(q.body);
  expect(q.headers).toMatchObject({ 'webhook-id': 'gi-5-0-1', 'x-plant': 'north', 'user-agent': 'rest-connectors/test', 'content-type': 'application/json' });
  expect(q.headers['webhook-signature']).toBe(sign(SECRET, 'gi-5-0-1', Number(q.headers['webhook-timestamp']), q.body));
  expect(q.headers.traceparent).toBeUndefined();
  await expect(t.take('gi-5-0-1')).rejects.toThrow('the body of gi-5-0-1 is gone');
});

it('memory of a body answered 2xx is used again (src/runtime/interrogation/bodyPool.ts): 40 requests of bodies that differ in size, two in flight, each arrives whole and its own; a request answered 503 goes out the same again', async () => {
  const pairs: string[] = [];
  const stored = (i: number) => JSON.stringify({ casdu: 1, ioa: i, type: 36, value: 'x'.repeat((i * 37) % 300) });
  for (let i = 0; i < 120; i++) pairs.push(`process:image:casdu:1:ioa:${i}`, stored(i));
  await r.client.mset(...pairs);
  const hook = await receiver((n) => (n === 7 ? { status: 503 } : { status: 200 }));
  const t = start(initFor(r.redis.port, hook.url));
  const sends: Array<Promise<unknown>> = [];
  for (let k = 1; ; k++) {
    const n = await t.next();
    if (n === null) break;
    // the one sent before stays in flight while this one is sent; a 503 is sent again at once
    const send = (): Promise<unknown> => firstValueFrom(t.post(request(k, n.size))).then((a) => ((a as { status: number }).status === 503 ? send() : a));
    sends.push(send());
    if (sends.length >= 2) await sends[sends.length - 2];
  }
  await Promise.all(sends);
  const want = (k: number) => `{"datapoints":[${[0, 1, 2].map((j) => stored((k - 1) * 3 + j)).join(',')}],"cause":"interrogation"}`;
  const byId = new Map<string, string[]>();
  for (const q of hook.requests) byId.set(String(q.headers['webhook-id']), [...(byId.get(String(q.headers['webhook-id'])) ?? []), q.body]);
  expect(byId.size).toBe(40);
  for (let k = 1; k <= 40; k++) for (const body of byId.get(`gi-5-0-${k}`)!) expect([k, body]).toEqual([k, want(k)]);
  expect(hook.requests).toHaveLength(41);
});

it('a body answered other than 2xx keeps its memory while bodies read after it are made: sent again, it is the same', async () => {
  const pairs: string[] = [];
  for (let i = 0; i < 9; i++) pairs.push(`process:image:casdu:1:ioa:${i}`, point(1, i));
  await r.client.mset(...pairs);
  const hook = await receiver((n) => (n === 1 ? { status: 503 } : { status: 200 }));
  const t = start(initFor(r.redis.port, hook.url));
  expect(await t.next()).toEqual({ size: 3 });
  expect(await firstValueFrom(t.post(request(1, 3)))).toEqual({ status: 503 });
  // request 2 answered 2xx (its memory free), request 3 read after both answers
  expect(await t.next()).toEqual({ size: 3 });
  expect(await firstValueFrom(t.post(request(2, 3)))).toEqual({ status: 200 });
  expect(await t.next()).toEqual({ size: 3 });
  expect(await firstValueFrom(t.post(request(3, 3)))).toEqual({ status: 200 });
  expect(await firstValueFrom(t.post(request(1, 3)))).toEqual({ status: 200 });
  const first = `{"datapoints":[${point(1, 0)},${point(1, 1)},${point(1, 2)}],"cause":"interrogation"}`;
  expect(hook.requests.map((q) => [q.headers['webhook-id'], q.body])).toEqual([
    ['gi-5-0-1', first],
    ['gi-5-0-2', `{"datapoints":[${point(1, 3)},${point(1, 4)},${point(1, 5)}],"cause":"interrogation"}`],
    ['gi-5-0-3', `{"datapoints":[${point(1, 6)},${point(1, 7)},${point(1, 8)}],"cause":"interrogation"}`],
    ['gi-5-0-1', first],
  ]);
});

it('a traceparent given with a request goes out with it (the main thread keeps the spans)', async () => {
  await r.client.set('process:image:casdu:1:ioa:1', point(1, 1));
  const hook = await receiver();
  const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const seen: string[] = [];
  const traced = imageThread({ ...initFor(r.redis.port, hook.url), cause: 'periodic', p: '9-0' }, {
    file: THREAD, log: () => undefined,
    trace: (b) => ({ call: () => ({ traceparent: parent, end: (o) => void seen.push(`call ${b.webhookId} ${o.status}`) }), end: (o) => void seen.push(`process ${o.status}`) }),
  });
  threads.push(traced);
  expect(await traced.next()).toEqual({ size: 1 });
  await firstValueFrom(traced.post(interrogationRequest('periodic', '9-0', 1, 1)));
  expect(hook.requests[0]!.headers).toMatchObject({ traceparent: parent, 'webhook-id': 'pi-9-0-1' });
  expect(hook.requests[0]!.body).toBe(`{"datapoints":[${point(1, 1)}],"cause":"periodic"}`);
  expect(seen).toEqual(['call pi-9-0-1 200', 'process 200']);
  // without tracing: none
  const t = start(initFor(r.redis.port, hook.url));
  await t.next();
  await firstValueFrom(t.post(request(1)));
  expect(hook.requests[1]!.headers.traceparent).toBeUndefined();
});

it('a receiver that is down: the request fails with the reason, its body is kept for the backlog, and the thread goes on', async () => {
  await r.client.set('process:image:casdu:1:ioa:1', point(1, 1));
  const hook = await receiver();
  const url = hook.url;
  await hook.close();
  receivers.length = 0;
  const t = start(initFor(r.redis.port, url, { maxSize: 1 }));
  expect(await t.next()).toEqual({ size: 1 });
  await expect(firstValueFrom(t.post(request(1)))).rejects.toThrow('network error ECONNREFUSED');
  expect((await t.take('gi-5-0-1')).body).toBe(`{"datapoints":[${point(1, 1)}],"cause":"interrogation"}`);
  expect(await t.next()).toBeNull();
});

it('close() ends the thread: a request waiting for its answer and every later call fail at once, with a clear error', async () => {
  await r.client.set('process:image:casdu:1:ioa:1', point(1, 1));
  const hook = await receiver(() => 'hang');
  const t = start(initFor(r.redis.port, hook.url));
  await t.next();
  const answer = lastValueFrom(t.post(request(1)));
  for (let i = 0; i < 100 && hook.requests.length === 0; i++) await new Promise((s) => setTimeout(s, 20));
  expect(hook.requests).toHaveLength(1);
  t.close();
  await expect(answer).rejects.toThrow('interrogation thread closed');
  await expect(t.next()).rejects.toThrow('interrogation thread closed');
  await expect(t.take('gi-5-0-1')).rejects.toThrow('interrogation thread closed');
  await expect(firstValueFrom(t.post(request(2)))).rejects.toThrow('interrogation thread closed');
});

it('a thread that dies fails what waits on it with its exit code', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-thread-'));
  const file = join(dir, 'dies.js');
  // answers nothing: the first message ends the thread
  writeFileSync(file, "require('node:worker_threads').parentPort.on('message', () => process.exit(3));\n");
  const t = start(initFor(r.redis.port, 'http://127.0.0.1:1/'), file);
  await expect(t.next()).rejects.toThrow('interrogation thread ended (exit code 3)');
  await expect(firstValueFrom(t.post(request(1)))).rejects.toThrow('interrogation thread ended (exit code 3)');
  await expect(t.take('gi-5-0-1')).rejects.toThrow('interrogation thread ended (exit code 3)');
});

it('Redis away when a read is asked for: the thread waits, its connection failures logged through the main thread; the read is answered once Redis is back', async () => {
  const own = await TestRedis.start();
  try {
    await own.stop();
    const t = start(initFor(own.port, 'http://127.0.0.1:1/'));
    const read = t.next();
    for (let i = 0; i < 100 && logs.length === 0; i++) await new Promise((s) => setTimeout(s, 20));
    expect(logs[0]).toMatchObject({ level: 'warn', fields: { role: 'image-reader', err: expect.stringContaining('ECONNREFUSED') }, msg: 'data store connection failed' });
    await own.start();
    const c = own.client();
    await c.set('process:image:casdu:4:ioa:2', point(4, 2));
    c.disconnect();
    expect(await read).toEqual({ size: 1 });
    expect((await t.take('gi-5-0-1')).body).toBe(`{"datapoints":[${point(4, 2)}],"cause":"interrogation"}`);
  } finally {
    await own.destroy();
  }
});

it('a command that times out fails the read with its reason (the lane begins the run again)', async () => {
  await r.client.set('process:image:casdu:1:ioa:1', point(1, 1));
  const t = start(initFor(r.redis.port, 'http://127.0.0.1:1/', { commandTimeout: 300 }));
  // connected first (a paused server would hold the connection's own handshake instead)
  for (let i = 0; i < 100 && !logs.some((l) => l.msg === 'data store connected'); i++) await new Promise((s) => setTimeout(s, 20));
  expect(logs).toContainEqual({ level: 'info', fields: { role: 'image-reader' }, msg: 'data store connected' });
  await r.client.call('CLIENT', 'PAUSE', '1500', 'ALL');
  await expect(t.next()).rejects.toThrow('Command timed out');
});
