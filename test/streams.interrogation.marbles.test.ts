import { map, NEVER, Observable, of, Subject, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { PostBatch, WebhookResponse } from '../src/streams/webhook/answers';
import type { LaneBacklog } from '../src/streams/webhook/backlog';
import { REDRIVABLE, byStreamOrder, type BacklogItem } from '../src/streams/webhook/backlogEntry';
import { bodyText, DATAPOINTS, requestBody, storedContent } from '../src/streams/webhook/body';
import { toBatch, type Batch } from '../src/streams/read/batches';
import { webhookLane, type LaneObserver, type LaneResult } from '../src/streams/webhook/lane';
import { webhookKey } from '../src/streams/read/deliveryState';
import { interrogationBatch, pullEach, type Interrogation, type InterrogationEvent } from '../src/streams/webhook/interrogation';
import type { WebhookSubscription } from '../src/streams/webhook/subscription';

/**
 * Invariant 10 of a lane (src/streams/webhook/laneState.ts, kept by src/streams/webhook/lane.ts; CONTRACT 4.6): an interrogation in the middle of
 * live batches, in virtual time — the order rule, a request that fails, a read that fails, a stop.
 */
const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const live = (...ids: string[]): Batch => toBatch(ids.map((id) => ({ id, json: `{"v":"${id}"}` })));

/** An in-memory backlog that records what is appended. */
const backlogOf = (log: string[]): LaneBacklog => {
  const entries: Array<BacklogItem & { reason: string; body: string }> = [];
  let n = 0;
  return {
    append: (b, body, reason) => {
      const text = bodyText(body);
      entries.push({ id: `${++n}-0`, webhookId: b.webhookId, attempts: 1, reason, body: text });
      log.push(`backlog ${b.webhookId} ${reason}${text.startsWith('{"k"') ? ` ${text}` : ''}`);
      return of(1);
    },
    pending: () => of(entries.filter((e) => REDRIVABLE.has(e.reason)).sort(byStreamOrder)),
    fetch: (item) => of(entries.find((e) => e.id === item.id) === undefined ? null : { body: '', traces: '' }),
    remove: () => of(1),
    failedAgain: () => of(1),
    lease: () => of(true),
  };
};

const quiet = (events: InterrogationEvent[]): LaneObserver => ({
  attempt: () => undefined, finished: () => undefined, queueDepth: () => undefined, status: () => undefined, redriven: () => undefined,
  interrogation: (e) => void events.push(e),
});

/**
 * A scripted interrogation: each run's requests are `chunks` (points as `v` values), pulled one by
 * one; `readFails` makes the first run's pull number k fail. Its begin, pulls, completion and
 * cancellation go to `log` with the virtual time.
 */
const interrogation = (ts: TestScheduler, chunks: string[][], log: string[], readFails?: number): Interrogation & { pulls: () => number } => {
  let runs = 0;
  let pulls = 0;
  return {
    cause: 'interrogation',
    pulls: () => pulls,
    begin: () => {
      const run = ++runs;
      const p = `${run}00-0`;
      log.push(`begin P=${p} @${ts.now()}`);
      let k = 0;
      return {
        next: () => {
          pulls++;
          if (run === 1 && readFails === k + 1) return throwError(() => new Error('SCAN failed'));
          const chunk = chunks[k++];
          return of(chunk === undefined ? null : interrogationBatch('interrogation', p, k, chunk.map((v) => Buffer.from(`{"v":"${v}"}`))));
        },
        completed: () => {
          log.push(`completed P=${p} @${ts.now()}`);
          return of(1);
        },
        cancel: () => void log.push(`cancelled P=${p} @${ts.now()}`),
      };
    },
  };
};

/** A webhook answering after `latency` frames; `answer` per request id and attempt. Logs each request's start. */
const webhook = (ts: TestScheduler, log: string[], answer: (id: string, n: number) => WebhookResponse | 'hang' = () => ({ status: 200 }), latency = 10): PostBatch => {
  const counts = new Map<string, number>();
  return (batch) => {
    const n = (counts.get(batch.webhookId) ?? 0) + 1;
    counts.set(batch.webhookId, n);
    log.push(`POST ${batch.webhookId} @${ts.now()}`);
    const a = answer(batch.webhookId, n);
    return a === 'hang' ? NEVER : ts.createColdObservable<WebhookResponse>(`${latency}ms (r|)`, { r: a });
  };
};

const laneOf = (
  post: PostBatch, log: string[], events: InterrogationEvent[],
  o: { initial?: Interrogation; interrogations?: Observable<Interrogation>; maxInFlight?: number; maxRequestsPerSecond?: number } = {},
) => {
  const url = 'http://a/';
  const subscription: WebhookSubscription = {
    index: 0, webhook: { url, headers: {}, secrets: [] }, key: webhookKey(0, url), host: 'a', files: {},
    settings: {
      maxAttempts: 2, maxInFlight: o.maxInFlight ?? 1, queueCap: 1000, circuitThreshold: 1000, probeIntervalMs: 1000, autoRedrive: false, timeoutMs: 1000,
      ...(o.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: o.maxRequestsPerSecond } : {}),
    },
  };
  return webhookLane({
    subscription, post, backoff: () => 100, backlog: backlogOf(log), observer: quiet(events),
    ...(o.initial !== undefined ? { initial: o.initial } : {}), ...(o.interrogations !== undefined ? { interrogations: o.interrogations } : {}),
  });
};

const ids = (r: LaneResult) => r.batch.webhookId;
/** The lane's results as strings, for a marble diagram. */
const shown = (show: (r: LaneResult) => string) => (s: Observable<LaneResult>) =>
  new Observable<string>((sub) => s.subscribe({ next: (r) => sub.next(show(r)), complete: () => sub.complete() }));

it('batches read before an interrogation was asked for go first; its requests go in k order; batches read after it wait until its last request was answered', () => {
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const asks = new Subject<Interrogation>();
    const g = interrogation(ts, [['x1', 'x2'], ['x3']], log);
    // a at 0, b at 1 (both before the ask at 2), c at 3 and d at 50 (after it)
    const batches$ = cold<Batch>('a b - c 46ms d 100ms |', { a: live('1-0'), b: live('2-0'), c: live('3-0'), d: live('4-0') });
    ts.schedule(() => asks.next(g), 2);
    expectObservable(batches$.pipe(laneOf(webhook(ts, log), log, events, { interrogations: asks }), shown(ids))).toBe(
      '10ms a 9ms b 29ms c 9ms d 90ms |', { a: '1-0_1-0', b: '2-0_2-0', c: '3-0_3-0', d: '4-0_4-0' },
    );
  });
  expect(log.filter((l) => l.startsWith('POST') || l.startsWith('completed'))).toEqual([
    'POST 1-0_1-0 @0', 'POST 2-0_2-0 @10', 'POST gi-100-0-1 @20', 'POST gi-100-0-2 @30', 'completed P=100-0 @40', 'POST 3-0_3-0 @40', 'POST 4-0_4-0 @50',
  ]);
  expect(events).toEqual([
    { kind: 'started', cause: 'interrogation' }, { kind: 'sent', points: 2 }, { kind: 'sent', points: 1 }, { kind: 'completed', cause: 'interrogation', requests: 2 },
  ]);
});

it('a request that fails goes to the backlog as any batch does; the batches behind the interrogation go once it is there; it still completes', () => {
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, [['x1'], ['x2'], ['x3']], log);
    const batches$ = cold<Batch>('a 500ms |', { a: live('1-0') });
    // request 2 is refused (400: not retried)
    const post = webhook(ts, log, (id) => ({ status: id === 'gi-100-0-2' ? 400 : 200 }));
    expectObservable(batches$.pipe(laneOf(post, log, events, { initial: g }), shown((r) => `${ids(r)} ${r.outcome}`))).toBe(
      '40ms a 460ms |', { a: '1-0_1-0 delivered' },
    );
  });
  expect(log.filter((l) => !l.startsWith('begin'))).toEqual([
    'POST gi-100-0-1 @0', 'POST gi-100-0-2 @10', 'backlog gi-100-0-2 refused', 'POST gi-100-0-3 @20', 'completed P=100-0 @30', 'POST 1-0_1-0 @30',
  ]);
  expect(events.at(-1)).toEqual({ kind: 'completed', cause: 'interrogation', requests: 3 });
});

it('a run with a sender of its own (a thread that holds the bodies) gets every attempt of its requests, retries included, and gives a failed one its body for the backlog; live batches still go by the lane\'s post', () => {
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, [['x1'], ['x2']], log);
    // the run's own sender: request 1 answers 503, then 200; request 2 is refused (400)
    const own = webhook(ts, log, (id, n) => ({ status: id === 'gi-100-0-1' && n === 1 ? 503 : id === 'gi-100-0-2' ? 400 : 200 }));
    const threaded: Interrogation = {
      cause: g.cause,
      begin: () => {
        const run = g.begin();
        // the lane's batches carry no body; the sender has it
        const bare = (): Observable<Batch | null> => run.next().pipe(map((b) => (b === null ? null : { ...b, content: { kind: 'elsewhere' } as const })));
        return {
          ...run,
          next: bare,
          sender: {
            post: (b) => (log.push(`thread ${b.webhookId} body '${b.content.kind === 'elsewhere' ? '' : bodyText(requestBody(b))}'`), own(b)),
            withBody: (b) => (log.push(`withBody ${b.webhookId}`), of({ ...b, content: storedContent(`{"k":"${b.webhookId}"}`) })),
          },
        };
      },
    };
    const lanePost: PostBatch = (b) => (log.push(`lane ${b.webhookId}`), webhook(ts, log)(b));
    const batches$ = cold<Batch>('a 500ms |', { a: live('1-0') });
    expectObservable(batches$.pipe(laneOf(lanePost, log, events, { initial: threaded }), shown((r) => `${ids(r)} ${r.outcome}`))).toBe(
      '140ms a 360ms |', { a: '1-0_1-0 delivered' },
    );
  });
  // 503 at 10, retried after the backoff (100) at 110, answered at 120; request 2 at 120-130, refused
  expect(log.filter((l) => !l.startsWith('begin') && !l.startsWith('POST'))).toEqual([
    "thread gi-100-0-1 body ''", "thread gi-100-0-1 body ''", "thread gi-100-0-2 body ''", 'withBody gi-100-0-2', 'backlog gi-100-0-2 refused {"k":"gi-100-0-2"}',
    'completed P=100-0 @130', 'lane 1-0_1-0',
  ]);
  expect(events.at(-1)).toEqual({ kind: 'completed', cause: 'interrogation', requests: 2 });
});

it('the rate cap holds for a run with a sender of its own: its requests wait for their turn as live batches do, MaxInFlight notwithstanding', () => {
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, [['x1'], ['x2'], ['x3']], log);
    const own = webhook(ts, log);
    const threaded: Interrogation = { cause: g.cause, begin: () => ({ ...g.begin(), sender: { post: own, withBody: (b) => of(b) } }) };
    const batches$ = cold<Batch>('a 8000ms |', { a: live('1-0') });
    // one request in any 2 s (0.5 a second), four slots
    expectObservable(batches$.pipe(laneOf(webhook(ts, log), log, events, { initial: threaded, maxInFlight: 4, maxRequestsPerSecond: 0.5 }), shown(ids))).toBe(
      '6010ms a 1990ms |', { a: '1-0_1-0' },
    );
  });
  expect(log.filter((l) => l.startsWith('POST'))).toEqual(['POST gi-100-0-1 @0', 'POST gi-100-0-2 @2000', 'POST gi-100-0-3 @4000', 'POST 1-0_1-0 @6000']);
});

it('a read that fails cuts the run short (cancelled) and begins it again, with a new P, after the probe interval; the batches behind wait for it', () => {
  // the second request is pulled when the first was answered (one slot): its read fails at 10
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, [['x1'], ['x2']], log, 2);
    const batches$ = cold<Batch>('a 2000ms |', { a: live('1-0') });
    expectObservable(batches$.pipe(laneOf(webhook(ts, log), log, events, { initial: g }), shown(ids))).toBe(
      '1040ms a 960ms |', { a: '1-0_1-0' },
    );
  });
  expect(log).toEqual([
    'begin P=100-0 @0', 'POST gi-100-0-1 @0', 'cancelled P=100-0 @10',
    'begin P=200-0 @1010', 'POST gi-200-0-1 @1010', 'POST gi-200-0-2 @1020', 'completed P=200-0 @1030', 'POST 1-0_1-0 @1030',
  ]);
  expect(events.map((e) => e.kind)).toEqual(['started', 'sent', 'failed', 'started', 'sent', 'sent', 'completed']);
});

it('a stop in the middle: the run is cancelled, never completed (an initial one is begun again at the next start)', () => {
  const ts = newScheduler();
  const log: string[] = [];
  const events: InterrogationEvent[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, [['x1'], ['x2'], ['x3']], log);
    const post = webhook(ts, log, (id) => (id === 'gi-100-0-2' ? 'hang' : { status: 200 }));
    const batches$ = cold<Batch>('a 500ms |', { a: live('1-0') });
    expectObservable(batches$.pipe(laneOf(post, log, events, { initial: g })), '^ 100ms !').toBe('');
  });
  // the live batch held behind it is never sent: the lane stopped (unsubscribed at 101)
  expect(log).toEqual(['begin P=100-0 @0', 'POST gi-100-0-1 @0', 'POST gi-100-0-2 @10', 'cancelled P=100-0 @101']);
  expect(events.map((e) => e.kind)).toEqual(['started', 'sent']);
});

it('requests are pulled only when a request slot is free: memory holds MaxInFlight requests, however many the image makes', () => {
  const ts = newScheduler();
  const log: string[] = [];
  ts.run(({ cold, expectObservable }) => {
    const g = interrogation(ts, Array.from({ length: 1000 }, (_, i) => [`p${i}`]), log);
    // the receiver never answers: every slot stays taken
    const post = webhook(ts, log, () => 'hang');
    expectObservable(cold<Batch>('-').pipe(laneOf(post, log, [], { initial: g, maxInFlight: 3 })), '^ 5000ms !').toBe('');
    ts.flush();
    expect(g.pulls()).toBe(3);
  });
  expect(log.filter((l) => l.startsWith('POST'))).toEqual(['POST gi-100-0-1 @0', 'POST gi-100-0-2 @0', 'POST gi-100-0-3 @0']);
});

it('pullEach: k order of the work, at most n at once, done when the source is empty and every work is', () => {
  newScheduler().run(({ cold, expectObservable }) => {
    const items = [1, 2, 3, 4, 5];
    const started: string[] = [];
    let i = 0;
    const next = () => of(i < items.length ? items[i++]! : null);
    const work = (n: number) => {
      started.push(`${n}`);
      return cold(`${10 * (6 - n)}ms |`);
    };
    // at most 2 at once: 1 (50ms) and 2 (40ms); 3 starts at 40 (30ms), 4 at 50 (20ms), 5 at 70 (10ms); all done at 80
    expectObservable(pullEach(next, 2, work)).toBe('80ms |');
  });
});

it('in the backlog an interrogation\'s requests sit after the batches that begin at or before its P, in k order, before later batches', () => {
  const item = (id: string, webhookId: string): BacklogItem => ({ id, webhookId, attempts: 1 });
  const items = [
    item('9-0', '7-0_8-0'), item('8-0', 'gi-5-0-2'), item('7-0', '6-0_6-5'), item('6-0', 'gi-5-0-1'), item('5-0', '5-0_5-3'), item('4-0', '4-0_4-0'),
    item('3-0', 'pi-9-0-1'), item('2-0', 'something-else'),
  ];
  expect([...items].sort(byStreamOrder).map((i) => i.webhookId)).toEqual(['4-0_4-0', '5-0_5-3', 'gi-5-0-1', 'gi-5-0-2', '6-0_6-5', '7-0_8-0', 'pi-9-0-1', 'something-else']);
});
