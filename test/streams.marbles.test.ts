import { map, NEVER, Observable, of, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { batches, toBatch, type Batch } from '../src/streams/read/batches';
import type { LaneBacklog } from '../src/streams/webhook/backlog';
import { byStreamOrder, REDRIVABLE, type BacklogItem, type BacklogReason } from '../src/streams/webhook/backlogEntry';
import { bodyText, DATAPOINTS, requestBody } from '../src/streams/webhook/body';
import type { PostBatch, WebhookResponse } from '../src/streams/webhook/answers';
import { memoryDisabledMark, type DisabledMark } from '../src/streams/webhook/disabledMarks';
import { webhookLane, type LaneObserver, type LaneOptions, type LaneResult } from '../src/streams/webhook/lane';
import type { Prepared } from '../src/streams/webhook/body';
import type { DecodedEntry, StreamEntry } from '../src/streams/read/entries';
import { pushPipeline$, type PipelineEvent } from '../src/streams/push/pipeline';
import { readUpdates$, wholeBatches, type ConsumerInfo, type ReaderOptions, type ReadChunk, type StreamPort } from '../src/streams/read/reader';
import { regroup } from '../src/streams/read/regroup';
import { inFlightEntries } from '../src/streams/read/inFlight';
import type { Webhook } from '../src/config/webhookSettings';
import { webhookKey } from '../src/streams/read/deliveryState';
import { makeSubscriptions, type DeliverySettings, type WebhookSubscription } from '../src/streams/webhook/subscription';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const entry = (id: string): DecodedEntry => ({ id, json: JSON.stringify({ v: id }) });
const raw = (id: string): StreamEntry => ({ id, fields: ['casdu', '1', 'ioa', id, 'source', 's', 'data', `{"v":"${id}"}`] });
const batchOf = (...ids: string[]): Batch => toBatch(ids.map(entry));
const hook = (url: string): Webhook => ({ url, headers: {}, secrets: [] });
const quiet: LaneObserver = { attempt: () => undefined, finished: () => undefined, queueDepth: () => undefined, status: () => undefined, redriven: () => undefined };

/** An in-memory backlog: entries in append order; `pending` sorts them as the live one does. */
const memoryBacklog = (ts?: TestScheduler) => {
  let next = 0;
  const entries: Array<BacklogItem & { reason: BacklogReason; error: string; body: string; traces: string }> = [];
  const log: string[] = [];
  const backlog: LaneBacklog = {
    append: (b, body, reason, error, attempts) => {
      entries.push({ id: `${++next}-0`, webhookId: b.webhookId, attempts, reason, error, body: bodyText(body), traces: '' });
      log.push(`${b.ids.join('') || b.webhookId}:${reason}:${error}:${attempts}${ts ? `@${ts.now()}` : ''}`);
      return of(1);
    },
    pending: () => of(entries.filter((e) => REDRIVABLE.has(e.reason)).map((e) => ({ id: e.id, webhookId: e.webhookId, attempts: e.attempts })).sort(byStreamOrder)),
    fetch: (item) => of(entries.find((e) => e.id === item.id) ?? null),
    remove: (item) => {
      entries.splice(entries.findIndex((e) => e.id === item.id), 1);
      return of(1);
    },
    failedAgain: (item, error, attempts) => {
      const e = entries.find((x) => x.id === item.id)!;
      Object.assign(e, { error, attempts });
      return of(1);
    },
    lease: () => of(true),
  };
  return { backlog, entries, log };
};
const ok: WebhookResponse = { status: 200 };
const fail: WebhookResponse = { status: 500 };

describe('batches (bufferTime over chunks)', () => {
  it('closes a batch when the window ends', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const src = cold<readonly DecodedEntry[]>('a 15ms b 30ms |', { a: [entry('a')], b: [entry('b')] });
      expectObservable(src.pipe(batches(10, 100), (s) => s.pipe(mapIds()))).toBe('10ms x 9ms y 26ms |', { x: 'a', y: 'b' });
    });
  });

  it('closes a batch when it is full, and starts the next window then', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const src = cold<readonly DecodedEntry[]>('abcd 30ms |', { a: [entry('a')], b: [entry('b')], c: [entry('c')], d: [entry('d')] });
      expectObservable(src.pipe(batches(10, 3), (s) => s.pipe(mapIds()))).toBe('--x 9ms y 21ms |', { x: 'abc', y: 'd' });
    });
  });

  it('emits nothing for empty windows, and nothing at all for a never-emitting source', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<readonly DecodedEntry[]>('100ms |').pipe(batches(10, 3))).toBe('100ms |');
      expectObservable(cold<readonly DecodedEntry[]>('-').pipe(batches(10, 3)), '^ 200ms !').toBe('');
    });
  });

  it('flushes the open batch when the source completes, and passes a source error on', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<readonly DecodedEntry[]>('a 3ms |', { a: [entry('a')] }).pipe(batches(10, 3), mapIds())).toBe('4ms (x|)', { x: 'a' });
      expectObservable(cold<readonly DecodedEntry[]>('a 3ms #', { a: [entry('a')] }).pipe(batches(10, 3), mapIds())).toBe('4ms #');
    });
  });

  it('cuts a chunk where a batch is full: the rest goes on in the next window, which starts then', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const src = cold<readonly DecodedEntry[]>('a 4ms b 30ms |', { a: [entry('a'), entry('b')], b: [entry('c'), entry('d'), entry('e'), entry('f'), entry('g'), entry('h'), entry('i')] });
      // b arrives at 5 ms: [a b c] is full at once, [d e f] too, [g h i] as well; the window begun at 5 ms then ends empty at 15 ms
      expectObservable(src.pipe(batches(10, 3), mapIds())).toBe('5ms (xyz) 26ms |', { x: 'abc', y: 'def', z: 'ghi' });
      // a window that ends with part of a chunk in it: [a b] at 10 ms; the next chunk fills none
      expectObservable(cold<readonly DecodedEntry[]>('a 14ms b 30ms |', { a: [entry('a'), entry('b')], b: [entry('c')] }).pipe(batches(10, 3), mapIds())).toBe('10ms x 9ms y 25ms |', { x: 'ab', y: 'c' });
      // a chunk that fills the open batch and leaves less than a batch: the rest waits for its window
      expectObservable(cold<readonly DecodedEntry[]>('a 4ms b 30ms |', { a: [entry('a'), entry('b')], b: [entry('c'), entry('d'), entry('e')] }).pipe(batches(10, 3), mapIds())).toBe('5ms x 9ms y 20ms |', { x: 'abc', y: 'de' });
    });
  });

  it('never emits a chunk array it was given: the batch owns its entries', () => {
    const chunk = [entry('a'), entry('b')];
    const got: Array<readonly DecodedEntry[]> = [];
    newScheduler().run(({ cold, expectObservable }) => {
      const src = cold<readonly DecodedEntry[]>('a 20ms |', { a: chunk });
      expectObservable(src.pipe(batches(10, 3, undefined, (es) => (got.push(es), es.length)))).toBe('10ms x 10ms |', { x: 2 });
    });
    expect(got).toHaveLength(1);
    expect(got[0]).not.toBe(chunk);
    expect(got[0]!.map((e) => e.id)).toEqual(['a', 'b']);
  });

  it('keys the batch by its first and last stream IDs and serialises the body once', () => {
    const b = batchOf('1-0', '1-1', '2-0');
    expect(b.webhookId).toBe('1-0_2-0');
    expect(JSON.parse(bodyText(requestBody(b)))).toEqual({ datapoints: [{ v: '1-0' }, { v: '1-1' }, { v: '2-0' }] });
    expect(requestBody(b)).toBe(requestBody(b));
  });
});

function mapIds() {
  return (s: Observable<Batch>) =>
    new Observable<string>((sub) =>
      s.subscribe({ next: (b) => sub.next(b.ids.join('')), error: (e) => sub.error(e), complete: () => sub.complete() }),
    );
}

/** A scripted webhook: answers per batch and attempt, after `latency` frames; records attempt times. */
const scripted = (
  ts: TestScheduler,
  answer: (batch: Batch, attempt: number) => WebhookResponse | 'hang' | 'error',
  latency = 5,
) => {
  const attempts: Array<{ batch: string; at: number }> = [];
  /** The `v` of each request's points (what a receiver would see, also for redriven batches). */
  const bodies: string[] = [];
  const counts = new Map<string, number>();
  const post: PostBatch = (batch) => {
    const n = (counts.get(batch.webhookId) ?? 0) + 1;
    counts.set(batch.webhookId, n);
    attempts.push({ batch: batch.ids.join(''), at: ts.now() });
    bodies.push((JSON.parse(bodyText(requestBody(batch))) as { datapoints: Array<{ v: string }> }).datapoints.map((p) => p.v).join(','));
    const a = answer(batch, n);
    if (a === 'hang') return NEVER;
    const body$ = a === 'error' ? ts.createColdObservable<WebhookResponse>(`${latency}ms #`, undefined, new Error('ECONNRESET')) : ts.createColdObservable<WebhookResponse>(`${latency}ms (r|)`, { r: a });
    return body$;
  };
  // Requests open at once: every attempt is open from its start for `latency` frames.
  const maxOpen = () => Math.max(0, ...attempts.map((a) => attempts.filter((b) => b.at <= a.at && a.at < b.at + latency).length));
  return { post, attempts, bodies, maxOpen };
};

/** A lane over a subscription with these settings (the rest as below) and this backlog (else an in-memory one). */
type LaneOver = Partial<DeliverySettings> & {
  readonly index?: number; readonly webhook?: Webhook; readonly backlog?: LaneBacklog; readonly observer?: LaneObserver; readonly disabled?: DisabledMark;
  readonly render?: LaneOptions['render'];
  readonly format?: LaneOptions['format'];
};
const lane = (ts: TestScheduler, post: PostBatch, over: LaneOver = {}, deadLettered: string[] = []) => {
  const mem = memoryBacklog();
  const { index = 0, webhook = hook('http://a/'), backlog, observer = quiet, disabled, render, format, ...settings } = over;
  const subscription: WebhookSubscription = {
    index, webhook, key: webhookKey(index, webhook.url), host: new URL(webhook.url).host, files: {},
    settings: { maxAttempts: 5, maxInFlight: 4, queueCap: 1000, circuitThreshold: 1000, probeIntervalMs: 1000, autoRedrive: false, timeoutMs: 1000, ...settings },
  };
  return webhookLane({
    subscription,
    post,
    backoff: (n) => 100 * 2 ** (n - 1),
    backlog: backlog ?? {
      ...mem.backlog,
      append: (b, body, reason, error, attempts) => {
        deadLettered.push(`${b.ids.join('')}:${error}:${attempts}`);
        return mem.backlog.append(b, body, reason, error, attempts);
      },
    },
    observer,
    ...(disabled !== undefined ? { disabled } : {}),
    ...(render !== undefined ? { render } : {}),
    ...(format !== undefined ? { format } : {}),
    scheduler: ts,
  });
};

const outcome = (r: LaneResult) => `${r.batch.ids.join('')}:${r.outcome}`;

describe('webhook lane', () => {
  it('retries 408/429/5xx and network errors on the backoff schedule, in virtual time', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (_b, n) => (n === 1 ? fail : n === 2 ? 'error' : n === 3 ? { status: 429 } : ok));
      const out = cold<Batch>('a|', { a: batchOf('a') }).pipe(lane(ts, hookA.post), mapOutcome());
      // attempts at 0, 105 (after 100), 310 (after 200), 715 (after 400); success 5 ms later.
      expectObservable(out).toBe('720ms (x|)', { x: 'a:delivered' });
      ts.flush();
      expect(hookA.attempts.map((a) => a.at)).toEqual([0, 105, 310, 715]);
    });
  });

  it('CONTRACT 4.7: a batch whose rendering fails after a second is dead-lettered at once (refused, never sent); the batches after it go out meanwhile; nothing to send counts as delivered', () => {
    const ts = newScheduler();
    const dead: string[] = [];
    const rendered: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => ok);
      const render = (_f: unknown, b: Batch) => {
        const id = b.ids.join('');
        rendered.push(id);
        if (id === 'a') return cold<Prepared>('1000ms (f|)', { f: { kind: 'failed', error: 'the expression ran longer than 1000 ms' } });
        if (id === 'c') return cold<Prepared>('(n|)', { n: { kind: 'nothing', skipped: 0 } });
        return cold<Prepared>('(p|)', { p: { kind: 'body', body: requestBody(b), skipped: 0 } });
      };
      const out = cold<Batch>('a 9ms b 9ms c 9ms d|', { a: batchOf('a'), b: batchOf('b'), c: batchOf('c'), d: batchOf('d') }).pipe(
        lane(ts, hookA.post, { webhook: { ...hook('http://a/'), format: { type: 'ndjson' } }, render }, dead), mapOutcome(),
      );
      // b at 10 + 5, c (nothing) at 20, d at 30 + 5: none waits for a, which fails at 1000
      expectObservable(out).toBe('15ms x 4ms y 14ms z 964ms (w|)', { x: 'b:delivered', y: 'c:delivered', z: 'd:delivered', w: 'a:deadlettered' });
      ts.flush();
      expect(hookA.attempts.map((a) => a.batch)).toEqual(['b', 'd']);
    });
    expect(rendered).toEqual(['a', 'b', 'c', 'd']);
    expect(dead).toEqual(['a:format: the expression ran longer than 1000 ms:0']);
  });

  it('CONTRACT 4.7 "Size": a default body longer than Webhooks:MaxBodyBytes is refused at once, never sent; a shorter one goes out', () => {
    const ts = newScheduler();
    const dead: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => ok);
      const long = toBatch(['a', 'b', 'c'].map(entry));
      const out = cold<Batch>('a 9ms b|', { a: long, b: batchOf('d') }).pipe(lane(ts, hookA.post, { maxBodyBytes: 40 }, dead), mapOutcome());
      expectObservable(out).toBe('x 14ms (y|)', { x: 'abc:deadlettered', y: 'd:delivered' });
      ts.flush();
      expect(hookA.attempts.map((a) => a.batch)).toEqual(['d']);
    });
    expect(dead).toEqual(['abc:format: body of 46 bytes exceeds Webhooks:MaxBodyBytes:0']);
  });

  it('gives up after MaxAttempts and dead-letters, logging the attempts', () => {
    const ts = newScheduler();
    const dead: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => fail);
      const out = cold<Batch>('a|', { a: batchOf('a') }).pipe(lane(ts, hookA.post, { maxAttempts: 3 }, dead), mapOutcome());
      expectObservable(out).toBe('315ms (x|)', { x: 'a:deadlettered' });
    });
    expect(dead).toEqual(['a:HTTP 500 after 3 attempts:3']);
  });

  it('does not retry other 4xx: dead-lettered at once', () => {
    const ts = newScheduler();
    const dead: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => ({ status: 400 }));
      expectObservable(cold<Batch>('a|', { a: batchOf('a') }).pipe(lane(ts, hookA.post, {}, dead), mapOutcome())).toBe('5ms (x|)', { x: 'a:deadlettered' });
    });
    expect(dead).toEqual(['a:HTTP 400:1']);
  });

  it('honours Retry-After on 429/503, capped at 30 s', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (_b, n) => (n === 1 ? { status: 503, retryAfter: '2' } : n === 2 ? { status: 429, retryAfter: '3600' } : ok));
      expectObservable(cold<Batch>('a|', { a: batchOf('a') }).pipe(lane(ts, hookA.post), mapOutcome())).toBe('32015ms (x|)', { x: 'a:delivered' });
      ts.flush();
      expect(hookA.attempts.map((a) => a.at)).toEqual([0, 2005, 32010]);
    });
  });

  it('a rate cap holds first attempts and retries alike to its turn: never more than the cap in any second', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (b, n) => (b.webhookId === 'a_a' && n === 1 ? fail : ok));
      const src = cold<Batch>('(abcde|)', { a: batchOf('a'), b: batchOf('b'), c: batchOf('c'), d: batchOf('d'), e: batchOf('e') });
      const out = src.pipe(lane(ts, hookA.post, { maxRequestsPerSecond: 2 }), mapOutcome());
      expectObservable(out).toBe('5ms x 999ms (yz) 996ms (vw|)', { x: 'b:delivered', y: 'c:delivered', z: 'd:delivered', v: 'e:delivered', w: 'a:delivered' });
      ts.flush();
      // a's retry (due at 105) and e (its slot free at 5) wait for the cap's turn at 2000
      expect(hookA.attempts.map((a) => `${a.batch}@${a.at}`)).toEqual(['a@0', 'b@0', 'c@1000', 'd@1000', 'e@2000', 'a@2000']);
    });
  });

  it('sends first attempts in stream order with at most MaxInFlight requests open', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => ok, 10);
      const src = cold<Batch>('(abcde|)', { a: batchOf('a'), b: batchOf('b'), c: batchOf('c'), d: batchOf('d'), e: batchOf('e') });
      expectObservable(src.pipe(lane(ts, hookA.post, { maxInFlight: 2 }), mapOutcome())).toBe('10ms (xy) 6ms (zw) 6ms (v|)', {
        x: 'a:delivered', y: 'b:delivered', z: 'c:delivered', w: 'd:delivered', v: 'e:delivered',
      });
      ts.flush();
      expect(hookA.attempts.map((a) => `${a.batch}@${a.at}`)).toEqual(['a@0', 'b@0', 'c@10', 'd@10', 'e@20']);
      expect(hookA.maxOpen()).toBe(2);
    });
  });

  it('never holds later batches back behind a batch waiting for its retry', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (b, n) => (b.ids[0] === 'a' && n === 1 ? fail : ok));
      const src = cold<Batch>('ab|', { a: batchOf('a'), b: batchOf('b') });
      // MaxInFlight 1: b goes out when a's first attempt ends (5), not after a's retry (105..110).
      expectObservable(src.pipe(lane(ts, hookA.post, { maxInFlight: 1 }), mapOutcome())).toBe('10ms x 99ms (y|)', { x: 'b:delivered', y: 'a:delivered' });
    });
  });

  it('dead-letters overflow beyond its bounded queue at once, without waiting', () => {
    const ts = newScheduler();
    const dead: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => 'hang');
      const src = cold<Batch>('abc', { a: batchOf('a'), b: batchOf('b'), c: batchOf('c') });
      expectObservable(src.pipe(lane(ts, hookA.post, { maxInFlight: 1, queueCap: 2 }, dead), mapOutcome())).toBe('--x', { x: 'c:deadlettered' });
    });
    expect(dead).toEqual(['c:queue full (2 batches):0']);
  });

  it('a failed backlog append never counts as dead-lettered: the batch waits until its entry is written (tried again every probe interval); the lane goes on', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (b) => (b.ids.join('') === 'a' ? { status: 404 } : ok));
      const failing: LaneBacklog = { ...mem.backlog, append: (...args) => (ts.now() < 2000 ? throwError(() => new Error('redis down')) : mem.backlog.append(...args)) };
      const out = cold<Batch>('ab|', { a: batchOf('a'), b: batchOf('b') }).pipe(lane(ts, hookA.post, { backlog: failing }), mapOutcome());
      expectObservable(out).toBe('6ms y 1998ms (x|)', { x: 'a:deadlettered', y: 'b:delivered' });
    });
    expect(mem.log).toEqual(['a:refused:HTTP 404:1@2005']);
  });
});

describe('webhook lane: circuit, probes and redrive (CONTRACT 4.4)', () => {
  const post = (hookA: ReturnType<typeof scripted>) => hookA.post;
  const times = (hookA: ReturnType<typeof scripted>) => hookA.attempts.map((a) => `${a.batch || '?'}@${a.at}`);

  it('opens after CircuitFailureThreshold batches in a row end in the backlog; then new batches go there without attempts, and a probe goes every interval', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => fail);
      const src = cold<Batch>('a 9ms b 9ms c', { a: batchOf('1-0'), b: batchOf('2-0'), c: batchOf('3-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 1, circuitThreshold: 2, backlog: mem.backlog }), mapOutcome());
      expectObservable(out, '^ 2500ms !').toBe('5ms x 9ms y 4ms z', { x: '1-0:deadlettered', y: '2-0:deadlettered', z: '3-0:deadlettered' });
      ts.flush();
      // probes (one request each, the oldest entry) at 15 + 1000, then 1000 after each ends
      expect(hookA.attempts.map((a) => `${a.batch || 'probe'}@${a.at}`)).toEqual(['1-0@0', '2-0@10', 'probe@1015', 'probe@2020']);
    });
    expect(mem.log).toEqual(['1-0:exhausted:HTTP 500 after 1 attempts:1@5', '2-0:exhausted:HTTP 500 after 1 attempts:1@15', '3-0:circuit:circuit open:0@20']);
    // the probed entry failed again: it stays, its attempts grown
    expect(mem.entries.map((e) => [e.webhookId, e.attempts])).toEqual([['1-0_1-0', 3], ['2-0_2-0', 1], ['3-0_3-0', 0]]);
  });

  it('CONTRACT 4.7: a batch that enters the backlog without an attempt (circuit) is rendered first: its entry keeps the webhook\'s body; nothing to send is delivered; a failed rendering is refused with the default body', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    const rendered: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => fail);
      const render = (_f: unknown, b: Batch) => {
        const id = b.ids.join('');
        rendered.push(id);
        if (id === '3-0') return cold<Prepared>('(f|)', { f: { kind: 'failed', error: 'no' } });
        if (id === '4-0') return cold<Prepared>('(n|)', { n: { kind: 'nothing', skipped: 1 } });
        return cold<Prepared>('(p|)', { p: { kind: 'body', body: { bytes: Buffer.from(`{"datapoints":[{"v":"${id}"}],"as":"ndjson"}`), contentType: 'application/x-ndjson' }, skipped: 0 } });
      };
      const src = cold<Batch>('a 9ms b 9ms c 9ms d', { a: batchOf('1-0'), b: batchOf('2-0'), c: batchOf('3-0'), d: batchOf('4-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 1, circuitThreshold: 1, backlog: mem.backlog, webhook: { ...hook('http://a/'), format: { type: 'ndjson' } }, render }), mapOutcome());
      expectObservable(out, '^ 500ms !').toBe('5ms w 4ms x 9ms y 9ms z', { w: '1-0:deadlettered', x: '2-0:deadlettered', y: '3-0:deadlettered', z: '4-0:delivered' });
    });
    expect(rendered).toEqual(['1-0', '2-0', '3-0', '4-0']);
    expect(mem.log).toEqual(['1-0:exhausted:HTTP 500 after 1 attempts:1@5', '2-0:circuit:circuit open:0@10', '3-0:refused:format: no:0@20']);
    expect(mem.entries.map((e) => e.body)).toEqual(['{"datapoints":[{"v":"1-0"}],"as":"ndjson"}', '{"datapoints":[{"v":"2-0"}],"as":"ndjson"}', '{"datapoints":[{"v":"3-0"}]}']);
  });

  it('CONTRACT 4.7: a batch entering the backlog unsent while a queue\'s worth of batches wait for the expression is refused, not held in memory without bound', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    let waiting = 3;
    const format = { type: 'jsonata' as const, output: 'json' as const, contentType: 'application/json', maxBodyBytes: 1 << 20, evaluator: { evaluate: () => Promise.reject(new Error('not here')), waiting: () => waiting, close: () => undefined } };
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => fail);
      const render = (_f: unknown, b: Batch) => cold<Prepared>('(p|)', { p: { kind: 'body', body: { bytes: Buffer.from(`{"datapoints":[{"v":"${b.ids.join('')}"}],"as":"j"}`), contentType: 'application/json' }, skipped: 0 } });
      ts.schedule(() => (waiting = 2), 15);
      const src = cold<Batch>('a 9ms b 9ms c', { a: batchOf('1-0'), b: batchOf('2-0'), c: batchOf('3-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 1, circuitThreshold: 1, queueCap: 3, backlog: mem.backlog, format, render }), mapOutcome());
      expectObservable(out, '^ 500ms !').toBe('5ms x 4ms y 9ms z', { x: '1-0:deadlettered', y: '2-0:deadlettered', z: '3-0:deadlettered' });
    });
    // the first sent and failed; the second came while 3 waited (refused, default body); the third after one ended (rendered)
    expect(mem.log).toEqual(['1-0:exhausted:HTTP 500 after 1 attempts:1@5', '2-0:refused:format: 3 batches wait for this expression\'s evaluation (its queue is full):0@10', '3-0:circuit:circuit open:0@20']);
    expect(mem.entries.map((e) => e.body)).toEqual(['{"datapoints":[{"v":"1-0"}],"as":"j"}', '{"datapoints":[{"v":"2-0"}]}', '{"datapoints":[{"v":"3-0"}],"as":"j"}']);
  });

  it('a probe answered 2xx closes the circuit; the backlog is redriven oldest first; new batches go out live once it is empty', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => (ts.now() < 1500 ? fail : ok));
      const src = cold<Batch>('a 99ms b 2899ms c|', { a: batchOf('1-0'), b: batchOf('2-0'), c: batchOf('3-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 1, circuitThreshold: 1, autoRedrive: true, backlog: mem.backlog }), mapOutcome());
      expectObservable(out).toBe('5ms x 94ms y 2899ms 5ms (z|)', { x: '1-0:deadlettered', y: '2-0:deadlettered', z: '3-0:delivered' });
      ts.flush();
      expect(times(hookA)).toEqual(['1-0@0', '?@1005', '?@2010', '?@2015', '3-0@3000']);
      expect(hookA.bodies).toEqual(['1-0', '1-0', '1-0', '2-0', '3-0']);
    });
    expect(mem.entries).toEqual([]);
  });

  it('410 Gone disables the webhook: its batch and every new one go to the backlog as disabled, nothing is sent; enabled again (a replay), the backlog is redriven', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    const mark = memoryDisabledMark();
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => (ts.now() < 1500 ? { status: 410 } : ok));
      ts.schedule(() => mark.enable(), 1500);
      const src = cold<Batch>('a 99ms b 2899ms c|', { a: batchOf('1-0'), b: batchOf('2-0'), c: batchOf('3-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 3, autoRedrive: true, backlog: mem.backlog, disabled: mark }), mapOutcome());
      expectObservable(out).toBe('5ms x 94ms y 2899ms 5ms (z|)', { x: '1-0:deadlettered', y: '2-0:deadlettered', z: '3-0:delivered' });
      ts.flush();
      // no retry of the 410; the watch finds it enabled at 2005 and redrives both
      expect(times(hookA)).toEqual(['1-0@0', '?@2005', '?@2005', '3-0@3000']);
      expect(hookA.bodies).toEqual(['1-0', '1-0', '2-0', '3-0']);
    });
    expect(mem.log).toEqual(['1-0:disabled:HTTP 410 Gone:1@5', '2-0:disabled:webhook disabled: it answered 410 Gone:0@100']);
    expect(mem.entries).toEqual([]);
  });

  it('410 Gone: a batch of the webhook waiting for a retry is not sent again, it goes to the backlog as disabled', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, (b) => (b.webhookId === '1-0_1-0' ? fail : { status: 410 }));
      const src = cold<Batch>('a 9ms b', { a: batchOf('1-0'), b: batchOf('2-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxAttempts: 5, backlog: mem.backlog }), mapOutcome());
      expectObservable(out, '^ 3000ms !').toBe('15ms y 89ms x', { x: '1-0:deadlettered', y: '2-0:deadlettered' });
      ts.flush();
      expect(times(hookA)).toEqual(['1-0@0', '2-0@10']);
    });
    expect(mem.log).toEqual(['2-0:disabled:HTTP 410 Gone:1@15', '1-0:disabled:webhook disabled: it answered 410 Gone:1@105']);
  });

  it('redrives entries left by an earlier run in stream order, whatever order they were dead-lettered in; refused ones stay; new batches queue behind', () => {
    const ts = newScheduler();
    const mem = memoryBacklog(ts);
    for (const [id, reason] of [['3-0', 'exhausted'], ['0-5', 'refused'], ['1-0', 'overflow'], ['2-0', 'circuit']] as const) mem.backlog.append(batchOf(id), requestBody(batchOf(id)), reason, 'earlier', 1);
    ts.run(({ cold, expectObservable }) => {
      const hookA = scripted(ts, () => ok);
      const src = cold<Batch>('--a 27ms b|', { a: batchOf('4-0'), b: batchOf('5-0') });
      const out = src.pipe(lane(ts, post(hookA), { maxInFlight: 1, autoRedrive: true, backlog: mem.backlog }), mapOutcome());
      expectObservable(out).toBe('--x 32ms (y|)', { x: '4-0:deadlettered', y: '5-0:delivered' });
      ts.flush();
      expect(hookA.bodies.map((b, i) => `${b}@${hookA.attempts[i]!.at}`)).toEqual(['1-0@0', '2-0@5', '3-0@10', '4-0@15', '5-0@30']);
    });
    expect(mem.entries.map((e) => [e.webhookId, e.reason])).toEqual([['0-5_0-5', 'refused']]);
  });
});

function mapOutcome() {
  return (s: Observable<LaneResult>) =>
    new Observable<string>((sub) =>
      s.subscribe({ next: (r) => sub.next(outcome(r)), error: (e) => sub.error(e), complete: () => sub.complete() }),
    );
}

describe('push pipeline', () => {
  const run = (
    ts: TestScheduler,
    webhooks: Webhook[],
    posts: Record<string, PostBatch>,
    acks: string[],
    maxAttempts = 3,
    records: string[] = [],
    marks: string[] = [],
  ) =>
    pushPipeline$({
      subscriptions: makeSubscriptions(webhooks, { maxAttempts, maxInFlight: 4, queueCap: 1000, circuitThreshold: 1000, probeIntervalMs: 1000, autoRedrive: false, timeoutMs: 1000 }),
      windowMs: 10,
      maxSize: 100,
      lane: (s) => lane(ts, posts[s.webhook.url]!, { index: s.index, webhook: s.webhook, maxAttempts, ...(s.settings.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: s.settings.maxRequestsPerSecond } : {}) }),
      state: {
        record: (ids, parts = []) => {
          records.push(`${ids[0]}_${ids[ids.length - 1]}${parts.map(([k, id]) => ` ${k}=${id}`).join('')}@${ts.now()}`);
          return of(1);
        },
        markDone: (first, key) => {
          marks.push(`${first} ${key}@${ts.now()}`);
          return of(1);
        },
        ack: (_first, ids) => {
          acks.push(`${ids.join('')}@${ts.now()}`);
          return of(1);
        },
      },
      onUndecodable: () => undefined,
      scheduler: ts,
    });

  const eventText = (e: PipelineEvent) => (e.kind === 'lane' ? `${e.result.webhook}:${outcome(e.result)}` : `ack:${e.ids.join('')}`);

  it('one webhook failing forever while the other receives every batch on time; ack after both are done', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const bad = scripted(ts, () => fail);
      const good = scripted(ts, () => ok);
      const src = cold<StreamEntry>('a 14ms b 20ms |', { a: raw('a'), b: raw('b') }).pipe(live());
      const out = src.pipe(run(ts, [hook('http://bad/'), hook('http://good/')], { 'http://bad/': bad.post, 'http://good/': good.post }, acks), mapEvents(eventText));
      // batches close at 10 (a) and 20 (b); good answers 5 ms later; bad dead-letters after 3 attempts (5+100+5+200+5).
      expectObservable(out).toBe('15ms x 9ms y 299ms (zA) 6ms (wB|)', {
        x: '1:a:delivered', y: '1:b:delivered', z: '0:a:deadlettered', A: 'ack:a', w: '0:b:deadlettered', B: 'ack:b',
      });
      ts.flush();
      expect(good.attempts.map((a) => `${a.batch}@${a.at}`)).toEqual(['a@10', 'b@20']);
    });
    expect(acks).toEqual(['a@325', 'b@335']);
  });

  it('a filtered webhook gets only its matching points of each batch, in stream order, under the id of its part (recorded with the batch); a batch without a match sends it nothing and is acknowledged', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    const records: string[] = [];
    const marks: string[] = [];
    const at = (id: string, casdu: number): StreamEntry => ({ id, fields: ['casdu', String(casdu), 'ioa', '1', 'source', 's', 'data', `{"v":"${id}"}`] });
    ts.run(({ cold, expectObservable }) => {
      const all = scripted(ts, () => ok);
      const two = scripted(ts, () => ok);
      const src = cold<StreamEntry>('abc 16ms d |', { a: at('a', 1), b: at('b', 2), c: at('c', 2), d: at('d', 1) }).pipe(live());
      const hooks = [hook('http://all/'), { ...hook('http://two/'), filter: { casdu: [[2, 2]] as const } }];
      const out = src.pipe(run(ts, hooks, { 'http://all/': all.post, 'http://two/': two.post }, acks, 3, records, marks), mapEvents(eventText));
      expectObservable(out).toBe('15ms (xyA) z 4ms (wB|)', {
        x: '0:abc:delivered', y: '1:abc:delivered', A: 'ack:abc', z: '1:d:skipped', w: '0:d:delivered', B: 'ack:d',
      });
      ts.flush();
      expect(all.bodies).toEqual(['a,b,c', 'd']);
      expect(two.bodies).toEqual(['b,c']);
      expect(two.attempts).toEqual([{ batch: 'bc', at: 10 }]);
    });
    expect(records).toEqual(['a_c 1 http://two/=b_c@10', 'd_d@20']);
    expect(marks).toEqual(['a 0 http://all/@15']);
    expect(acks).toEqual(['abc@15', 'd@25']);
  });

  it('a rate-limited webhook gets its batches at its cap while the other gets them as they come; each batch is acknowledged once both have it', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const slow = scripted(ts, () => ok);
      const fast = scripted(ts, () => ok);
      const src = cold<StreamEntry>('a 12ms b 12ms c 12ms |', { a: raw('a'), b: raw('b'), c: raw('c') }).pipe(live());
      const hooks = [{ ...hook('http://slow/'), maxRequestsPerSecond: 1 }, hook('http://fast/')];
      const out = src.pipe(run(ts, hooks, { 'http://slow/': slow.post, 'http://fast/': fast.post }, acks), mapEvents(eventText));
      expectObservable(out).toBe('15ms (uxA) 5ms y 9ms z 979ms (vB) 996ms (wC|)', {
        x: '1:a:delivered', y: '1:b:delivered', z: '1:c:delivered', u: '0:a:delivered', A: 'ack:a', v: '0:b:delivered', B: 'ack:b', w: '0:c:delivered', C: 'ack:c',
      });
      ts.flush();
      expect(fast.attempts.map((a) => `${a.batch}@${a.at}`)).toEqual(['a@10', 'b@20', 'c@30']);
      expect(slow.attempts.map((a) => `${a.batch}@${a.at}`)).toEqual(['a@10', 'b@1010', 'c@2010']);
    });
  });

  it('a hanging webhook never delays the other, and nothing is acknowledged while it hangs', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const hang = scripted(ts, () => 'hang');
      const good = scripted(ts, () => ok);
      const src = cold<StreamEntry>('a 14ms b', { a: raw('a'), b: raw('b') }).pipe(live());
      const out = src.pipe(run(ts, [hook('http://hang/'), hook('http://good/')], { 'http://hang/': hang.post, 'http://good/': good.post }, acks), mapEvents(eventText));
      expectObservable(out, '^ 1000ms !').toBe('15ms x 9ms y', { x: '1:a:delivered', y: '1:b:delivered' });
    });
    expect(acks).toEqual([]);
  });

  it('acknowledges at once when no webhook is configured, and undecodable entries at once', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const src = cold<StreamEntry>('a b 20ms |', { a: raw('a'), b: { id: 'b', fields: ['data', 'not json'] } }).pipe(live());
      expectObservable(src.pipe(run(ts, [], {}, acks), mapEvents(eventText))).toBe('-x 8ms y 11ms |', { x: 'ack:b', y: 'ack:a' });
    });
    expect(acks).toEqual(['b@1', 'a@10']);
  });

  it('graceful stop: when the reader completes, the open batch is flushed, delivered and acknowledged, then it completes', () => {
    const ts = newScheduler();
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const good = scripted(ts, () => ok);
      const src = cold<StreamEntry>('a-|', { a: raw('a') }).pipe(live());
      expectObservable(src.pipe(run(ts, [hook('http://good/')], { 'http://good/': good.post }, acks), mapEvents(eventText))).toBe('7ms (xy|)', {
        x: '0:a:delivered', y: 'ack:a',
      });
    });
    expect(acks).toEqual(['a@7']);
  });

  it('delivers replayed entries as their recorded batch (same webhook-id), only to webhooks without a mark, and records new batches before they go out', () => {
    const ts = newScheduler();
    const records: string[] = [];
    const marks: string[] = [];
    const acks: string[] = [];
    ts.run(({ cold, expectObservable }) => {
      const a = scripted(ts, () => ok);
      const b = scripted(ts, () => ok);
      const recorded = new Map([['1-0', { first: '1-0', last: '1-1', done: new Set(['1 http://b/']) }]]);
      const src = cold<ReadChunk>('a 14ms b 20ms |', {
        a: { entries: [raw('1-0'), raw('1-1'), raw('2-0')], replay: true, records: recorded },
        b: { entries: [raw('3-0')], replay: false },
      });
      const out = src.pipe(run(ts, [hook('http://a/'), hook('http://b/')], { 'http://a/': a.post, 'http://b/': b.post }, acks, 3, records, marks));
      const seen: string[] = [];
      out.subscribe((e) => seen.push(`${ts.now()} ${e.kind === 'lane' ? `${e.result.webhook}:${e.result.batch.webhookId}:${e.result.outcome}` : 'ack'}`));
      ts.flush();
      expect(seen).toEqual([
        '0 1:1-0_1-1:skipped', '5 0:1-0_1-1:delivered', '5 ack', '5 0:2-0_2-0:delivered', '5 1:2-0_2-0:delivered', '5 ack',
        '25 0:3-0_3-0:delivered', '25 1:3-0_3-0:delivered', '25 ack',
      ]);
      void expectObservable;
      ts.flush();
      // webhook b had the recorded batch (its mark): never sent again; the replayed 2-0 was never recorded: a batch of its own
      expect(a.attempts.map((t) => `${t.batch}@${t.at}`)).toEqual(['1-01-1@0', '2-0@0', '3-0@20']);
      expect(b.attempts.map((t) => `${t.batch}@${t.at}`)).toEqual(['2-0@0', '3-0@20']);
    });
    expect(records).toEqual(['2-0_2-0@0', '3-0_3-0@20']);
    // the first webhook to finish a batch is marked; the last one is covered by the acknowledgement
    expect(marks).toEqual(['2-0 0 http://a/@5', '3-0 0 http://a/@25']);
    expect(acks).toEqual(['1-01-1@5', '2-0@5', '3-0@25']);
  });

  it('subscribes each lane once and leaves no inner subscription behind', () => {
    const ts = newScheduler();
    ts.run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot<StreamEntry>('--a--|', { a: raw('a') });
      const good = scripted(ts, () => ok);
      expectObservable(src.pipe(live(), run(ts, [hook('http://good/')], { 'http://good/': good.post }, []), mapEvents(eventText))).toBe('10ms (xy|)', {
        x: '0:a:delivered', y: 'ack:a',
      });
      expectSubscriptions(src.subscriptions).toBe('^----!');
    });
  });
});

/** Entries as the reader's live chunks. */
function live() {
  return (s: Observable<StreamEntry>) => s.pipe(map((e): ReadChunk => ({ entries: [e], replay: false })));
}

function mapEvents(f: (e: PipelineEvent) => string) {
  return (s: Observable<PipelineEvent>) =>
    new Observable<string>((sub) =>
      s.subscribe({ next: (e) => sub.next(f(e)), error: (e) => sub.error(e), complete: () => sub.complete() }),
    );
}

describe('stream reader', () => {
  interface Script {
    /** Own pending pages in order; 'error' fails that read. */
    pending: Array<StreamEntry[] | 'error'>;
    /** Pending pages of this process's claim consumers, by name. */
    claimPending?: Record<string, StreamEntry[][]>;
    consumers?: ConsumerInfo[];
    claims?: Record<string, StreamEntry[][]>;
    /** What each attempt to take the claim lease gets, in order (then true). */
    leases?: boolean[];
    /** What each reading of the consumers gets, in order (then `consumers`). */
    consumersSeq?: ConsumerInfo[][];
    reads: Array<StreamEntry[] | 'error'>;
  }
  const RECORDS = new Map([['1-1', { first: '1-1', last: '1-2', done: new Set<string>() }]]);
  const port = (ts: TestScheduler, script: Script, calls: string[]): StreamPort => {
    let read = 0;
    return {
      consumer: 'me',
      createGroup: (start) => {
        calls.push(`group ${start}@${ts.now()}`);
        return of('OK');
      },
      loadRecords: () => {
        calls.push('load');
        return of(RECORDS);
      },
      readPending: (owner, after) => {
        calls.push(owner === 'me' ? `pending ${after}` : `pending ${owner} ${after}`);
        const page = (owner === 'me' ? script.pending : script.claimPending?.[owner] ?? []).shift() ?? [];
        return page === 'error' ? throwError(() => new Error('Connection is closed')) : of(page);
      },
      touch: (owner) => {
        calls.push(`touch ${owner}`);
        return of('OK');
      },
      deleteConsumer: (owner) => {
        calls.push(`delete ${owner}`);
        return of(1);
      },
      takeClaimLease: (ms) => {
        calls.push(`lease ${ms}@${ts.now()}`);
        return of(script.leases?.shift() ?? true);
      },
      renewClaimLease: () => {
        calls.push('renew');
        return of(true);
      },
      releaseClaimLease: () => {
        calls.push('release');
        return of(1);
      },
      settled: () => of({ before: '1-0' }),
      forgetSettled: (st) => {
        calls.push(`forget ${JSON.stringify(st)}`);
        return of(0);
      },
      consumers: () => {
        calls.push('consumers');
        return of(script.consumersSeq?.shift() ?? script.consumers ?? []);
      },
      claimFrom: (from, to, minIdle) => {
        calls.push(`claim ${from}>${to} ${minIdle}`);
        return of(script.claims?.[from]?.shift() ?? []);
      },
      readNew: () => {
        const r = script.reads[read++] ?? [];
        calls.push(`read@${ts.now()}`);
        return r === 'error'
          ? ts.createColdObservable<StreamEntry[]>('5ms #', undefined, new Error('Connection is closed'))
          : ts.createColdObservable<StreamEntry[]>('5ms (r|)', { r });
      },
    };
  };
  const options = (ts: TestScheduler, over: Partial<ReaderOptions> = {}): ReaderOptions => ({
    startFromLatest: false, count: 10, blockMs: 500, retryMs: 50, claimIdleMs: 60000, claimEveryMs: 1_000_000,
    isStopping: () => true, lookAtPending: inFlightEntries().look, onError: () => undefined, onClaim: () => undefined, scheduler: ts, ...over,
  });

  it('re-reads its own pending entries first (records read back first, in-flight ones skipped), then claims, then reads new entries; after an error starts over from the group', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    const errors: unknown[] = [];
    let stopping = false;
    ts.run(({ expectObservable }) => {
      const p = port(ts, { pending: [[raw('1-0'), raw('1-1')], [raw('1-2')], [], [raw('2-0')]], reads: [[raw('2-0')], [], 'error', [raw('3-0')]] }, calls);
      const flight = inFlightEntries();
      flight.add(['1-0']);
      const out = readUpdates$(p, options(ts, { isStopping: () => stopping, lookAtPending: flight.look, onError: (e) => errors.push(e) }));
      ts.schedule(() => (stopping = true), 70);
      // after the error: 2-0 is pending again (its read's reply could have been lost) and re-read
      expectObservable(out.pipe(mapEvents2())).toBe('a 4ms d 4ms g 54ms f 4ms (e|)', { a: 'R1-1,1-2+@me', d: 'L2-0', g: 'L', f: 'R2-0+@me', e: 'L3-0' });
    });
    expect(calls).toEqual([
      'group 0@0', 'lease 500000@0', 'consumers', 'touch me', 'release', 'load', 'pending 0', 'pending 1-1', 'pending 1-2',
      'consumers', 'lease 500000@0', 'forget {"before":"1-0"}', 'consumers', 'release', 'read@0', 'read@5', 'read@10',
      'group 0@65', 'lease 500000@65', 'consumers', 'touch me', 'release', 'load', 'pending 0', 'pending 2-0',
      'consumers', 'lease 500000@65', 'forget {"before":"1-0"}', 'consumers', 'release', 'read@65',
    ]);
    expect(errors).toHaveLength(1);
  });

  it('hands a recorded batch that a page cuts on whole with the next page; a re-read broken off by an error mid-batch hands on no part of it', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      // page 1 ends inside the recorded batch 1-1..1-2, and the next read fails; on the second pass
      // the page ends inside it again, and the batch comes out whole with the following page
      const p = port(ts, { pending: [[raw('1-0'), raw('1-1')], 'error', [raw('1-0'), raw('1-1')], [raw('1-2'), raw('1-3')], []], reads: [[]] }, calls);
      let stopping = false;
      ts.schedule(() => (stopping = true), 52);
      const out = readUpdates$(p, options(ts, { count: 2, isStopping: () => stopping }));
      expectObservable(out.pipe(mapEvents2())).toBe('a 49ms (bc) 1ms (d|)', { a: 'R1-0+@me', b: 'R1-0+@me', c: 'R1-1,1-2,1-3+@me', d: 'L' });
    });
  });

  it.each([
    ['while the page that holds it is read (the page still holds it)', '0'],
    ['after the page that cut its batch was read (the batch was carried on)', '1-1'],
  ])('skips a pending entry of this process acknowledged %s: no part of a batch done meanwhile is handed on again', (_, at) => {
    const ts = newScheduler();
    const flight = inFlightEntries();
    flight.add(['1-1', '1-2']); // this process has the recorded batch 1-1..1-2 in flight
    ts.run(({ expectObservable }) => {
      const p0 = port(ts, { pending: at === '0' ? [[raw('1-0'), raw('1-1')], [raw('1-2')], []] : [[raw('1-0'), raw('1-1')], []], reads: [[]] }, []);
      const p: StreamPort = {
        ...p0,
        readPending: (owner, after, count) => {
          if (after === at) flight.acknowledged(['1-1', '1-2']);
          return p0.readPending(owner, after, count);
        },
      };
      const out = readUpdates$(p, options(ts, { count: 2, lookAtPending: flight.look }));
      expectObservable(out.pipe(mapEvents2())).toBe('a 4ms (d|)', { a: 'R1-0+@me', d: 'L' });
    });
    expect(flight.size()).toBe(0);
  });

  it('wholeBatches: pending entries up to the start of the last recorded batch they do not reach the end of', () => {
    const rec = (first: string, last: string) => [first, { first, last, done: new Set<string>() }] as const;
    const records = new Map([rec('1-1', '1-3'), rec('2-0', '2-1')]);
    const ids = (...xs: string[]) => xs.map(raw);
    expect(wholeBatches(ids('1-0', '1-1', '1-2', '1-3'), records)).toBe(4);
    expect(wholeBatches(ids('1-0', '1-1', '1-2'), records)).toBe(1);
    expect(wholeBatches(ids('1-1'), records)).toBe(0);
    expect(wholeBatches(ids('1-1', '1-2', '1-3', '2-0'), records)).toBe(3);
    // a batch whose last entry is no longer pending is closed by the first entry past it
    expect(wholeBatches(ids('1-1', '1-2', '1-4', '2-0', '2-1'), records)).toBe(5);
    expect(wholeBatches(ids('0-5', '0-6'), records)).toBe(2);
    expect(wholeBatches([], records)).toBe(0);
  });

  it('claims the whole pending list of every other consumer idle for over claimIdleMs into a claim consumer of its own, never its own entries, with the records read back, and reports each claim', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    const claims: string[] = [];
    ts.run(({ expectObservable }) => {
      const p = port(ts, {
        pending: [],
        consumers: [
          { name: 'me', pending: 5, idleMs: 90000 }, // itself: never claimed, kept alive
          { name: 'me~old', pending: 2, idleMs: 90000 }, // what it claimed before: never claimed by it, kept alive
          { name: 'me~done', pending: 0, idleMs: 90000 }, // a claim consumer left empty: deleted
          { name: 'dead', pending: 3, idleMs: 61000 },
          { name: 'alive', pending: 7, idleMs: 400 }, // reads: not dead
          { name: 'empty', pending: 0, idleMs: 99000 },
        ],
        claims: { dead: [[raw('1-1'), raw('1-2')], [raw('4-0')]] },
        reads: [],
      }, calls);
      const out = readUpdates$(p, options(ts, { onClaim: (from, into, count, idle) => claims.push(`${from} ${into} ${count} ${idle}`) }));
      expectObservable(out.pipe(mapEvents2())).toBe('(ab)-(c|)', { a: 'R1-1,1-2+@me~dead', b: 'R4-0+@me~dead', c: 'L' });
    });
    expect(calls).toEqual([
      'group 0@0', 'lease 500000@0', 'consumers', 'touch me', 'touch me~old', 'release', 'load', 'pending 0', 'pending me~old 0',
      'consumers', 'touch me', 'touch me~old', 'delete me~done', 'lease 500000@0', 'forget {"before":"1-0"}', 'consumers', 'load',
      'renew', 'claim dead>me~dead 60000', 'renew', 'claim dead>me~dead 60000', 'renew', 'claim dead>me~dead 60000', 'release', 'read@0',
    ]);
    expect(claims).toEqual(['dead me~dead 3 61000']);
  });

  it('after a restart re-reads its own pending entries, then those of each of its claim consumers, each chunk marked with its consumer', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      const p = port(ts, {
        pending: [[raw('2-0'), raw('4-0')]],
        claimPending: { 'me~dead': [[raw('1-0'), raw('3-0')]] },
        consumers: [{ name: 'me', pending: 2, idleMs: 90000 }, { name: 'me~dead', pending: 2, idleMs: 90000 }, { name: 'other~dead', pending: 2, idleMs: 10 }],
        reads: [],
      }, calls);
      expectObservable(readUpdates$(p, options(ts)).pipe(mapEvents2())).toBe('(ab)-(c|)', { a: 'R2-0,4-0+@me', b: 'R1-0,3-0+@me~dead', c: 'L' });
    });
    expect(calls.slice(0, 11)).toEqual([
      'group 0@0', 'lease 500000@0', 'consumers', 'touch me', 'touch me~dead', 'release', 'load', 'pending 0', 'pending 4-0', 'pending me~dead 0', 'pending me~dead 3-0',
    ]);
  });

  it('claims nothing while another replica holds the claim lease', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      const p = port(ts, { pending: [], leases: [true, false], consumers: [{ name: 'dead', pending: 3, idleMs: 61000 }], claims: { dead: [[raw('1-1')]] }, reads: [] }, calls);
      expectObservable(readUpdates$(p, options(ts)).pipe(mapEvents2())).toBe('5ms (c|)', { c: 'L' });
    });
    expect(calls).toEqual(['group 0@0', 'lease 500000@0', 'consumers', 'touch me', 'release', 'load', 'pending 0', 'consumers', 'lease 500000@0', 'read@0']);
  });

  it('starting over, waits for the claim lease and shows itself alive before it re-reads its own entries: a claim round never overlaps its re-read', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      // a claim round of another replica holds the lease for the first two tries
      const p = port(ts, { pending: [[raw('1-0')]], leases: [false, false, true], reads: [] }, calls);
      expectObservable(readUpdates$(p, options(ts)).pipe(mapEvents2())).toBe('100ms a 4ms (c|)', { a: 'R1-0+@me', c: 'L' });
    });
    expect(calls.slice(0, 8)).toEqual(['group 0@0', 'lease 500000@0', 'lease 500000@50', 'lease 500000@100', 'consumers', 'touch me', 'release', 'load']);
  });

  it('a claim round reads the consumers again under the lease: one that came back meanwhile (its owner restarted) is not claimed', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      const p = port(ts, {
        pending: [],
        // start-over reading; the round's first reading (dead for 61 s); under the lease: it read again
        consumersSeq: [[], [{ name: 'dead', pending: 3, idleMs: 61000 }], [{ name: 'dead', pending: 3, idleMs: 20 }]],
        claims: { dead: [[raw('1-1')]] },
        reads: [],
      }, calls);
      expectObservable(readUpdates$(p, options(ts)).pipe(mapEvents2())).toBe('5ms (c|)', { c: 'L' });
    });
    expect(calls.filter((c) => c.startsWith('claim'))).toEqual([]);
    expect(calls).toContain('release');
  });

  it('creates the group at $ when StartFromLatest is true', () => {
    const ts = newScheduler();
    const calls: string[] = [];
    ts.run(({ expectObservable }) => {
      const p = port(ts, { pending: [], reads: [] }, calls);
      expectObservable(readUpdates$(p, options(ts, { startFromLatest: true })).pipe(mapEvents2())).toBe('5ms (x|)', { x: 'L' });
    });
    expect(calls[0]).toBe('group $@0');
  });
});

/** R/L (replay or live), the IDs, and + when the records came along. */
function mapEvents2() {
  return (s: Observable<ReadChunk>) =>
    s.pipe(map((c) => `${c.replay ? 'R' : 'L'}${c.entries.map((e) => e.id).join(',')}${c.records ? '+' : ''}${c.source !== undefined ? `@${c.source}` : ''}`));
}

describe('regroup (stable webhook-id after a restart)', () => {
  const rec = (first: string, last: string) => [first, { first, last, done: new Set<string>() }] as const;
  const chunk = (replay: boolean, ids: string[], records?: Map<string, { first: string; last: string; done: Set<string> }>): ReadChunk => ({ entries: ids.map(raw), replay, ...(records ? { records } : {}) });
  const unitText = () => (s: Observable<import('../src/streams/read/regroup').Unit>) =>
    s.pipe(map((u) => (u.kind === 'live' ? u.entries.map((e) => e.id).join(',') : `${u.record ? 'R' : 'N'}[${u.entries.map((e) => e.id).join(',')}]`)));

  it('re-forms replayed entries along recorded boundaries, across pages; unrecorded replayed entries form batches of their own', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const known = new Map([rec('1-0', '3-0'), rec('5-0', '5-0'), rec('7-0', '9-0')]);
      const src = cold<ReadChunk>('a 9ms b 9ms c 9ms d 9ms |', {
        a: chunk(true, ['1-0', '2-0'], known), b: chunk(true, ['3-0', '4-0', '5-0', '6-0', '7-0'], known), c: chunk(true, ['8-0'], known), d: chunk(false, ['10-0']),
      });
      expectObservable(src.pipe(regroup(100), unitText())).toBe('10ms (xyzu) 14ms (wv) 6ms |', { x: 'R[1-0,2-0,3-0]', y: 'N[4-0]', z: 'R[5-0]', u: 'N[6-0]', w: 'R[7-0,8-0]', v: '10-0' });
    });
  });

  it('never lets a batch span two consumers\' pending entries: interleaved IDs of a claim consumer stay out of a recorded batch of this one', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      // this consumer read 2-0, 4-0, 6-0 as one batch; a dead one read 1-0, 3-0, 5-0 as one, now claimed
      const known = new Map([rec('1-0', '5-0'), rec('2-0', '6-0')]);
      const src = cold<ReadChunk>('a 9ms b 9ms |', {
        a: { ...chunk(true, ['2-0', '4-0', '6-0'], known), source: 'me' },
        b: { ...chunk(true, ['1-0', '3-0', '5-0', '7-0'], known), source: 'me~dead' },
      });
      expectObservable(src.pipe(regroup(100), unitText())).toBe('x 9ms (yz) 6ms |', { x: 'R[2-0,4-0,6-0]', y: 'R[1-0,3-0,5-0]', z: 'N[7-0]' });
    });
  });

  it('closes an open batch at the first entry past its last ID, never regroups live entries, and cuts unrecorded ones at maxSize', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const known = new Map([rec('1-0', '3-0')]);
      const src = cold<ReadChunk>('a 9ms b 9ms |', { a: chunk(true, ['1-0', '4-0', '5-0', '6-0'], known), b: chunk(false, ['1-0']) });
      expectObservable(src.pipe(regroup(2), unitText())).toBe('(xyz) 5ms w 9ms |', { x: 'R[1-0]', y: 'N[4-0,5-0]', z: 'N[6-0]', w: '1-0' });
    });
  });
});
