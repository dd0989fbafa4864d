import * as E from 'fp-ts/Either';
import type { RedisOptions } from 'ioredis';
import type { AddressInfo } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import { defer } from 'rxjs';
import { parseManagedSettings, DEFAULT_SETTINGS, settingsForLog, startupProblems, type ManagedSettings } from '../config/managed';
import { loadWebhookFiles, type WebhookFiles } from '../config/webhookFiles';
import { makeRateWindow } from '../http/app/rateWindow';
import { PARAMETERS, type StartupSettings } from '../config/startup';
import { localUrls, removeAddressFile, writeAddressFile } from './addressFile';
import { configKey } from '../mapping/keys';
import { createApp, type DataRoute } from '../http/app/app';
import { makeMetrics, type Metrics } from '../telemetry/metrics';
import { openApiDocument, type OpenApiPart } from '../http/openapi/document';
import { watchConfig$ } from '../streams/watchConfig';
import { VERSION } from '../version';
import { connectDatastore, type Datastore } from './datastore';
import type { Logger } from './logger';
import { watchMemory, type OutOfMemory } from './memory';
import { isHttps, listenAll, type Listening, type ListenerTls } from './servers';
import { listenerFiles, loadListenerTls } from '../config/listenerTls';
import { watchListenerTls } from './certificateWatch';
import { firstReading, loadConfigText, noEvictionRequired, rateCountRefusal, WrongType } from './firstReads';
import { onStopSignal } from './signals';
import { resources, type Resources } from './resources';
import type { Tracing } from '../telemetry/tracing';
import { startTracing, tracingProtocol, type TracingHandle } from './tracing';

export type ConnectorKind = 'outbound' | 'inbound';

/** In-flight work is given this long to finish on a graceful stop (CONTRACT 2). */
export const GRACE_MS = 10_000;

export interface ConnectorContext {
  readonly startup: StartupSettings;
  readonly settings: ManagedSettings;
  readonly datastore: Datastore;
  readonly redisOptions: RedisOptions;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Writes refused with OOM, as readiness reports them (CONTRACT 6.6). */
  readonly outOfMemory: OutOfMemory;
  /** The outbound's webhooks' files (TLS, OAuth 2.0), read and checked at start (CONTRACT 4.5); empty for the inbound. */
  readonly webhookFiles: readonly WebhookFiles[];
  /** CONTRACT 9: spans, when tracing is on (`OTEL_EXPORTER_OTLP_ENDPOINT`); undefined when off. */
  readonly tracing?: Tracing | undefined;
}

export interface Background {
  /** Finishes what is under way by `deadline` (epoch ms) and releases its resources. */
  stop(deadline: number): Promise<void>;
  /**
   * Resolves with the reason if the work died (CONTRACT 6.5): readiness turns 503 and the
   * connector stops and exits non-zero, so that the orchestrator restarts it — never a silent stop.
   */
  readonly failed?: Promise<string>;
}

export interface ConnectorParts {
  readonly dataRoutes: readonly DataRoute[];
  readonly openapi: OpenApiPart;
  /** Work that runs beside the HTTP servers (the outbound push pipeline). */
  readonly start?: () => Background;
}

export type Outcome = { readonly code: number; readonly message?: string };

/** The HTTP app of a connector: the shell of createApp around the connector's own parts. */
export const makeApp = (
  kind: ConnectorKind, ctx: ConnectorContext, parts: ConnectorParts, addresses: () => readonly string[] = () => [], failure: () => string | undefined = () => undefined,
) =>
  createApp({
    log: ctx.log,
    metrics: ctx.metrics,
    apiKeys: ctx.startup.apiKeys,
    isConnected: ctx.datastore.isConnected,
    isActive: () => ctx.settings.isActive,
    failure: () => failure() ?? ctx.outOfMemory.reason() ?? (ctx.datastore.stalled() ? 'data store is not answering (stalled)' : undefined),
    dataRoutes: parts.dataRoutes,
    tracing: ctx.tracing,
    callers: ctx.settings.callers,
    operatorPage: ctx.startup.http.operatorPage ? { kind, id: ctx.startup.id } : undefined,
    // CONTRACT 7.2: a caller's rate is counted in Redis, across every replica of the Id
    ...([...(ctx.settings.callers?.values() ?? [])].some((g) => g.maxRequestsPerSecond !== undefined)
      ? {
        rateWindow: makeRateWindow({
          redis: ctx.datastore.client, isConnected: ctx.datastore.isConnected, connectorId: ctx.startup.id,
          countFailed: (err) => ctx.log.warn({ err }, "counting a caller's requests failed: while Redis cannot be reached they go on uncounted; while it refuses the count they are answered 503"),
        }),
      }
      : {}),
    openapi: () => openApiDocument(`rest-connectors ${kind}`, VERSION, ctx.startup.apiKeys.length > 0, addresses(), parts.openapi),
  });

/** At most this long is spent on a stop sending the last spans. */
const TRACE_FLUSH_MS = 2000;

/** How often the listener certificate's files are looked at (CONTRACT 7.1: a change is served within 10 s). */
const TLS_POLL_MS = 2000;

/** The https listeners' TLS (CONTRACT 7.1): none without an https host URL; an https URL needs files that load. */
const listenerTlsFor = (settings: ManagedSettings, startup: StartupSettings): E.Either<string, ListenerTls | undefined> => {
  const https = settings.hostUrls.filter((h) => h.https).map((h) => h.url);
  if (https.length === 0) return E.right(undefined);
  const files = listenerFiles(startup);
  if (files === undefined) {
    return E.left(`${PARAMETERS.http.tlsCertFile} and ${PARAMETERS.http.tlsKeyFile} are required for ${https.join(', ')} in hostUrls`);
  }
  return E.map((context: SecureContextOptions): ListenerTls | undefined => ({ context, clientCertificates: startup.clientCertificates }))(loadListenerTls(files));
};

/** Why the run ended. */
type Ending = 'signal' | 'changed' | 'failed';

/**
 * The composition root shared by both connectors: connect, load the configuration, listen,
 * start the background work, watch the config key, and own the graceful stop. Everything it
 * acquires is held in one stack (`resources.ts`) and released, last first, in one place: after
 * the stop, or at any startup error.
 */
export const runConnector = async (
  kind: ConnectorKind,
  startup: StartupSettings,
  redisOptions: RedisOptions,
  log: Logger,
  build: (ctx: ConnectorContext) => ConnectorParts,
): Promise<Outcome> => {
  const held = resources();
  try {
    const ended = await start(held, kind, startup, redisOptions, log, build);
    if ('code' in ended) return ended;
    await held.release();
    log.info('stopped');
    return ended.why === 'failed' ? { code: 1, message: ended.failure } : { code: 0 };
  } finally {
    await held.release();
  }
};

/** Starts the connector and runs it until it must stop; an `Outcome` when it never got to run. */
const start = async (
  held: Resources,
  kind: ConnectorKind,
  startup: StartupSettings,
  redisOptions: RedisOptions,
  log: Logger,
  build: (ctx: ConnectorContext) => ConnectorParts,
): Promise<Outcome | { readonly why: Ending; readonly failure?: string }> => {
  // Each signal is logged; the listener stays until the stop is over (a second one is ignored).
  const signal = new Promise<'signal'>((resolve) => {
    held.onRelease(onStopSignal((name) => {
      log.info({ signal: name }, 'stopping');
      resolve('signal');
    }));
  });

  // CONTRACT 9: an OTLP protocol we do not speak is a startup error
  const protocol = tracingProtocol(process.env);
  if (E.isLeft(protocol)) return { code: 2, message: protocol.left };

  const datastore = held.hold(
    connectDatastore({ ...redisOptions, commandTimeout: startup.datastore.commandTimeoutMilliseconds }, startup.datastore.connectionRetrySeconds, log),
    (d) => d.close(),
  );
  const key = configKey(startup.id);
  const first = await Promise.race([loadConfigText(datastore, key, log), signal]);
  if (first === 'signal') return { code: 0 };
  if (first instanceof WrongType) return { code: 2, message: first.message };
  const raw = first;
  let settings: ManagedSettings;
  if (raw === null) {
    settings = DEFAULT_SETTINGS;
    log.info({ key }, 'no configuration stored; running on the defaults and watching the key');
  } else {
    const decoded = parseManagedSettings(raw);
    if (E.isLeft(decoded)) return { code: 2, message: `${key} is invalid: ${decoded.left.join('; ')}` };
    settings = decoded.right;
  }
  // CONTRACT 6.7 and 7.2: what only the startup parameters tell is wrong: exit 2
  const refusedSettings = startupProblems(kind, settings, startup);
  if (refusedSettings.length > 0) return { code: 2, message: `${key} is invalid: ${refusedSettings.join('; ')}` };
  // CONTRACT 4.5: a webhook's TLS and OAuth 2.0 files are part of its configuration: unreadable or invalid, exit 2
  const files = kind === 'outbound' ? loadWebhookFiles(settings.webhooks) : E.right([]);
  if (E.isLeft(files)) return { code: 2, message: `${key} is invalid: ${files.left.join('; ')}` };
  // CONTRACT 7.1: https host URLs need a certificate and key that load (exit 2 naming the parameter)
  const tls = listenerTlsFor(settings, startup);
  if (E.isLeft(tls)) return { code: 2, message: tls.left };
  log.level = settings.logLevel;
  log.info({ key, ...settingsForLog(settings) }, 'configuration loaded');

  const metrics = makeMetrics({ kind, id: startup.id, version: VERSION });
  // CONTRACT 6.6: Redis's eviction policy, read before the connector serves anything
  const memory = held.hold(watchMemory({ redis: datastore.client, intervalMs: startup.datastore.memoryCheckIntervalMilliseconds, log, metrics }), (m) => m.stop());
  const reading = await Promise.race([firstReading(datastore, memory.first), signal]);
  if (reading === 'signal') return { code: 0 };
  const refusal = noEvictionRequired(startup, reading);
  if (refusal !== undefined) return { code: 2, message: refusal };
  // CONTRACT 7.2: a rate whose count Redis would refuse is a start-up error, never a limit dropped
  if ([...(settings.callers?.values() ?? [])].some((g) => g.maxRequestsPerSecond !== undefined)) {
    const refused = await Promise.race([rateCountRefusal(datastore, startup.id), signal]);
    if (refused === 'signal') return { code: 0 };
    if (refused !== undefined) {
      return { code: 2, message: `callers: a caller has maxRequestsPerSecond, and Redis refuses what its count runs: ${refused}; grant the user these commands (the README's ACL line has them)` };
    }
  }
  held.hold(datastore.connected$.subscribe((c) => metrics.datastoreConnected.set(c ? 1 : 0)), (sub) => sub.unsubscribe());
  /** Set when the stop begins: the last spans are sent within what is left of it (nothing is waited for on a startup error). */
  let deadline = Date.now();
  const traces: TracingHandle | undefined = await startTracing(kind, process.env, log);
  // the last spans, within what is left of the stop (a collector that is away does not hold it up)
  if (traces !== undefined) held.onRelease(() => traces.shutdown(Math.min(TRACE_FLUSH_MS, Math.max(0, deadline - Date.now()))));
  const ctx: ConnectorContext = {
    startup, settings, datastore, redisOptions, log, metrics, outOfMemory: memory.outOfMemory, webhookFiles: files.right, tracing: traces?.tracing,
  };
  const parts = build(ctx);
  let listening: Listening | undefined;
  let failure: string | undefined;
  const app = makeApp(kind, ctx, parts, () => listening?.addresses ?? [], () => failure);

  try {
    listening = await listenAll(app, settings.hostUrls, {
      maxConnections: startup.http.maxConnections,
      headersTimeoutMs: startup.http.headersTimeoutMilliseconds,
      requestTimeoutMs: startup.http.requestTimeoutMilliseconds,
    }, tls.right);
  } catch (err) {
    return { code: 2, message: `cannot listen on ${settings.hostUrls.map((h) => h.url).join(', ')}: ${(err as Error).message}` };
  }
  let background: Background | undefined;
  // the graceful stop (CONTRACT 1): in-flight requests and deliveries finish together, within GRACE_MS
  const serving = listening;
  held.onRelease(() => Promise.all([serving.close(GRACE_MS), background?.stop(deadline)]));
  // CONTRACT 7.1: a new certificate (or client CA) is served to new connections within 10 s
  const certFiles = listenerFiles(startup);
  if (tls.right !== undefined && certFiles !== undefined) held.hold(watchListenerTls(certFiles, TLS_POLL_MS, listening, log), (w) => w.stop());
  const addressFile = startup.http.addressFile;
  if (addressFile !== undefined) {
    // for `rest-connector healthcheck` (the image's HEALTHCHECK): where this process really listens —
    // a plain http listener when there is one (a probe has no client certificate)
    const probe = listening.servers.find((x) => !isHttps(x)) ?? listening.servers[0]!;
    try {
      writeAddressFile(addressFile, { pid: process.pid, kind, urls: localUrls(probe.address() as AddressInfo, isHttps(probe)) });
      held.onRelease(() => removeAddressFile(addressFile, process.pid));
    } catch (err) {
      log.error({ file: addressFile, err: (err as Error).message }, 'cannot record the listen address for the healthcheck (Http:AddressFile): the healthcheck will fail');
    }
  }
  // logged once the record is written: a healthcheck begun when this line is seen finds it
  log.info({ addresses: listening.addresses }, `${kind} connector listening`);
  background = parts.start?.();

  const changed = new Promise<'changed'>((resolve) => {
    held.hold(watchConfig$({
      read: () => defer(() => datastore.client.get(key)),
      initialRaw: raw,
      current: settings,
      connector: kind,
      intervalMs: startup.datastore.configPollIntervalMilliseconds,
      // a change whose webhook files do not load would only fail the restart: it is invalid now
      check: (s) => {
        const webhookFiles = kind === 'outbound' ? loadWebhookFiles(s.webhooks) : E.right([]);
        const listener = listenerTlsFor(s, startup);
        return [...(E.isLeft(webhookFiles) ? webhookFiles.left : []), ...(E.isLeft(listener) ? [listener.left] : []), ...startupProblems(kind, s, startup)];
      },
    }).subscribe((event) => {
      switch (event.kind) {
        case 'changed':
          log.info({ key }, 'configuration changed; stopping so that the orchestrator restarts the connector');
          resolve('changed');
          break;
        case 'invalid':
          log.error({ key, errors: event.errors }, 'configuration change is invalid; keeping the current configuration');
          break;
        case 'deleted':
          log.warn({ key }, 'configuration key deleted; keeping the current configuration');
          break;
      }
    }), (sub) => sub.unsubscribe());
  });
  const died = background?.failed?.then((reason) => {
    failure = reason;
    return 'failed' as const;
  });
  const why = await Promise.race([signal, changed, ...(died ? [died] : [])]);
  deadline = Date.now() + GRACE_MS;
  return failure === undefined ? { why } : { why, failure };
};
