import { byTopic } from '../mapping/commands';
import { makeBodyBudget } from '../http/body';
import { inboundOpenApi, inboundRoutes } from '../http/inbound';
import type { ConnectorContext, ConnectorParts } from './connector';

export const buildInbound = (ctx: ConnectorContext): ConnectorParts => ({
  dataRoutes: inboundRoutes({
    connectorId: ctx.startup.id,
    topics: byTopic(ctx.settings.mappings),
    maxBodyBytes: ctx.startup.http.maxBodyBytes,
    bodyBudget: makeBodyBudget(ctx.startup.http.maxBodyBytesInFlight),
    streamMaxLength: ctx.startup.datastore.streamMaxLength,
    redis: ctx.datastore.client,
    isConnected: ctx.datastore.isConnected,
    now: () => new Date(),
    log: ctx.log.child({ component: 'inbound' }),
    metrics: ctx.metrics,
  }),
  openapi: inboundOpenApi,
});
