import type { Batch } from '../read/batches';
import type { AttemptResult } from './answers';
import type { BacklogReason } from './backlogEntry';
import type { InterrogationEvent } from './interrogation';
import type { WebhookState } from './laneState';

/** What a webhook's lane (`lane.ts`) tells the world: each batch's outcome, and the hooks its observer (logs, metrics, the status) gets. */

/**
 * `skipped`: nothing to send — a re-formed batch this webhook has already (CONTRACT 4.3), or a
 * batch none of whose points its filter matches (4.5; it counts as delivered to it).
 */
export type LaneOutcome = 'delivered' | 'deadlettered' | 'skipped';

export interface LaneResult {
  readonly webhook: number;
  readonly batch: Batch;
  readonly outcome: LaneOutcome;
}

/** Hooks for logs, metrics and the delivery status, called at the edge; the lane itself never logs. */
export interface LaneObserver {
  attempt(result: AttemptResult, attempt: number, seconds: number, willRetry: boolean): void;
  finished(batch: Batch, outcome: LaneOutcome, attempts: number, reason?: string, backlogReason?: BacklogReason): void;
  queueDepth(depth: number): void;
  /** Every change of state, in-flight requests or consecutive failures. */
  status(s: LaneStatus): void;
  /** A backlog entry redriven (or probed): delivered, or failed again; `batch` as it was sent. */
  redriven(webhookId: string, delivered: boolean, reason?: string, batch?: Batch): void;
  /** An interrogation began, sent points, completed or failed (CONTRACT 4.6). */
  interrogation?(e: InterrogationEvent): void;
  /** CONTRACT 4.7: points its format cannot write, left out of a batch's body. */
  pointsSkipped?(count: number): void;
  /** CONTRACT 4.7: a batch that could not be rendered for it (dead-lettered with the default body). */
  renderFailed?(batch: Batch, error: string): void;
}

export interface LaneStatus {
  readonly state: WebhookState;
  readonly consecutiveFailures: number;
  readonly inFlight: number;
  readonly queued: number;
}

