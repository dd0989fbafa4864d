import { lastValueFrom, type Observable, of, Subject, takeUntil } from 'rxjs';
import { toBatch } from '../src/streams/read/batches';
import { redisBacklog, type RedisBacklogOptions } from '../src/streams/webhook/backlog';
import { backlogBatch, decodeBacklogEntry, type BacklogItem } from '../src/streams/webhook/backlogEntry';
import { bodyText, DATAPOINTS, requestBody } from '../src/streams/webhook/body';
import { webhookLane, type LaneObserver } from '../src/streams/webhook/lane';
import type { WebhookResponse } from '../src/streams/webhook/answers';
import { isOutOfMemory } from '../src/streams/store/replies';
import { compareIds } from '../src/streams/store/streamIds';
import { webhookKey } from '../src/streams/read/deliveryState';
import type { WebhookSubscription } from '../src/streams/webhook/subscription';
import { eventually } from './helpers/cli';
import { privateRedis } from './helpers/redis';

/** Invariants 5 and 7 at the top of src/streams/webhook/backlog.ts, against a real Redis. */
const r = privateRedis();
beforeEach(async () => {
  await r.client.config('SET', 'maxmemory', '0');
  await r.client.config('SET', 'maxmemory-policy', 'noeviction');
  await r.client.config('SET', 'stream-node-max-entries', '100');
  await r.client.flushall();
});

const STREAM = 'connectors:c:deadletter';
const URL = 'http://a/';
const run = <A>(o: Observable<A>) => lastValueFrom(o, { defaultValue: undefined as A });
const batchOf = (id: string) => toBatch([{ id, json: `{"v":"${id}"}` }]);
const backlogOf = (over: Partial<RedisBacklogOptions> = {}) => {
  const dropped: BacklogItem[] = [];
  const writeErrors: string[] = [];
  const backlog = redisBacklog({
    redis: r.client, connectorId: 'c', consumer: 'me', index: 0, url: URL, maxLength: 100000, retryMs: 50, leaseMs: 10_000,
    onDropped: (item) => dropped.push(item), onWriteError: (err) => writeErrors.push((err as Error).message), ...over,
  });
  return { backlog, dropped, writeErrors };
};
const append = (b: ReturnType<typeof backlogOf>['backlog'], id: string, reason: 'refused' | 'exhausted' = 'exhausted') =>
  run(b.append(batchOf(id), requestBody(batchOf(id)), reason, 'HTTP 503 after 5 attempts', 5));

it('5: an append that the cap makes trim reports, at once and each once, the entries of this webhook it took — also when they were refused (never redriven, never scanned)', async () => {
  const { backlog, dropped } = backlogOf({ maxLength: 5 });
  for (let i = 1; i <= 130; i++) await append(backlog, `${i}-0`, 'refused');
  // no scan has run (pending() was never called): what is reported, the appends found
  const [first] = (await r.client.xrange(STREAM, '-', '+', 'COUNT', 1)) as Array<[string, string[]]>;
  const trimmed = (await r.client.xlen(STREAM)) < 130 ? 130 - (await r.client.xlen(STREAM)) : 0;
  expect(trimmed).toBeGreaterThan(0);
  expect(dropped.length).toBe(trimmed);
  expect(new Set(dropped.map((d) => d.id)).size).toBe(dropped.length);
  expect(dropped.every((d) => compareIds(d.id, first![0]) < 0)).toBe(true);
  // a scan afterwards finds nothing more to report
  await run(backlog.pending());
  expect(dropped.length).toBe(trimmed);
  expect(backlog.size()).toBe(130 - trimmed);
});

it('5: an entry trimmed while it is being sent again is reported dropped only if that send fails — delivered, it was not lost', async () => {
  const { backlog, dropped } = backlogOf({ maxLength: 5 });
  for (let i = 1; i <= 3; i++) await append(backlog, `${i}-0`);
  const [first, second] = await run(backlog.pending());
  // both fetched to be sent (a probe, a redrive), then appends at the cap trim them from the stream
  expect(await run(backlog.fetch(first!))).not.toBeNull();
  expect(await run(backlog.fetch(second!))).not.toBeNull();
  const stillThere = async () => ((await r.client.xrange(STREAM, first!.id, second!.id)) as unknown[]).length > 0;
  for (let i = 4; i <= 400 && (await stillThere()); i++) await append(backlog, `${i}-0`);
  expect(await stillThere()).toBe(false);
  expect(dropped.filter((d) => d.id === first!.id || d.id === second!.id)).toEqual([]);
  // the first was delivered: never reported; the second failed again: it is gone, and reported now
  await run(backlog.remove(first!));
  await run(backlog.failedAgain(second!, 'HTTP 503 after 5 attempts', 10));
  await run(backlog.pending());
  expect(dropped.filter((d) => d.id === first!.id || d.id === second!.id).map((d) => d.id)).toEqual([second!.id]);
});

it('5 and 7: an entry failed again whose own new write makes the cap trim the old one is not reported dropped, also by a scan before the old one is deleted — it lives on under its new ID', async () => {
  // one entry per stream node: MAXLEN ~ trims entry by entry, so the rewrite's append takes the oldest
  await r.client.config('SET', 'stream-node-max-entries', '1');
  let release: () => void = () => undefined;
  const held = new Promise<void>((res) => (release = res));
  // the real Redis, with the old entry's deletion held back: the window a concurrent scan can fall in
  const slowDelete = new Proxy(r.client, {
    get: (target, key) => (key === 'xdel' ? async (...args: [string, ...string[]]) => (await held, target.xdel(...args)) : Reflect.get(target, key, target)),
  });
  const { backlog, dropped } = backlogOf({ maxLength: 5, redis: slowDelete });
  for (let i = 1; i <= 5; i++) await append(backlog, `${i}-0`);
  const [oldest] = await run(backlog.pending());
  expect(await run(backlog.fetch(oldest!))).not.toBeNull();
  const again = run(backlog.failedAgain(oldest!, 'HTTP 503 after 5 attempts', 10));
  // the new entry is written, and its append trimmed the old one
  await eventually(async () => ((await r.client.xrange(STREAM, oldest!.id, oldest!.id)) as unknown[]).length === 0 ? true : undefined, 10000, 'the old entry trimmed');
  expect(await r.client.xlen(STREAM)).toBe(5);
  await run(backlog.pending());
  expect(dropped).toEqual([]);
  release();
  await again;
  const items = await run(backlog.pending());
  expect(items.map((i) => [i.webhookId, i.attempts])).toEqual([['1-0_1-0', 10], ['2-0_2-0', 5], ['3-0_3-0', 5], ['4-0_4-0', 5], ['5-0_5-0', 5]]);
  expect(items.some((i) => i.id === oldest!.id)).toBe(false);
  expect(dropped).toEqual([]);
});

it('7: a failed-again entry that Redis refuses to write (out of memory) stays known and in the stream; it is written anew once Redis has room', async () => {
  const { backlog, writeErrors } = backlogOf();
  await append(backlog, '1-0');
  const [item] = await run(backlog.pending());
  await r.client.config('SET', 'maxmemory', '1');
  let landed = false;
  const again = backlog.failedAgain(item!, 'HTTP 503 after 5 attempts', 10);
  const done = run(again).then(() => (landed = true));
  await eventually(() => (writeErrors.filter(isOutOfMemory).length >= 2 ? true : undefined), 10000, 'two refused writes');
  expect(landed).toBe(false);
  expect(((await r.client.xrange(STREAM, '-', '+')) as unknown[]).length).toBe(1);
  // known all the while: counted, and a scan (reads are not refused) still lists it to redrive
  expect(backlog.size()).toBe(1);
  expect((await run(backlog.pending())).map((i) => i.id)).toEqual([item!.id]);
  await r.client.config('SET', 'maxmemory', '0');
  await done;
  const entries = (await r.client.xrange(STREAM, '-', '+')) as Array<[string, string[]]>;
  expect(entries.map(([id, f]) => [id === item!.id, f[f.indexOf('attempts') + 1]])).toEqual([[false, '10']]);
  expect((await run(backlog.pending())).map((i) => [i.webhookId, i.attempts])).toEqual([['1-0_1-0', 10]]);
});

it('7, in a lane: a redrive whose failure Redis refuses to record is redriven again once Redis has room, and delivered — without a restart', async () => {
  const { backlog, writeErrors } = backlogOf();
  await append(backlog, '1-0');
  const answered: number[] = [];
  let healthy = false;
  const post = () => {
    // the first redrive fails, and Redis is full when its failure is written down
    const status = healthy ? 200 : 503;
    if (!healthy) void r.client.config('SET', 'maxmemory', '1');
    answered.push(status);
    return of<WebhookResponse>({ status });
  };
  const subscription: WebhookSubscription = {
    index: 0, webhook: { url: URL, headers: {}, secrets: [] }, key: webhookKey(0, URL), host: 'a', files: {},
    settings: { maxAttempts: 1, maxInFlight: 1, queueCap: 1000, circuitThreshold: 1000, probeIntervalMs: 50, autoRedrive: true, timeoutMs: 1000 },
  };
  const quiet: LaneObserver = { attempt: () => undefined, finished: () => undefined, queueDepth: () => undefined, status: () => undefined, redriven: () => undefined };
  const stop = new Subject<void>();
  const sub = new Subject<never>().pipe(webhookLane({ subscription, post, backoff: () => 10, backlog, observer: quiet }), takeUntil(stop)).subscribe();
  try {
    await eventually(() => (answered.length >= 1 ? true : undefined), 10000, 'the first redrive');
    // its failure cannot be written while Redis is full: the lane waits (the write retried), the entry stays
    await eventually(() => (writeErrors.filter(isOutOfMemory).length >= 2 ? true : undefined), 10000, 'the failure refused twice');
    expect(answered).toEqual([503]);
    expect(((await r.client.xrange(STREAM, '-', '+')) as unknown[]).length).toBe(1);
    healthy = true;
    await r.client.config('SET', 'maxmemory', '0');
    await eventually(async () => (answered.includes(200) && (await r.client.xlen(STREAM)) === 0 ? true : undefined), 10000, 'the entry delivered and removed');
    expect(answered).toEqual([503, 200]);
  } finally {
    stop.next();
    sub.unsubscribe();
  }
});

it('CONTRACT 4.7: an entry keeps its batch\'s cause and content type, through a failure again too; sent again as a batch of that cause; an unknown cause is left out', async () => {
  const { backlog } = backlogOf();
  const asked = { ...batchOf('3-0'), webhookId: 'pi-3-0-1', cause: 'periodic' as const };
  await run(backlog.append(asked, { bytes: Buffer.from('m,ioa=1 value=1\n'), contentType: 'text/plain; charset=utf-8' }, 'circuit', 'circuit open', 0));
  const [item] = await run(backlog.pending());
  await run(backlog.failedAgain(item!, 'HTTP 503', 1));
  const [again] = await run(backlog.pending());
  const stored = (await run(backlog.fetch(again!)))!;
  expect([stored.cause, stored.contentType, stored.body]).toEqual(['periodic', 'text/plain; charset=utf-8', 'm,ioa=1 value=1\n']);
  const batch = backlogBatch({ id: again!.id, webhookId: again!.webhookId, body: stored.body, contentType: stored.contentType ?? 'application/json', traces: stored.traces, cause: stored.cause });
  expect([batch.cause, bodyText(requestBody(batch)), requestBody(batch).contentType]).toEqual(['periodic', 'm,ioa=1 value=1\n', 'text/plain; charset=utf-8']);
  // a live batch's entry has none; a cause written by something else is not sent as a header
  await append(backlog, '4-0');
  await r.client.xadd(STREAM, '*', 'webhook', '0', 'url', URL, 'webhookId', '5-0_5-0', 'error', 'x', 'attempts', '1', 'body', '{}', 'reason', 'exhausted', 'cause', 'bogus');
  const entries = (await r.client.xrange(STREAM, '-', '+')).map(([id, f]) => decodeBacklogEntry(id, f));
  expect(entries.map((e) => e.cause)).toEqual(['periodic', undefined, undefined]);
});
