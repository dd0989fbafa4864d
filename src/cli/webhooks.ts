import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { parseManagedSettings } from '../config/managed';
import { loadWebhookFiles } from '../config/webhookFiles';
import { configKey } from '../mapping/keys';
import { exponentialBackoff } from '../streams/webhook/answers';
import { webhookClient, type ClientTracing, type WebhookClient } from '../streams/webhook/client';
import { webhookSending, type Sending } from '../streams/webhook/sending';
import { makeSubscriptions, type DeliverySettings, type WebhookSubscription } from '../streams/webhook/subscription';
import { USER_AGENT } from '../version';

/** What the operator commands that send to webhooks (`deadletter replay`, `webhooks resend`) share. */

/**
 * The webhooks of connector `id` as its outbound connector serves them: the stored settings, the
 * startup parameters' delivery settings, and their TLS and OAuth 2.0 files (CONTRACT 4.5). Throws
 * with the field when the stored settings or a file are invalid.
 */
export const storedSubscriptions = async (r: Redis, id: string, delivery: DeliverySettings): Promise<WebhookSubscription[]> => {
  const raw = await r.get(configKey(id));
  const settings = raw === null ? undefined : parseManagedSettings(raw);
  if (settings !== undefined && E.isLeft(settings)) throw new Error(`${configKey(id)} is invalid: ${settings.left.join('; ')}`);
  const webhooks = settings?.right.webhooks ?? [];
  const files = loadWebhookFiles(webhooks);
  if (E.isLeft(files)) throw new Error(`${configKey(id)}: ${files.left.join('; ')}`);
  return makeSubscriptions(webhooks, delivery, files.right);
};

/**
 * A webhook as an operator command sends to it: its own client (headers, signatures, TLS, OAuth 2.0)
 * and its sending — request slots, rate cap and retry policy — made as the connector's lane makes them.
 */
export interface OperatorWebhook {
  readonly client: WebhookClient;
  readonly sending: Sending;
}

export const operatorWebhook = (
  s: WebhookSubscription, o: { readonly tracing?: ClientTracing | undefined; readonly backoff?: (attempt: number) => number; readonly now?: () => number } = {},
): OperatorWebhook => {
  const client = webhookClient(s, USER_AGENT, o.now ?? Date.now, o.tracing);
  return { client, sending: webhookSending({ settings: s.settings, post: client.post, backoff: o.backoff ?? exponentialBackoff() }) };
};
