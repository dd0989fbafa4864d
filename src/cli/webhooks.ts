import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { parseManagedSettings } from '../config/managed';
import { loadWebhookFiles } from '../config/webhookFiles';
import { configKey } from '../mapping/keys';
import type { ClientTracing } from '../streams/webhook/client';
import { operatorWebhook as sharedOperatorWebhook, type OperatorWebhook } from '../streams/webhook/backlogOps';
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

export type { OperatorWebhook } from '../streams/webhook/backlogOps';

/** A webhook as an operator command sends to it (`operatorWebhook` of the backlog operations), with this version's User-Agent. */
export const operatorWebhook = (
  s: WebhookSubscription, o: { readonly tracing?: ClientTracing | undefined; readonly backoff?: (attempt: number) => number; readonly now?: () => number } = {},
): OperatorWebhook => sharedOperatorWebhook(s, USER_AGENT, o);
