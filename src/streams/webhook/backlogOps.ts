import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { safeUrl } from '../../config/urls';
import { deadLetterStream } from '../../mapping/keys';
import { flatRecord } from '../store/replies';
import { backlogPages, readBacklog } from './backlog';
import { backlogBatch, type BacklogEntry } from './backlogEntry';
import { exponentialBackoff } from './answers';
import { webhookClient, type ClientTracing, type WebhookClient } from './client';
import { enableWebhook } from './disabledMarks';
import { webhookSending, type Sending } from './sending';
import type { WebhookSubscription } from './subscription';

/**
 * The operator's commands on the webhooks' backlogs (CONTRACT 4.4, 6.8): list, replay, purge. One
 * implementation with two doors — `rest-connector deadletter` and the outbound connector's
 * `/api/webhooks/{index}/backlog` endpoints (the operator page's buttons) — so both select, send
 * and delete entries the same way.
 */

/** Which entries: of one webhook (its index), dead-lettered at or after `since`, before `before` (epoch ms). */
export interface BacklogSelection {
  readonly webhook?: number;
  readonly since?: number;
  readonly before?: number;
}

/** When an entry was dead-lettered: its stream ID's milliseconds. */
export const entryTime = (e: Pick<BacklogEntry, 'id'>): number => Number(e.id.split('-')[0]);

export const selects = (a: BacklogSelection) => (e: BacklogEntry): boolean =>
  (a.webhook === undefined || e.webhook === a.webhook) &&
  (a.since === undefined || entryTime(e) >= a.since) &&
  (a.before === undefined || entryTime(e) < a.before);

/** The selected entries, oldest first (as stored). */
export const listBacklog = async (r: Redis, id: string, a: BacklogSelection): Promise<BacklogEntry[]> => (await readBacklog(r, id)).filter(selects(a));

/**
 * The ID of the backlog's newest entry (undefined when it is empty): a replay or a purge ends there,
 * so entries a lane appends meanwhile (its webhook still down) are not walked into without end.
 */
const newestId = async (r: Redis, id: string): Promise<string | undefined> => {
  // with the commands the README's ACL user has (TYPE, XINFO STREAM): no stream, nothing to walk
  if ((await r.type(deadLetterStream(id))) === 'none') return undefined;
  const last = flatRecord((await r.xinfo('STREAM', deadLetterStream(id))) as unknown[])['last-generated-id'];
  return typeof last === 'string' ? last : undefined;
};

/** Deletes the selected entries present when it began, a page at a time; resolves to how many. */
export const purgeBacklog = async (r: Redis, id: string, a: BacklogSelection): Promise<number> => {
  const end = await newestId(r, id);
  if (end === undefined) return 0;
  let purged = 0;
  for await (const page of backlogPages(r, id, '-', 1000, end)) {
    const ids = page.filter(selects(a)).map((e) => e.id);
    if (ids.length > 0) purged += await r.xdel(deadLetterStream(id), ...ids);
  }
  return purged;
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
  s: WebhookSubscription, userAgent: string,
  o: { readonly tracing?: ClientTracing | undefined; readonly backoff?: (attempt: number) => number; readonly now?: () => number } = {},
): OperatorWebhook => {
  const client = webhookClient(s, userAgent, o.now ?? Date.now, o.tracing);
  return { client, sending: webhookSending({ settings: s.settings, post: client.post, backoff: o.backoff ?? exponentialBackoff() }) };
};

/** The subscription an entry belongs to in the current configuration: by its index, or (older entries without one) its URL. */
const subscriptionOf = (e: BacklogEntry, subs: readonly WebhookSubscription[]): WebhookSubscription | undefined =>
  e.webhook !== null ? subs[e.webhook] : subs.find((s) => safeUrl(s.webhook.url) === e.url);

/**
 * CONTRACT 4.4: each selected entry sent once, without retries, to its webhook's current URL,
 * whatever the circuit and the reason, within the webhook's rate cap (4.5), oldest first; deleted
 * when answered 2xx (and a webhook disabled by 410 Gone enabled again); `failed` hears of each
 * entry that was not delivered. The entries present when it began are walked, a page of 100 at a time (a connector
 * replaying from its endpoint holds no more bodies than that). Clients are made per webhook for
 * the replay and closed after it.
 */
export const replayBacklog = async (
  r: Redis, id: string, a: BacklogSelection, subs: readonly WebhookSubscription[],
  o: { readonly userAgent: string; readonly tracing?: ClientTracing | undefined; readonly failed: (e: BacklogEntry, reason: string) => void },
): Promise<{ delivered: number; failed: number }> => {
  const webhooks = new Map<number, OperatorWebhook>();
  try {
    let delivered = 0;
    let failed = 0;
    const enabled = new Set<number>();
    const end = await newestId(r, id);
    if (end === undefined) return { delivered, failed };
    for await (const page of backlogPages(r, id, '-', 100, end)) for (const e of page.filter(selects(a))) {
      const s = subscriptionOf(e, subs);
      if (s === undefined) {
        failed++;
        o.failed(e, `webhook ${e.webhook ?? e.url} is not configured`);
        continue;
      }
      let w = webhooks.get(s.index);
      if (w === undefined) webhooks.set(s.index, (w = operatorWebhook(s, o.userAgent, { tracing: o.tracing })));
      const { r: result } = await lastValueFrom(w.sending.once$(backlogBatch(e)));
      if (result.ok) {
        await r.xdel(deadLetterStream(id), e.id);
        if (!enabled.has(s.index)) {
          enabled.add(s.index);
          await enableWebhook(r, id, s);
        }
        delivered++;
      } else {
        failed++;
        o.failed(e, result.reason);
      }
    }
    return { delivered, failed };
  } finally {
    for (const w of webhooks.values()) w.client.close();
  }
};

/** How much of a body the operator page's backlog view shows (CONTRACT 6.8). */
export const PREVIEW_BYTES = 2048;

/** An entry as `GET /api/webhooks/{index}/backlog` shows it (CONTRACT 6.8). */
export interface BacklogView {
  readonly id: string;
  readonly reason: string;
  readonly webhookId: string;
  readonly attempts: number;
  readonly error: string;
  readonly contentType: string;
  readonly bodyBytes: number;
  /** The body's first 2,048 bytes as text (a character cut at the edge is dropped). */
  readonly bodyPreview: string;
  /** When it was dead-lettered (ISO 8601). */
  readonly at: string;
}

export const backlogView = (e: BacklogEntry): BacklogView => {
  const bytes = Buffer.from(e.body, 'utf8');
  // Stryker disable next-line StringLiteral: 'utf8' is toString's default
  const preview = bytes.subarray(0, PREVIEW_BYTES).toString('utf8').replace(/\uFFFD+$/, '');
  return {
    id: e.id, reason: e.reason, webhookId: e.webhookId, attempts: e.attempts, error: e.error, contentType: e.contentType,
    bodyBytes: bytes.length, bodyPreview: bytes.length <= PREVIEW_BYTES ? e.body : preview, at: new Date(entryTime(e)).toISOString(),
  };
};

/**
 * One page of a webhook's backlog, oldest first: at most `limit` entries after the entry `after`
 * (an ID of the dead-letter stream), and `next`, the `after` of the following page (null after the
 * last entry).
 */
export const backlogPage = async (r: Redis, id: string, webhook: number, limit: number, after: string | undefined): Promise<{ entries: BacklogView[]; next: string | null }> => {
  // read until one entry past the page is found (it says there is a next page), 100 at a time
  const found: BacklogEntry[] = [];
  for await (const page of backlogPages(r, id, after === undefined ? '-' : `(${after}`, 100)) {
    found.push(...page.filter(selects({ webhook })));
    if (found.length > limit) break;
  }
  const shown = found.slice(0, limit);
  return { entries: shown.map(backlogView), next: found.length > limit ? shown[shown.length - 1]!.id : null };
};
