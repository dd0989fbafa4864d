import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import type { CallTrace, DeliveryFacts, DeliveryTrace, Headers, RequestTrace, Tracing, WriteTrace } from '../telemetry/tracing';
import { UPDATES_STREAM } from '../mapping/keys';
import { VERSION } from '../version';

/**
 * CONTRACT 9: tracing with the official OpenTelemetry JS packages — the API, the trace SDK (its
 * sampler and batch processor read the standard `OTEL_*` variables themselves), the OTLP/HTTP
 * exporters and the W3C propagator. Off unless an OTLP endpoint is set; then the packages are
 * loaded, and not before, so a connector without tracing does not even load them.
 */

type Env = Readonly<Record<string, string | undefined>>;

export interface TracingHandle {
  readonly tracing: Tracing;
  /** Exports what is left (within `timeoutMs`) and stops. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** Links a span may have unless OTEL_SPAN_LINK_COUNT_LIMIT says otherwise: above the largest batch (Webhooks:BatchMaxSize). */
export const MAX_LINKS = 100_000;

/** Spans encoded and sent in one export unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE says otherwise (the SDK's is 512). */
export const EXPORT_BATCH = 64;

/** How often at most a failing export is logged. */
export const EXPORT_FAILURE_LOG_MS = 60_000;

export type Protocol = 'http/protobuf' | 'http/json';

/**
 * Whether tracing is on, and over which protocol: `undefined` when off (no endpoint, or
 * `OTEL_SDK_DISABLED=true`); Left for a protocol we do not speak (a startup error, exit 2).
 */
export const tracingProtocol = (env: Env): E.Either<string, Protocol | undefined> => {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return E.right(undefined);
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const p = (env[name] || 'http/protobuf').trim();
  if (p === 'http/protobuf' || p === 'http/json') return E.right(p);
  return E.left(`${name} is "${p}": traces are exported over OTLP/HTTP only ("http/protobuf", the default, or "http/json")`);
};

/** Starts tracing when the environment asks for it (CONTRACT 9); undefined when off. */
export const startTracing = async (kind: 'inbound' | 'outbound', env: Env, log: Logger, now: () => number = Date.now): Promise<TracingHandle | undefined> => {
  const protocol = tracingProtocol(env);
  if (E.isLeft(protocol)) throw new Error(protocol.left);
  if (protocol.right === undefined) return undefined;
  const api = await import('@opentelemetry/api');
  const core = await import('@opentelemetry/core');
  const resources = await import('@opentelemetry/resources');
  const sdk = await import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = protocol.right === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  const { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, defaultTextMapGetter, defaultTextMapSetter } = api;

  const exporter = new OTLPTraceExporter();
  // an unreachable collector drops spans and says so, at most once a minute; delivery never notices
  let lastLogged = -Infinity;
  let failedSince = 0;
  const logged: import('@opentelemetry/sdk-trace-base').SpanExporter = {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== core.ExportResultCode.SUCCESS) {
          failedSince += spans.length;
          if (now() - lastLogged >= EXPORT_FAILURE_LOG_MS) {
            lastLogged = now();
            log.warn({ err: result.error?.message ?? 'export failed', droppedSpans: failedSince }, 'traces cannot be exported to the collector; spans are dropped');
            failedSince = 0;
          }
        }
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush(),
  };
  const resource = resources
    .resourceFromAttributes({ 'service.name': `rest-connector-${kind}`, 'service.version': VERSION })
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over ours
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // CONTRACT 9 wants a link per entry: a batch of up to BatchMaxSize entries, not the SDK's 128
  // (OTEL_SPAN_LINK_COUNT_LIMIT, when set, still decides)
  const spanLimits = env.OTEL_SPAN_LINK_COUNT_LIMIT ? {} : { spanLimits: { linkCountLimit: MAX_LINKS } };
  // spans are encoded for export in one go, a batch at a time: with a link per entry a push span is
  // tens of KB, and 512 of them (the SDK's batch) held the event loop for a large part of a second
  // (push p99 at 5,000 points/s: 0.43-0.55 s with 512, 0.11 s with 64, as with tracing off);
  // OTEL_BSP_MAX_EXPORT_BATCH_SIZE, when set, still decides
  const processor = new sdk.BatchSpanProcessor(logged, env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ? {} : { maxExportBatchSize: EXPORT_BATCH });
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [processor], ...spanLimits });
  const tracer = provider.getTracer('rest-connectors', VERSION);
  const propagator = new core.W3CTraceContextPropagator();

  type Span = ReturnType<typeof tracer.startSpan>;
  /** The span's context as a `traceparent`, only when it is sampled (an unsampled one adds nothing anywhere). */
  const traceparentOf = (span: Span): string | undefined => {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
    return carrier.traceparent;
  };
  const ended = (span: Span, o: { status?: number; error?: string }, clientSide: boolean) => {
    if (o.status !== undefined) span.setAttribute('http.response.status_code', o.status);
    const failed = o.error !== undefined || (o.status !== undefined && (clientSide ? o.status >= 400 : o.status >= 500));
    if (failed) {
      span.setAttribute('error.type', o.error !== undefined ? o.error.slice(0, 200) : String(o.status));
      span.setStatus({ code: SpanStatusCode.ERROR, ...(o.error !== undefined ? { message: o.error.slice(0, 200) } : {}) });
    }
    span.end();
  };

  const tracing: Tracing = {
    request: (method, route, headers: Headers): RequestTrace => {
      const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const span = tracer.startSpan(`${method} ${route}`, {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'http.route': route },
      }, parent);
      const inside = trace.setSpan(ROOT_CONTEXT, span);
      return {
        caller: (name) => void span.setAttribute('rest_connector.caller', name),
        producer: (points): WriteTrace => {
          const p = tracer.startSpan(`send ${UPDATES_STREAM}`, {
            kind: SpanKind.PRODUCER,
            attributes: {
              'messaging.system': 'redis', 'messaging.destination.name': UPDATES_STREAM, 'messaging.operation.type': 'send',
              'messaging.operation.name': 'send', 'messaging.batch.message_count': points,
            },
          }, inside);
          return { traceparent: traceparentOf(p), end: (error) => ended(p, error === undefined ? {} : { error }, true) };
        },
        end: (status) => ended(span, { status }, false),
      };
    },
    delivery: (d: DeliveryFacts): DeliveryTrace => {
      const links = [];
      // the entries of one write share their context: parsed once for a run of equal ones
      let text: string | undefined;
      let context: ReturnType<typeof core.parseTraceParent> = null;
      for (const e of d.entries) {
        if (e.traceparent !== text) context = core.parseTraceParent((text = e.traceparent));
        if (context !== null) links.push({ context, attributes: { 'messaging.message.id': e.id } });
      }
      const span = tracer.startSpan(`process ${UPDATES_STREAM}`, {
        kind: SpanKind.CONSUMER,
        links,
        attributes: {
          'messaging.system': 'redis', 'messaging.destination.name': UPDATES_STREAM, 'messaging.operation.type': 'process',
          'messaging.operation.name': 'process', 'messaging.consumer.group.name': d.group, 'messaging.batch.message_count': d.points,
          'rest_connector.webhook': d.webhook, 'rest_connector.webhook_id': d.webhookId,
        },
      }, ROOT_CONTEXT);
      const inside = trace.setSpan(ROOT_CONTEXT, span);
      const url = new URL(d.url);
      const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
      return {
        call: (): CallTrace => {
          const c = tracer.startSpan('POST', {
            kind: SpanKind.CLIENT,
            attributes: { 'http.request.method': 'POST', 'url.full': d.url, 'server.address': url.hostname, 'server.port': port },
          }, inside);
          return { traceparent: traceparentOf(c), end: (o) => ended(c, o, true) };
        },
        end: (o) => ended(span, o, true),
      };
    },
  };
  log.info({ protocol: protocol.right, service: resource.attributes['service.name'] }, 'tracing on: spans are exported over OTLP/HTTP');
  return {
    tracing,
    shutdown: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]).finally(() => clearTimeout(timer));
    },
  };
};
