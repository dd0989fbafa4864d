import { isOutOfMemory } from '../store/replies';
import type { Metrics } from '../../telemetry/metrics';
import type { BacklogItem } from '../webhook/backlog';
import type { Batch } from '../read/batches';
import type { GroupHealth } from '../read/groupHealth';
import type { LossReport } from '../read/lossTracker';
import type { WebhookSubscription } from '../webhook/subscription';
import type { Logger } from 'pino';

/** CONTRACT 6.6: a write that keeps failing is logged at most this often per kind and cause. */
const WRITE_FAILURE_LOG_MS = 60_000;

/**
 * The push side's log lines and metrics, next to what they describe; the composition root
 * (`src/runtime/outbound.ts`) only wires these to the streams. (A webhook's own lines and metrics are its
 * lane observer's: `src/streams/webhook/status.ts`.)
 */
export const pushObserver = (log: Logger, metrics: Metrics, group: string, retrySeconds: number, now: () => number = Date.now) => {
  const lastWriteFailure = new Map<string, number>();
  /**
   * The writes that must land (delivery records, backlog entries, acknowledgements, the group's
   * reads) are retried until they do, and what waits on them stays pending meanwhile: this says
   * why, at most once a minute per kind of write and cause, and counts every refusal for want of memory.
   */
  const writeFailed = (write: string, err: unknown): void => {
    const message = err instanceof Error ? err.message : String(err);
    const oom = isOutOfMemory(message);
    if (oom) metrics.outOfMemory.inc({ write: write.replace(/ \(.*\)$/, '').replace(/ /g, '_') });
    const key = `${write} ${oom ? 'oom' : 'other'}`;
    const t = now();
    const previous = lastWriteFailure.get(key);
    if (previous !== undefined && t - previous < WRITE_FAILURE_LOG_MS) return;
    lastWriteFailure.set(key, t);
    if (oom) log.error({ write, err: message }, `the data store is out of memory: cannot write the ${write}; nothing is acknowledged meanwhile, and the write is retried until Redis takes it`);
    else log.warn({ write, err: message }, `cannot write the ${write}; its entries stay pending (never acknowledged) and the write is retried`);
  };
  return {
    writeFailed,
    /** A reading of the group's health and what the loss tracker made of it. */
    groupHealth: (h: GroupHealth, r: LossReport): void => {
      metrics.groupPending.set(h.pending);
      metrics.streamLength.set(h.length);
      if (h.lag !== null) metrics.groupLag.set(h.lag);
      if (r.newlyLost === null) log.error({ group }, 'entries of process:updates were trimmed before this connector read them (Redis cannot tell how many)');
      else if (r.newlyLost > 0) {
        metrics.entriesLost.inc(r.newlyLost);
        log.error({ group, lost: r.newlyLost }, 'entries of process:updates were trimmed before this connector read them');
      }
      if (r.lagWarning) log.warn({ group, lag: h.lag, length: h.length }, 'consumer group lag is over half of the stream length; entries may be trimmed before they are read');
    },
    groupHealthFailed: (err: Error): void => log.debug({ err: err.message }, 'stream health check failed'),
    backlogDropped: (s: WebhookSubscription, item: BacklogItem): void => {
      metrics.deadLetterDropped.inc({ webhook: String(s.index), host: s.host });
      log.error({ webhook: s.index, host: s.host, webhookId: item.webhookId, deadLetterId: item.id }, 'a backlog batch was trimmed by Webhooks:DeadLetterMaxLength before it was delivered');
    },
    backlogReadFailed: (s: WebhookSubscription, err: Error): void => log.debug({ webhook: s.index, err: err.message }, 'reading the webhook backlog failed'),
    /** XREADGROUP is a write to Redis (it moves the group): refused while Redis is out of memory. */
    readFailed: (err: unknown): void =>
      isOutOfMemory((err as Error).message)
        ? writeFailed('consumer group (XREADGROUP)', err)
        : log.warn({ err: (err as Error).message, retryInSeconds: retrySeconds }, 'reading process:updates failed; retrying'),
    claimed: (from: string, into: string, count: number, idleMs: number): void =>
      log.warn({ group, from, into, count, idleSeconds: Math.round(idleMs / 1000) }, 'claimed the pending entries of a consumer that stopped reading'),
    entriesRead: (count: number): void => metrics.entriesRead.inc(count),
    undeliverable: (id: string, reason: string): void => {
      metrics.entriesUndeliverable.inc();
      log.warn({ id, reason }, 'stream entry skipped and acknowledged');
    },
    batch: (b: Batch): void => metrics.batchSize.observe(b.size),
    started: (consumer: string, webhooks: number): void => log.info({ group, consumer, webhooks }, 'push pipeline started'),
    failed: (reason: string): void => log.fatal({ err: reason }, 'push pipeline failed; stopping, so that the orchestrator restarts the connector'),
    stopTimedOut: (pending: number, waitedMs: number): void =>
      log.warn(
        { pending, waitedMs },
        'in-flight deliveries did not finish in time; their entries stay pending, and after the restart only the webhooks that did not finish them get them again',
      ),
  };
};

export type PushObserver = ReturnType<typeof pushObserver>;
