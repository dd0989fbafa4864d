import { byTopic } from '../mapping/commands';
import { makeBodyBudget } from '../http/inbound/bodyBudget';
import { inboundRoutes } from '../http/inbound/route';
import { mappingRoutes } from '../http/inbound/mappingRoutes';
import { redisInboundStore } from '../http/inbound/store';
import { inboundOpenApi } from '../http/openapi/inbound';
import type { ConnectorContext, ConnectorParts } from './connector';
import { connectDatastore, type Datastore } from './datastore';

/** Connections that carry the writes when `Datastore:WaitReplicas` > 0 (each `WAIT` blocks its own). */
export const WRITERS = 4;

export const buildInbound = (ctx: ConnectorContext): ConnectorParts => {
  const d = ctx.startup.datastore;
  const writers: Datastore[] =
    d.waitReplicas > 0
      ? Array.from({ length: WRITERS }, (_, i) =>
          connectDatastore(
            // a WAIT may take its whole timeout: the command deadline leaves room for it
            { ...ctx.redisOptions, commandTimeout: Math.max(d.commandTimeoutMilliseconds, d.waitTimeoutMilliseconds + 1000) },
            d.connectionRetrySeconds,
            ctx.log,
            `writer-${i + 1}`,
          ),
        )
      : [];
  let next = 0;
  /**
   * The next connected writer, round robin; when none is (just started, or reconnecting), the
   * first to connect within the command timeout; else undefined (503).
   */
  const writer = async () => {
    for (let tried = 0; tried < writers.length; tried++) {
      const w = writers[next++ % writers.length]!;
      if (w.isConnected()) return w.client;
    }
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      ...writers.map((w) => w.ready().then(() => w)),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), d.commandTimeoutMilliseconds))),
    ]).finally(() => clearTimeout(timer));
    return first?.isConnected() === true ? first.client : undefined;
  };
  const topics = byTopic(ctx.settings.mappings);
  const bodyBudget = makeBodyBudget(ctx.startup.http.maxBodyBytesInFlight);
  return {
    dataRoutes: [
      ...inboundRoutes({
      connectorId: ctx.startup.id,
      topics,
      maxBodyBytes: ctx.startup.http.maxBodyBytes,
      maxBatchItems: ctx.startup.http.maxBatchItems,
      bodyBudget,
      streamMaxLength: d.streamMaxLength,
      store: redisInboundStore({
        redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, waitReplicas: d.waitReplicas, waitTimeoutMs: d.waitTimeoutMilliseconds, writer, log: ctx.log.child({ component: 'inbound' }),
      }),
      log: ctx.log.child({ component: 'inbound' }),
      metrics: ctx.metrics,
      idempotencyTtlSeconds: ctx.startup.http.idempotencyTtlSeconds,
      idempotencyLockMs: 2 * d.commandTimeoutMilliseconds,
      outOfMemory: ctx.outOfMemory,
    }),
      // CONTRACT 6.8: the mappings, and a payload tried against them (nothing written)
      ...mappingRoutes({
        connectorId: ctx.startup.id, topics, mappings: ctx.settings.mappings, maxBodyBytes: ctx.startup.http.maxBodyBytes,
        maxBatchItems: ctx.startup.http.maxBatchItems, bodyBudget,
      }),
    ],
    openapi: inboundOpenApi(ctx.startup.http.maxBatchItems),
    ...(writers.length > 0 ? { start: () => ({ stop: async () => void (await Promise.all(writers.map((w) => w.close()))) }) } : {}),
  };
};
