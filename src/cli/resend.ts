import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { filter, lastValueFrom, map } from 'rxjs';
import { UPDATES_STREAM } from '../mapping/keys';
import { operatorWebhook, storedSubscriptions } from './webhooks';
import { exponentialBackoff } from '../streams/webhook/answers';
import type { AttemptEvent } from '../streams/webhook/sending';
import { toBatch, type Batch } from '../streams/read/batches';
import { decodeEntries, decodeEntry, type DecodedEntry } from '../streams/read/entries';
import { matches } from '../streams/webhook/filter';
import { deliveryDefaults, type DeliverySettings } from '../streams/webhook/subscription';
import type { ClientTracing } from '../streams/webhook/client';
import { onlySubcommand, operatorStartup, takeOption, usage, withRedis, type Io, type Outcome } from './common';
import { parseTime } from './deadletter';
import { withCliTracing } from './tracing';
import { formatOf, prepareBody, withBody } from '../streams/webhook/body';

/**
 * `rest-connector webhooks resend` (CONTRACT 4.6): the entries of `process:updates` appended within
 * a time range, matching a webhook's filter, sent again to its current URL in stream order — a new
 * delivery (`webhook-id` `r-{first}_{last}`, `"cause":"resend"`), with the webhook's headers,
 * signature, TLS, auth and rate cap, each request tried up to `Webhooks:MaxAttempts` times. It does
 * not coordinate with a running connector.
 */
export interface ResendArgs {
  readonly id: string;
  readonly webhook: number;
  /** Epoch milliseconds, inclusive. */
  readonly since: number;
  readonly until: number;
}

export interface ResendDeps {
  readonly out: (s: string) => void;
  readonly withRedis: <A>(fn: (r: Redis) => Promise<A>) => Promise<E.Either<string, A>>;
  readonly delivery: DeliverySettings;
  /** Points a request at most (`Webhooks:BatchMaxSize`). */
  readonly batchMaxSize: number;
  readonly backoff?: (attempt: number) => number;
  readonly now?: () => number;
  readonly tracing?: ClientTracing;
}

/** Entries read from the stream a page at a time. */
const PAGE = 1000;

/** A request of the resend: the points as the stream holds them, its own id and cause. */
export const resendBatch = (entries: readonly DecodedEntry[]): Batch => {
  const b = toBatch(entries);
  return { ...b, webhookId: `r-${b.webhookId}`, cause: 'resend' };
};

export const runResend = async (a: ResendArgs, d: ResendDeps): Promise<{ code: number; message?: string }> => {
  const got = await d.withRedis(async (r) => {
    const subs = await storedSubscriptions(r, a.id, d.delivery);
    const s = subs[a.webhook];
    if (s === undefined) return { error: `webhook ${a.webhook} is not configured for ${a.id} (it has ${subs.length})` };
    const [oldest] = decodeEntries(await r.xrange(UPDATES_STREAM, '-', '+', 'COUNT', 1));
    if (oldest === undefined) d.out('the stream holds no updates');
    else if (Number(oldest.id.split('-')[0]) > a.since) d.out(`the stream holds updates from ${new Date(Number(oldest.id.split('-')[0])).toISOString()} on`);
    // the lane's client, rate cap and retry policy (CONTRACT 4.6: each request tried up to MaxAttempts times)
    const { client, sending } = operatorWebhook(s, { tracing: d.tracing, backoff: d.backoff ?? exponentialBackoff(), now: d.now ?? Date.now });
    let sent = 0;
    let requests = 0;
    let failed = 0;
    let undecodable = 0;
    const format = formatOf(s.webhook, s.settings.maxBodyBytes);
    const send = async (entries: readonly DecodedEntry[]) => {
      const batch = resendBatch(entries);
      // CONTRACT 4.7: rendered in the webhook's format first; nothing to send is no request, a failure fails this one
      const prepared = await prepareBody(format, batch);
      if (prepared.kind === 'nothing') return;
      if (prepared.kind === 'failed') {
        failed++;
        d.out(`${batch.webhookId}: failed: format: ${prepared.error}`);
        return;
      }
      // the request carries the body rendered for the webhook (CONTRACT 4.7)
      const end = await lastValueFrom(sending.attempts$(withBody(batch, prepared.body)).pipe(filter((e): e is Extract<AttemptEvent, { kind: 'ended' }> => e.kind === 'ended'), map((e) => e.end)));
      if (end.ok) {
        sent += batch.size;
        requests++;
      } else {
        failed++;
        d.out(`${batch.webhookId}: failed: ${end.error}`);
      }
    };
    try {
      let pending: DecodedEntry[] = [];
      let start = `${a.since}-0`;
      const end = `${a.until}-18446744073709551615`;
      for (;;) {
        const page = decodeEntries(await r.xrange(UPDATES_STREAM, start, end, 'COUNT', PAGE));
        for (const e of page) {
          const decoded = decodeEntry(e);
          if (!decoded.ok) undecodable++;
          if (!decoded.ok || (s.webhook.filter !== undefined && !matches(s.webhook.filter, decoded.entry))) continue;
          pending.push(decoded.entry);
          if (pending.length === d.batchMaxSize) {
            await send(pending);
            pending = [];
          }
        }
        if (page.length < PAGE) break;
        start = `(${page[page.length - 1]!.id}`;
      }
      if (pending.length > 0) await send(pending);
      if (undecodable > 0) d.out(`${undecodable} entries in the range could not be decoded (CONTRACT 6.5) and were left out`);
    } finally {
      client.close();
    }
    return { sent, requests, failed };
  });
  if (E.isLeft(got)) return { code: 1, message: got.left };
  if ('error' in got.right) return { code: 1, message: got.right.error };
  d.out(`sent ${got.right.sent} points in ${got.right.requests} requests, failed ${got.right.failed}`);
  return { code: got.right.failed > 0 ? 1 : 0 };
};

/** `rest-connector webhooks resend`: its arguments, every one checked before Redis is asked anything (exit 2). */
export const webhooksCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const head = onlySubcommand(args, io, 'webhooks', 'resend');
  if (!('help' in head)) return head;
  const { help } = head;
  // every argument is checked before Redis is asked anything (exit 2)
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  const webhookRaw = takeOption(args, '--webhook');
  if (webhookRaw === undefined || !/^[0-9]+$/.test(webhookRaw)) return usage(io, webhookRaw === undefined ? '--webhook N is required' : `--webhook takes a webhook index, got '${webhookRaw}'`, help);
  const sinceRaw = takeOption(args, '--since');
  if (sinceRaw === undefined) return usage(io, '--since T is required', help);
  const since = parseTime(sinceRaw);
  if (since === undefined) return usage(io, `--since takes ISO 8601 or Unix seconds, got '${sinceRaw}'`, help);
  const untilRaw = takeOption(args, '--until');
  const until = untilRaw === undefined ? Date.now() : parseTime(untilRaw);
  if (until === undefined) return usage(io, `--until takes ISO 8601 or Unix seconds, got '${untilRaw}'`, help);
  if (until < since) return usage(io, untilRaw === undefined ? `--since (${sinceRaw}) is in the future` : `--until (${untilRaw}) is before --since (${sinceRaw})`, help);
  if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, help);
  const startup = operatorStartup();
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  const w = startup.right.webhooks;
  return withCliTracing('webhooks resend', id, (tracing) =>
    runResend(
      { id, webhook: Number(webhookRaw), since, until },
      { out: io.out, withRedis, delivery: deliveryDefaults(w), batchMaxSize: w.batchMaxSize, ...(tracing !== undefined ? { tracing } : {}) },
    ),
  );
};
