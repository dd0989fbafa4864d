import { REDRIVABLE, type BacklogReason } from './backlogEntry';

/**
 * The state of one webhook's lane (CONTRACT 4.2, 4.4) and how each event changes it: a pure
 * transition function (`step`, over the events of `LaneEvent`). The RxJS lane (`lane.ts`) sends
 * the requests, waits and writes; it asks this module what to do with a batch and tells it what
 * happened, and never changes the state otherwise.
 *
 * Invariants (each has a row in test/streams.laneState.test.ts):
 * 1. A batch the webhook already has (re-formed after a restart, marked done), or of which its
 *    filter matches nothing, is skipped: never sent, never put in the backlog.
 * 2. While the circuit is open, a new batch goes to the backlog as `circuit`, without attempts.
 * 3. While redrivable backlog entries may wait (AutoRedrive), a new batch goes to the backlog as
 *    `circuit` behind them instead of overtaking them: first attempts keep stream order.
 * 4. Beyond `queueCap` batches accepted and not finished, a new batch goes to the backlog as
 *    `overflow` at once.
 * 5. The circuit opens when `circuitThreshold` batches in a row ended in the backlog as exhausted
 *    or refused (or were redriven and failed again); a delivered batch resets the count; only a
 *    probe answered 2xx closes the circuit.
 * 6. The backlog is known to hold redrivable entries (`waits`) after every redrivable append and
 *    after a scan that found some; known `empty` only after a scan that found none while no
 *    redrivable append came during it; `unknown` at the start (a previous run may have left some).
 *    With AutoRedrive, `unknown` is treated as `waits` by invariant 3 and the redrive (it scans),
 *    and as nothing by the state shown (invariant 7): a start with an empty backlog never shows
 *    `redriving`.
 * 7. The state shown (`healthy`, `retrying`, `open`, `redriving`) is `open` whenever the circuit
 *    is, else `redriving` while a redrive runs or entries are known to wait (AutoRedrive), else
 *    `retrying` while a batch waits for a retry.
 * 8. A batch counts as dead-lettered only once its backlog entry is written (the lane waits for
 *    the append, which retries until it lands): `appended` is the only way to it.
 * 9. A webhook that answered 410 Gone is `disabled` (CONTRACT 4.5): every new batch goes to the
 *    backlog as `disabled`, nothing is sent — no attempt, probe or redrive — until it is enabled
 *    again (its configuration changed, or an operator's replay to it succeeded); then its backlog
 *    is redriven as after any outage. Disabled is the state shown, before any other.
 * 10. An interrogation (CONTRACT 4.6) takes its place in the order: the batches that arrived before
 *    it was asked for get their first attempts first; a batch that arrives after it waits until
 *    every request of it was answered 2xx or put in the backlog; its own requests are batches to
 *    every rule above. The lane keeps this with one gate per interrogation (`lane.ts`; its rows
 *    are in test/streams.interrogation.marbles.test.ts); in the backlog, its requests sit after the
 *    batches that begin at or before its `P` (`byStreamOrder`).
 */
export interface LaneSettings {
  /** Batches accepted and not yet finished; beyond it a batch goes to the backlog at once. */
  readonly queueCap: number;
  /** Batches in a row ending in the backlog as exhausted or refused that open the circuit. */
  readonly circuitThreshold: number;
  readonly autoRedrive: boolean;
}

/** What the lane knows of its backlog's redrivable entries (invariant 6). */
export type BacklogKnown = 'unknown' | 'waits' | 'empty';

export interface LaneState {
  /** Live batches accepted and not finished (their first attempt may not have gone out yet). */
  readonly depth: number;
  /** Batches waiting for a retry's timer. */
  readonly waitingRetry: number;
  /** Batches in a row that ended in the backlog as exhausted or refused, or failed a redrive again. */
  readonly failures: number;
  readonly open: boolean;
  /** Whether redrivable backlog entries wait (invariant 6). */
  readonly backlog: BacklogKnown;
  /** Redrivable appends since the running scan began. */
  readonly appendsSinceScan: number;
  readonly redriving: boolean;
  /** Answered 410 Gone (invariant 9). */
  readonly disabled: boolean;
}

export const initialLaneState = (s: LaneSettings, disabled = false): LaneState => ({
  depth: 0, waitingRetry: 0, failures: 0, open: false, backlog: s.autoRedrive ? 'unknown' : 'empty', appendsSinceScan: 0, redriving: false, disabled,
});

/** What to do with a new batch (invariants 1–4). */
export type Arrival =
  | { readonly kind: 'skip' }
  | { readonly kind: 'backlog'; readonly reason: BacklogReason; readonly error: string }
  | { readonly kind: 'live' };

export const arrive = (state: LaneState, s: LaneSettings, nothingToSend: boolean): [LaneState, Arrival] => {
  if (nothingToSend) return [state, { kind: 'skip' }];
  if (state.disabled) return [state, { kind: 'backlog', reason: 'disabled', error: 'webhook disabled: it answered 410 Gone' }];
  if (state.open) return [state, { kind: 'backlog', reason: 'circuit', error: 'circuit open' }];
  if (s.autoRedrive && state.backlog !== 'empty') return [state, { kind: 'backlog', reason: 'circuit', error: 'older batches wait in the backlog' }];
  if (state.depth >= s.queueCap) return [state, { kind: 'backlog', reason: 'overflow', error: `queue full (${s.queueCap} batches)` }];
  return [{ ...state, depth: state.depth + 1 }, { kind: 'live' }];
};

/** A live batch finished (delivered, or in the backlog). */
export const liveFinished = (state: LaneState): LaneState => ({ ...state, depth: state.depth - 1 });

export const retryScheduled = (state: LaneState): LaneState => ({ ...state, waitingRetry: state.waitingRetry + 1 });
export const retryDue = (state: LaneState): LaneState => ({ ...state, waitingRetry: state.waitingRetry - 1 });

/** A batch (live or redriven) delivered: the count toward the circuit starts again (invariant 5). */
export const delivered = (state: LaneState): LaneState => ({ ...state, failures: 0 });

/** A batch ended in the backlog as exhausted or refused, or failed a redrive again; `opened` when that opened the circuit. */
export const failed = (state: LaneState, s: LaneSettings): [LaneState, { readonly opened: boolean }] => {
  const failures = state.failures + 1;
  const opened = failures >= s.circuitThreshold && !state.open;
  return [{ ...state, failures, open: state.open || opened }, { opened }];
};

/** The webhook answered 410 Gone (invariant 9). */
export const gone = (state: LaneState): LaneState => ({ ...state, disabled: true });

/** Enabled again (invariant 9): its backlog is redriven as after an outage, the circuit closed. */
export const enabled = (state: LaneState): LaneState => ({ ...state, disabled: false, open: false, failures: 0, backlog: 'waits' });

/** A probe answered 2xx: the circuit closes (invariant 5). */
export const probeDelivered = (state: LaneState): LaneState => ({ ...state, open: false });

/** A backlog entry written (invariant 8); `wake` when the redrive should look at the backlog. */
export const appended = (state: LaneState, reason: BacklogReason): [LaneState, { readonly wake: boolean }] =>
  REDRIVABLE.has(reason) ? [{ ...state, backlog: 'waits', appendsSinceScan: state.appendsSinceScan + 1 }, { wake: true }] : [state, { wake: false }];

export const scanStarted = (state: LaneState): LaneState => ({ ...state, appendsSinceScan: 0 });

/** A scan found `count` redrivable entries (invariant 6). */
export const scanned = (state: LaneState, count: number): LaneState =>
  count > 0 ? { ...state, backlog: 'waits' } : state.appendsSinceScan === 0 ? { ...state, backlog: 'empty' } : state;

export const redriveStarted = (state: LaneState): LaneState => ({ ...state, redriving: true });
export const redriveEnded = (state: LaneState): LaneState => ({ ...state, redriving: false });

/**
 * What the redrive loop does next: while disabled, watch for being enabled again (invariant 9);
 * probe an open circuit, pass over the backlog, or wait to be woken.
 */
export const nextRedrive = (state: LaneState, s: LaneSettings): 'watch' | 'probe' | 'pass' | 'wait' =>
  state.disabled ? 'watch' : state.open ? 'probe' : s.autoRedrive && state.backlog !== 'empty' ? 'pass' : 'wait';

/** The state as `GET /api/webhooks` and `webhook_state` show it (CONTRACT 4.4, 4.5; invariants 7, 9). */
export type WebhookState = 'healthy' | 'retrying' | 'open' | 'redriving' | 'disabled';

export const shownState = (state: LaneState, s: LaneSettings): WebhookState =>
  state.disabled ? 'disabled' : state.open ? 'open' : state.redriving || (s.autoRedrive && state.backlog === 'waits') ? 'redriving' : state.waitingRetry > 0 ? 'retrying' : 'healthy';

/** What happened to a lane: everything that changes its state, one event each. */
export type LaneEvent =
  | { readonly kind: 'arrived'; readonly nothingToSend: boolean }
  | { readonly kind: 'liveFinished' }
  | { readonly kind: 'retryScheduled' }
  | { readonly kind: 'retryDue' }
  | { readonly kind: 'delivered' }
  | { readonly kind: 'failed' }
  | { readonly kind: 'gone' }
  | { readonly kind: 'enabled' }
  | { readonly kind: 'probeDelivered' }
  | { readonly kind: 'appended'; readonly reason: BacklogReason }
  | { readonly kind: 'scanStarted' }
  | { readonly kind: 'scanned'; readonly count: number }
  | { readonly kind: 'redriveStarted' }
  | { readonly kind: 'redriveEnded' };

/** What an event tells the lane to do besides changing its state. */
export interface StepOutput {
  /** `arrived`: what to do with the batch. */
  readonly arrival?: Arrival;
  /** `failed` opened the circuit, or `appended` wrote a redrivable entry: the redrive should look. */
  readonly wake?: boolean;
}

const NOTHING: StepOutput = {};

/** The lane's one reducer: the next state after `e`, and what it tells the lane. Each case is one of the transitions above. */
export const step = (state: LaneState, s: LaneSettings, e: LaneEvent): readonly [LaneState, StepOutput] => {
  switch (e.kind) {
    case 'arrived': {
      const [next, arrival] = arrive(state, s, e.nothingToSend);
      return [next, { arrival }];
    }
    case 'liveFinished':
      return [liveFinished(state), NOTHING];
    case 'retryScheduled':
      return [retryScheduled(state), NOTHING];
    case 'retryDue':
      return [retryDue(state), NOTHING];
    case 'delivered':
      return [delivered(state), NOTHING];
    case 'failed': {
      const [next, { opened }] = failed(state, s);
      return [next, { wake: opened }];
    }
    case 'gone':
      return [gone(state), NOTHING];
    case 'enabled':
      return [enabled(state), NOTHING];
    case 'probeDelivered':
      return [probeDelivered(state), NOTHING];
    case 'appended': {
      const [next, { wake }] = appended(state, e.reason);
      return [next, { wake }];
    }
    case 'scanStarted':
      return [scanStarted(state), NOTHING];
    case 'scanned':
      return [scanned(state, e.count), NOTHING];
    case 'redriveStarted':
      return [redriveStarted(state), NOTHING];
    case 'redriveEnded':
      return [redriveEnded(state), NOTHING];
  }
};

/** Whether the status shows `b` otherwise than `a` (its state or its count of failures in a row). */
export const shownChanged = (a: LaneState, b: LaneState, s: LaneSettings): boolean =>
  a.failures !== b.failures || shownState(a, s) !== shownState(b, s);
