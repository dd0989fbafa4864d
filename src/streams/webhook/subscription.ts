import type { Webhook } from '../../config/webhookSettings';
import type { StartupSettings } from '../../config/startup';
import { urlHost } from '../../config/urls';
import type { WebhookFiles } from '../../config/webhookFiles';
import { webhookKey } from '../read/deliveryState';
import type { LaneSettings } from './laneState';

/**
 * A webhook as the push side serves it: what the configuration says of it (its fields:
 * `src/config/webhookSettings.ts`) with the process defaults merged in once, here. Everything per
 * webhook — its lane, its client, its sending, its backlog, its observer — is made from its
 * subscription.
 */
export interface DeliverySettings extends LaneSettings {
  readonly maxAttempts: number;
  /** Requests open at once. */
  readonly maxInFlight: number;
  readonly probeIntervalMs: number;
  /** One request's time limit (CONTRACT 6.5: connecting, headers and body). */
  readonly timeoutMs: number;
  /** Requests per second at most (CONTRACT 4.5); absent, unlimited. The webhook's own. */
  readonly maxRequestsPerSecond?: number;
  /** CONTRACT 6.7: `Webhooks:AllowedNetworks` (empty: anywhere but the blocked ranges). */
  readonly allowedNetworks?: readonly string[];
  /** CONTRACT 4.7: `Webhooks:MaxBodyBytes`, the longest rendered body (absent: its default, 16 MiB). */
  readonly maxBodyBytes?: number;
}

export interface WebhookSubscription {
  readonly index: number;
  readonly webhook: Webhook;
  /** The webhook as the delivery records know it (`webhookKey`). */
  readonly key: string;
  /** As logs and metric labels show it: host and port, never the full URL, a header or a secret. */
  readonly host: string;
  readonly settings: DeliverySettings;
  /** What the files its settings name hold (TLS material, OAuth 2.0 secret), read at start. */
  readonly files: WebhookFiles;
}

/** CONTRACT 4.2: a webhook's own queue is bounded (1000 batches); overflow goes to its backlog. */
export const QUEUE_CAP = 1000;

/** The process-wide defaults, from the startup parameters (`Webhooks:*`). */
export const deliveryDefaults = (w: StartupSettings['webhooks']): DeliverySettings => ({
  maxAttempts: w.maxAttempts,
  maxInFlight: w.maxInFlight,
  queueCap: QUEUE_CAP,
  circuitThreshold: w.circuitFailureThreshold,
  probeIntervalMs: Math.round(w.probeIntervalSeconds * 1000),
  autoRedrive: w.autoRedrive,
  timeoutMs: w.timeoutMilliseconds,
  allowedNetworks: w.allowedNetworks,
  maxBodyBytes: w.maxBodyBytes,
});

/** One subscription per configured webhook, in configuration order. */
export const makeSubscriptions = (webhooks: readonly Webhook[], defaults: DeliverySettings, files: readonly WebhookFiles[] = []): WebhookSubscription[] =>
  webhooks.map((webhook, index) => ({
    index, webhook, key: webhookKey(index, webhook.url), host: urlHost(webhook.url), files: files[index] ?? {},
    settings: webhook.maxRequestsPerSecond === undefined ? defaults : { ...defaults, maxRequestsPerSecond: webhook.maxRequestsPerSecond },
  }));
