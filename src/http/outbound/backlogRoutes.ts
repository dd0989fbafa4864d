import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { DataRoute, RequestContext } from '../app/app';
import { parseRawQuery } from '../app/query';
import { NOT_CONNECTED, sendJsonText, sendProblem } from '../app/problem';
import { backlogPage, purgeBacklog, replayBacklog } from '../../streams/webhook/backlogOps';
import type { ClientTracing } from '../../streams/webhook/client';
import type { WebhookSubscription } from '../../streams/webhook/subscription';

/**
 * CONTRACT 6.8: a webhook's backlog for the operator — `GET /api/webhooks/{index}/backlog`,
 * `POST /api/webhooks/{index}/backlog/replay`, `DELETE /api/webhooks/{index}/backlog` — with the
 * semantics of `rest-connector deadletter list|replay|purge --webhook N` (the same code,
 * `backlogOps.ts`). `operate` required (CONTRACT 7.2); 404 for an index not configured.
 */
export interface BacklogRouteDeps {
  readonly redis: Redis;
  readonly connectorId: string;
  readonly subscriptions: readonly WebhookSubscription[];
  readonly userAgent: string;
  readonly tracing?: ClientTracing | undefined;
  readonly log: Logger;
}

export const DEFAULT_BACKLOG_LIMIT = 100;
export const MAX_BACKLOG_LIMIT = 500;

const STREAM_ID = /^[0-9]{1,20}-[0-9]{1,20}$/;

/** The index in `/api/webhooks/{index}/…`, or -1 when it is not a number. */
export const indexIn = (url: string): number => {
  const raw = /^\/api\/webhooks\/([^/?]*)\//i.exec(url)?.[1] ?? '';
  return /^[0-9]{1,9}$/.test(raw) ? Number(raw) : -1;
};

/** The page asked for: `limit` an integer 1..500 (default 100), `after` a stream ID; else the 400's detail. */
export const pageQuery = (url: string): { limit: number; after: string | undefined } | string => {
  const q = parseRawQuery(url);
  const limits = q.values('limit');
  const afters = q.values('after');
  if (limits.length > 1 || afters.length > 1) return 'limit and after may each be given once';
  const limit = limits.length === 0 ? DEFAULT_BACKLOG_LIMIT : /^[0-9]{1,4}$/.test(limits[0]!) ? Number(limits[0]) : NaN;
  if (!(limit >= 1 && limit <= MAX_BACKLOG_LIMIT)) return `limit must be an integer from 1 to ${MAX_BACKLOG_LIMIT}`;
  const after = afters[0];
  if (after !== undefined && !STREAM_ID.test(after)) return 'after must be a backlog entry ID (as `next` gives it)';
  return { limit, after };
};

export const backlogRoutes = (d: BacklogRouteDeps): DataRoute[] => {
  /** The webhook the request names, once the caller may operate; otherwise it has been answered. */
  const webhookOf = (url: string, res: Parameters<DataRoute['handler']>[1], ctx: RequestContext): number | undefined => {
    if (ctx.grant !== undefined && !ctx.grant.operate) {
      ctx.forbid(`caller '${ctx.caller}' may not operate the webhooks`);
      return undefined;
    }
    const index = indexIn(url);
    if (index < 0 || index >= d.subscriptions.length) {
      sendProblem(res, 404, `no webhook ${index >= 0 ? index : 'with that index'} is configured`);
      return undefined;
    }
    return index;
  };
  /** The data store away (or failing) answers 503, as every endpoint that needs it does. */
  const guarded = async (res: Parameters<DataRoute['handler']>[1], what: string, work: () => Promise<void>): Promise<void> => {
    try {
      await work();
    } catch (err) {
      d.log.warn({ err: (err as Error).message }, `${what} failed`);
      sendProblem(res, 503, NOT_CONNECTED);
    }
  };
  return [
    {
      method: 'get',
      path: '/api/webhooks/:index/backlog',
      handler: async (req, res, ctx) => {
        const url = req.url ?? '';
        const webhook = webhookOf(url, res, ctx);
        if (webhook === undefined) return;
        const page = pageQuery(url);
        if (typeof page === 'string') return sendProblem(res, 400, page);
        await guarded(res, 'reading the backlog', async () => sendJsonText(res, 200, JSON.stringify(await backlogPage(d.redis, d.connectorId, webhook, page.limit, page.after))));
      },
    },
    {
      method: 'post',
      path: '/api/webhooks/:index/backlog/replay',
      handler: async (req, res, ctx) => {
        const webhook = webhookOf(req.url ?? '', res, ctx);
        if (webhook === undefined) return;
        await guarded(res, 'replaying the backlog', async () => {
          const failures: string[] = [];
          const done = await replayBacklog(d.redis, d.connectorId, { webhook }, d.subscriptions, {
            userAgent: d.userAgent, tracing: d.tracing, failed: (e, reason) => failures.push(`${e.id} ${e.webhookId}: ${reason}`),
          });
          d.log.info({ caller: ctx.caller, webhook, ...done, ...(failures.length > 0 ? { firstFailure: failures[0] } : {}) }, 'backlog replayed');
          sendJsonText(res, 200, JSON.stringify(done));
        });
      },
    },
    {
      method: 'delete',
      path: '/api/webhooks/:index/backlog',
      handler: async (req, res, ctx) => {
        const webhook = webhookOf(req.url ?? '', res, ctx);
        if (webhook === undefined) return;
        await guarded(res, 'purging the backlog', async () => {
          const purged = await purgeBacklog(d.redis, d.connectorId, { webhook });
          d.log.info({ caller: ctx.caller, webhook, purged }, 'backlog purged');
          sendJsonText(res, 200, JSON.stringify({ purged }));
        });
      },
    },
  ];
};
