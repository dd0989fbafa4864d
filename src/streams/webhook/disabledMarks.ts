import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { defer, map, type Observable, of } from 'rxjs';
import { webhookFingerprint, type Webhook } from '../../config/webhookSettings';
import { disabledKey } from '../../mapping/keys';
import { persist } from '../store/persist';
import type { WebhookSubscription } from './subscription';

/** Where a webhook's 410 Gone is remembered across restarts and replicas (CONTRACT 4.5). */
export interface DisabledMark {
  /** Remembers that the webhook is disabled; completes once written. */
  disable(): Observable<unknown>;
  /** Whether it still is (an operator's successful replay enables it). */
  isDisabled(): Observable<boolean>;
}

/** For a lane without a store (tests): disabled until the process ends. */
export const memoryDisabledMark = (): DisabledMark & { enable(): void } => {
  let disabled = false;
  return { disable: () => of((disabled = true)), isDisabled: () => of(disabled), enable: () => void (disabled = false) };
};

/**
 * Webhooks that answered 410 Gone (CONTRACT 4.5), remembered in `connectors:{ID}:disabled`: field
 * the webhook's key (`webhookKey`), value a digest of its settings when it was disabled (never the
 * settings themselves: they hold secrets). A mark whose digest differs from the webhook's current
 * settings is stale — its configuration changed — and is deleted at start; an operator's
 * successful replay deletes it too. Every replica of the Id reads the same marks.
 */
export const settingsDigest = (w: Webhook): string => createHash('sha256').update(JSON.stringify(webhookFingerprint(w))).digest('base64url');

export const redisDisabledMarks = (redis: Redis, connectorId: string, retryMs: number, onWriteError: (err: unknown) => void) => {
  const key = disabledKey(connectorId);
  return {
    /** The keys of the subscriptions disabled now; stale marks of these subscriptions deleted. */
    load: async (subs: readonly WebhookSubscription[]): Promise<Set<string>> => {
      const marks = await redis.hgetall(key);
      const disabled = new Set<string>();
      const stale: string[] = [];
      for (const s of subs) {
        const digest = marks[s.key];
        if (digest === undefined) continue;
        if (digest === settingsDigest(s.webhook)) disabled.add(s.key);
        else stale.push(s.key);
      }
      if (stale.length > 0) await redis.hdel(key, ...stale);
      return disabled;
    },
    mark: (s: WebhookSubscription): DisabledMark => {
      const digest = settingsDigest(s.webhook);
      return {
        disable: (): Observable<unknown> => persist(retryMs, () => redis.hset(key, s.key, digest), onWriteError),
        isDisabled: () => defer(() => redis.hget(key, s.key)).pipe(map((v) => v === digest)),
      };
    },
  };
};

/** An operator's replay delivered to the webhook: enabled again (every replica's lane sees it within a probe interval). */
export const enableWebhook = (redis: Redis, connectorId: string, s: WebhookSubscription): Promise<number> => redis.hdel(disabledKey(connectorId), s.key);
