import * as E from 'fp-ts/Either';
import type { Redis } from 'ioredis';
import { entryPoints, type BacklogEntry } from '../streams/webhook/backlogEntry';
import { listBacklog, purgeBacklog, replayBacklog } from '../streams/webhook/backlogOps';
import { JSON_CONTENT_TYPE } from '../streams/webhook/body';
import type { ClientTracing } from '../streams/webhook/client';
import { deliveryDefaults, type DeliverySettings } from '../streams/webhook/subscription';
import { USER_AGENT } from '../version';
import { storedSubscriptions } from './webhooks';
import { operatorStartup, takeFlag, takeOption, usage, withRedis, type Io, type Outcome } from './common';
import { HELP } from './help';
import { withCliTracing } from './tracing';

/**
 * `rest-connector deadletter list|replay|purge` (CONTRACT 4.4): the operator's view of the
 * webhooks' backlogs in `connectors:{ID}:deadletter`.
 */
export interface DeadletterDeps {
  readonly out: (s: string) => void;
  readonly withRedis: <A>(fn: (r: Redis) => Promise<A>) => Promise<E.Either<string, A>>;
  /** The delivery settings of the startup parameters (a replayed request's time limit). */
  readonly delivery: DeliverySettings;
  /** CONTRACT 9: spans for the replayed requests, when tracing is on. */
  readonly tracing?: ClientTracing;
}

export interface DeadletterArgs {
  readonly sub: 'list' | 'replay' | 'purge';
  readonly id: string;
  readonly webhook?: number;
  /** Epoch milliseconds: entries dead-lettered at or after (`--since`), or before (`--before`). */
  readonly since?: number;
  readonly before?: number;
  readonly json: boolean;
}

/** `T` is ISO 8601 or Unix seconds; undefined when it is neither. */
export const parseTime = (t: string): number | undefined => {
  if (/^[0-9]+(\.[0-9]+)?$/.test(t)) return Math.round(Number(t) * 1000);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(t) ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? undefined : ms;
};

/** How many points an entry holds (`?` for an older entry whose body does not say: JSONata's). */
const points = (e: BacklogEntry): string => String(entryPoints(e) ?? '?');

export const runDeadletter = async (a: DeadletterArgs, d: DeadletterDeps): Promise<{ code: number; message?: string }> => {
  switch (a.sub) {
    case 'list': {
      const got = await d.withRedis((r) => listBacklog(r, a.id, a));
      if (E.isLeft(got)) return { code: 1, message: got.left };
      const selected = got.right;
      for (const e of selected) {
        // the body's content type as the entry keeps it (CONTRACT 4.7): only when it is not JSON
        if (a.json) {
          d.out(JSON.stringify({
            id: e.id, webhook: e.webhook, url: e.url, webhookId: e.webhookId, reason: e.reason, attempts: e.attempts, error: e.error, body: e.body,
            ...(e.contentType !== JSON_CONTENT_TYPE ? { contentType: e.contentType } : {}),
            ...(e.cause !== undefined ? { cause: e.cause } : {}),
          }));
        }
        else d.out(`${e.id}  webhook ${e.webhook ?? '?'}  ${e.reason.padEnd(9)}  attempts ${e.attempts}  ${e.webhookId}  ${points(e)} points  ${e.url}  ${e.error}`);
      }
      if (!a.json) d.out(`${selected.length} entries`);
      return { code: 0 };
    }
    case 'purge': {
      const got = await d.withRedis((r) => purgeBacklog(r, a.id, a));
      if (E.isLeft(got)) return { code: 1, message: got.left };
      d.out(`purged ${got.right}`);
      return { code: 0 };
    }
    case 'replay': {
      const got = await d.withRedis(async (r) =>
        replayBacklog(r, a.id, a, await storedSubscriptions(r, a.id, d.delivery), {
          userAgent: USER_AGENT, tracing: d.tracing, failed: (e, reason) => d.out(`${e.id}  ${e.webhookId}: failed: ${reason}`),
        }));
      if (E.isLeft(got)) return { code: 1, message: got.left };
      d.out(`delivered ${got.right.delivered}, failed ${got.right.failed}`);
      return { code: got.right.failed > 0 ? 1 : 0 };
    }
  }
};

/** `rest-connector deadletter …`: its arguments, checked before anything is asked of Redis (exit 2). */
export const deadletterCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const sub = args.shift();
  const help = HELP[`deadletter ${sub}`];
  if (help === undefined || (sub !== 'list' && sub !== 'replay' && sub !== 'purge')) return usage(io, `unknown deadletter command '${sub ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  const webhookRaw = takeOption(args, '--webhook');
  if (webhookRaw !== undefined && !/^[0-9]+$/.test(webhookRaw)) return usage(io, `--webhook takes a webhook index, got '${webhookRaw}'`, help);
  const times: Partial<Record<'since' | 'before', number>> = {};
  for (const name of sub === 'purge' ? (['before'] as const) : (['since'] as const)) {
    const raw = takeOption(args, `--${name}`);
    if (raw === undefined) continue;
    const t = parseTime(raw);
    if (t === undefined) return usage(io, `--${name} takes ISO 8601 or Unix seconds, got '${raw}'`, help);
    times[name] = t;
  }
  const json = sub === 'list' && takeFlag(args, '--json');
  if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, help);
  const startup = operatorStartup();
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  const run = (tracing: ClientTracing | undefined) =>
    runDeadletter(
      { sub, id, json, ...(webhookRaw !== undefined ? { webhook: Number(webhookRaw) } : {}), ...times },
      { out: io.out, withRedis, delivery: deliveryDefaults(startup.right.webhooks), ...(tracing !== undefined ? { tracing } : {}) },
    );
  // CONTRACT 9: a replayed request is traced as a redriven one is, when tracing is on
  return sub === 'replay' ? withCliTracing('deadletter replay', id, run) : run(undefined);
};
