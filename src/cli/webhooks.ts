import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { parseManagedSettings } from '../config/managed';
import { loadWebhookFiles } from '../config/webhookFiles';
import { configKey } from '../mapping/keys';
import type { RateGate } from '../streams/webhook/rateGate';
import { makeSubscriptions, type DeliverySettings, type Subscription } from '../streams/webhook/subscription';

/** What the operator commands that send to webhooks (`deadletter replay`, `webhooks resend`) share. */

/**
 * The webhooks of connector `id` as its outbound connector serves them: the stored settings, the
 * startup parameters' delivery settings, and their TLS and OAuth 2.0 files (CONTRACT 4.5). Throws
 * with the field when the stored settings or a file are invalid.
 */
export const storedSubscriptions = async (r: Redis, id: string, delivery: DeliverySettings): Promise<Subscription[]> => {
  const raw = await r.get(configKey(id));
  const settings = raw === null ? undefined : parseManagedSettings(raw);
  if (settings !== undefined && E.isLeft(settings)) throw new Error(`${configKey(id)} is invalid: ${settings.left.join('; ')}`);
  const webhooks = settings?.right.webhooks ?? [];
  const files = loadWebhookFiles(webhooks);
  if (E.isLeft(files)) throw new Error(`${configKey(id)}: ${files.left.join('; ')}`);
  return makeSubscriptions(webhooks, delivery, files.right);
};

/** Waits for the rate cap's turn (CONTRACT 4.5), when there is a cap. */
export const awaitTurn = async (gate: RateGate | undefined): Promise<void> => {
  if (gate === undefined) return;
  for (let ms = gate.tryStart(Date.now()); ms > 0; ms = gate.tryStart(Date.now())) await new Promise((r) => setTimeout(r, ms));
};
