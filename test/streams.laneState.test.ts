import * as L from '../src/streams/webhook/laneState';

/** One table per invariant of src/streams/webhook/laneState.ts: the lane's rules without a scheduler, a request or a backlog. */
const S = (over: Partial<L.LaneSettings> = {}): L.LaneSettings => ({ queueCap: 2, circuitThreshold: 2, autoRedrive: true, ...over });
const at = (over: Partial<L.LaneState> = {}, s = S()): L.LaneState => ({ ...L.initialLaneState(s), backlog: 'empty', ...over });
/** Applies events in order; returns the final state. */
const after = (s: L.LaneSettings, state: L.LaneState, ...events: Array<(x: L.LaneState) => L.LaneState>): L.LaneState => events.reduce((x, e) => e(x), state);

describe('lane state (src/streams/webhook/laneState.ts)', () => {
  it('1: a batch the webhook already has is skipped, whatever else holds (circuit, backlog, full queue)', () => {
    for (const state of [at(), at({ open: true }), at({ backlog: 'waits' }), at({ depth: 2 })]) {
      const [next, arrival] = L.arrive(state, S(), true);
      expect([arrival, next]).toEqual([{ kind: 'skip' }, state]);
    }
  });

  it.each([
    ['open circuit', at({ open: true }), S(), { kind: 'backlog', reason: 'circuit', error: 'circuit open' }],
    ['open circuit beats a full queue', at({ open: true, depth: 2 }), S(), { kind: 'backlog', reason: 'circuit', error: 'circuit open' }],
  ] as const)('2: %s: to the backlog as circuit, without attempts', (_name, state, s, expected) => {
    expect(L.arrive(state, s, false)).toEqual([state, expected]);
  });

  it('3: while redrivable entries may wait, a new batch queues behind them (AutoRedrive); without AutoRedrive it goes out live', () => {
    expect(L.arrive(at({ backlog: 'waits' }), S(), false)[1]).toEqual({ kind: 'backlog', reason: 'circuit', error: 'older batches wait in the backlog' });
    expect(L.arrive(at({ backlog: 'waits' }, S({ autoRedrive: false })), S({ autoRedrive: false }), false)[1]).toEqual({ kind: 'live' });
  });

  it('4: beyond queueCap accepted batches, a new one overflows to the backlog; a finished one frees a place', () => {
    const s = S({ queueCap: 2 });
    let state = at();
    const arrivals: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [next, a] = L.arrive(state, s, false);
      state = next;
      arrivals.push(a.kind === 'backlog' ? a.reason : a.kind);
    }
    expect([arrivals, state.depth]).toEqual([['live', 'live', 'overflow'], 2]);
    expect(L.arrive(L.liveFinished(state), s, false)[1]).toEqual({ kind: 'live' });
  });

  it('5: the circuit opens at the threshold of failures in a row, once; a delivery resets the count; only a delivered probe closes it', () => {
    const s = S({ circuitThreshold: 3 });
    const rows: Array<[string, L.LaneState, boolean]> = [];
    let state = at({}, s);
    for (const step of ['fail', 'fail', 'ok', 'fail', 'fail', 'fail', 'fail', 'ok', 'probe'] as const) {
      let opened = false;
      if (step === 'fail') [state, { opened }] = L.failed(state, s);
      else if (step === 'ok') state = L.delivered(state);
      else state = L.probeDelivered(state);
      rows.push([step, state, opened]);
    }
    expect(rows.map(([step, x, opened]) => `${step} ${x.failures} ${x.open ? 'open' : 'closed'}${opened ? ' opened' : ''}`)).toEqual([
      'fail 1 closed', 'fail 2 closed', 'ok 0 closed', 'fail 1 closed', 'fail 2 closed', 'fail 3 open opened', 'fail 4 open', 'ok 0 open', 'probe 0 closed',
    ]);
  });

  it('6: the backlog starts unknown with AutoRedrive; known to wait after a redrivable append or a scan that found some; empty only after an empty scan with no append during it', () => {
    expect(L.initialLaneState(S()).backlog).toBe('unknown');
    expect(L.initialLaneState(S({ autoRedrive: false })).backlog).toBe('empty');
    const s = S();
    const clear = at();
    expect(L.appended(clear, 'refused')).toEqual([clear, { wake: false }]);
    for (const reason of ['exhausted', 'overflow', 'circuit'] as const) expect(L.appended(clear, reason)).toEqual([{ ...clear, backlog: 'waits', appendsSinceScan: 1 }, { wake: true }]);
    const waiting = at({ backlog: 'waits' });
    expect(after(s, waiting, L.scanStarted, (x) => L.scanned(x, 0)).backlog).toBe('empty');
    expect(after(s, waiting, L.scanStarted, (x) => L.scanned(x, 3)).backlog).toBe('waits');
    // an append while the scan ran: its entry may not be in what the scan read
    expect(after(s, waiting, L.scanStarted, (x) => L.appended(x, 'circuit')[0], (x) => L.scanned(x, 0)).backlog).toBe('waits');
    expect(after(s, waiting, (x) => L.appended(x, 'circuit')[0], L.scanStarted, (x) => L.scanned(x, 0)).backlog).toBe('empty');
    // the start: the first scan tells
    const start = L.initialLaneState(s);
    expect(after(s, start, L.scanStarted, (x) => L.scanned(x, 0)).backlog).toBe('empty');
    expect(after(s, start, L.scanStarted, (x) => L.scanned(x, 2)).backlog).toBe('waits');
    expect(after(s, start, L.scanStarted, (x) => L.appended(x, 'overflow')[0], (x) => L.scanned(x, 0)).backlog).toBe('waits');
  });

  it('6, 3, 7: an unknown backlog (the start) queues new batches behind it and is scanned, but is not shown as redriving: a start with an empty backlog stays healthy', () => {
    const s = S();
    const start = L.initialLaneState(s);
    expect(L.arrive(start, s, false)[1]).toEqual({ kind: 'backlog', reason: 'circuit', error: 'older batches wait in the backlog' });
    expect(L.nextRedrive(start, s)).toBe('pass');
    expect(L.shownState(start, s)).toBe('healthy');
    // the first scan finds none: nothing shown changes on the way
    const scanned = after(s, start, L.scanStarted, (x) => L.scanned(x, 0));
    expect([L.shownChanged(start, after(s, start, L.scanStarted), s), L.shownChanged(start, scanned, s), L.shownState(scanned, s)]).toEqual([false, false, 'healthy']);
    expect(L.arrive(scanned, s, false)[1]).toEqual({ kind: 'live' });
    // it finds some: redriving
    expect(L.shownState(after(s, start, L.scanStarted, (x) => L.scanned(x, 1)), s)).toBe('redriving');
  });

  it.each([
    ['open, redriving and retrying', at({ open: true, redriving: true, waitingRetry: 1 }), S(), 'open'],
    ['a redrive running, a retry waiting', at({ redriving: true, waitingRetry: 1 }), S(), 'redriving'],
    ['entries waiting (AutoRedrive), a retry waiting', at({ backlog: 'waits', waitingRetry: 1 }), S(), 'redriving'],
    ['entries waiting without AutoRedrive, a retry waiting', at({ backlog: 'waits', waitingRetry: 1 }), S({ autoRedrive: false }), 'retrying'],
    ['two retries waiting', at({ waitingRetry: 2 }), S(), 'retrying'],
    ['batches in flight, one failure', at({ depth: 2, failures: 1 }), S(), 'healthy'],
  ] as const)('7: %s: shown as the expected state', (_name, state, s, shown) => {
    expect(L.shownState(state, s)).toBe(shown);
  });

  it('7: the redrive loop probes an open circuit, passes over a waiting backlog (AutoRedrive), else waits', () => {
    expect([L.nextRedrive(at({ open: true, backlog: 'waits' }), S()), L.nextRedrive(at({ backlog: 'waits' }), S()), L.nextRedrive(at({ backlog: 'waits' }), S({ autoRedrive: false })), L.nextRedrive(at(), S())]).toEqual([
      'probe', 'pass', 'wait', 'wait',
    ]);
  });

  it('8: only a written append changes the state toward the backlog; a failure counts toward the circuit without making the batch dead-lettered', () => {
    const s = S({ circuitThreshold: 1 });
    const [afterFailure] = L.failed(at({}, s), s);
    // the failure opened the circuit, but nothing says the batch is in the backlog until `appended`
    expect([afterFailure.open, afterFailure.backlog, afterFailure.appendsSinceScan]).toEqual([true, 'empty', 0]);
    expect(L.appended(afterFailure, 'exhausted')[0]).toMatchObject({ backlog: 'waits', appendsSinceScan: 1 });
    expect(after(s, at({}, s), L.retryScheduled, L.retryScheduled, L.retryDue).waitingRetry).toBe(1);
    expect(after(s, at({}, s), L.redriveStarted).redriving).toBe(true);
    expect(after(s, at({}, s), L.redriveStarted, L.redriveEnded).redriving).toBe(false);
  });
  it('9: a disabled webhook (410 Gone) gets every new batch in its backlog as disabled, is shown disabled before anything else, redrives and probes nothing; enabled, its backlog is redriven', () => {
    const s = S();
    for (const state of [at({ disabled: true }), at({ disabled: true, open: true }), at({ disabled: true, backlog: 'waits', depth: 2 })]) {
      expect(L.arrive(state, s, false)).toEqual([state, { kind: 'backlog', reason: 'disabled', error: 'webhook disabled: it answered 410 Gone' }]);
      expect(L.shownState(state, s)).toBe('disabled');
      expect(L.nextRedrive(state, s)).toBe('watch');
    }
    expect(L.arrive(at({ disabled: true }), s, true)[1]).toEqual({ kind: 'skip' }); // invariant 1 still first
    expect(L.gone(at()).disabled).toBe(true);
    expect(L.initialLaneState(s, true).disabled).toBe(true);
    const back = L.enabled(at({ disabled: true, open: true, failures: 5 }));
    expect([back.disabled, back.open, back.failures, L.nextRedrive(back, s), L.shownState(back, s)]).toEqual([false, false, 0, 'pass', 'redriving']);
    expect(L.appended(at(), 'disabled')[1]).toEqual({ wake: true });
  });
});
