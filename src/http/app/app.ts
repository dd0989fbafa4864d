import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { certificateCaller, makeApiKeyCheck, type NamedKey } from './auth';
import { makeRequestLog } from './requestLog';
import { withDataPath } from './dataPath';
import type { Metrics } from '../../telemetry/metrics';
import { INACTIVE, NOT_CONNECTED, sendError, sendProblem } from './problem';
import type { RequestTrace, Tracing } from '../../telemetry/tracing';
import type { CallerGrant, Callers } from '../../config/callerSettings';
import { makeRefusals } from './refusals';
import type { RateWindow } from './rateWindow';
import { mountOperatorPage, type ConnectorKind } from './operatorPage';

/**
 * What a data handler knows of its request besides the request itself, from the moment it was
 * authenticated: the place where per-request facts (its time, its caller's name, its trace)
 * travel to the handler and its log lines.
 */
export interface RequestContext {
  /** When the request was received: the time of the data points that have no timestamp path (CONTRACT 5.3). */
  readonly receivedAt: Date;
  /**
   * Who called (CONTRACT 7.1): the name of the API key that matched (its own, or `key-N`), or the
   * subject CN of a verified client certificate; undefined when neither is known. Never a key.
   */
  readonly caller: string | undefined;
  readonly log: Logger;
  /** The request's server span (CONTRACT 9); undefined when tracing is off. */
  readonly trace: RequestTrace | undefined;
  /** CONTRACT 7.2: what the caller is granted; undefined when `callers` is not set (everything). */
  readonly grant: CallerGrant | undefined;
  /** Answers 403 problem details with `detail`, counted and logged as a refusal (CONTRACT 7.2). */
  readonly forbid: (detail: string) => void;
}

/** A data route's handler sees Node's own request and response (it is served by the lean path too) and the request's context. */
export type DataHandler = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) => void | Promise<void>;

export interface DataRoute {
  readonly method: 'get' | 'post' | 'delete';
  readonly path: string;
  readonly handler: DataHandler;
}

export interface AppDeps {
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly apiKeys: readonly NamedKey[];
  readonly isConnected: () => boolean;
  readonly isActive: () => boolean;
  /** Set when background work died: readiness answers 503 with it until the process exits. */
  readonly failure?: () => string | undefined;
  readonly openapi: () => object;
  /** The connector's data routes, each behind authentication and the inactive check. */
  readonly dataRoutes: readonly DataRoute[];
  /** CONTRACT 9: a server span per data route request, when tracing is on. */
  readonly tracing?: Tracing | undefined;
  /** CONTRACT 7.2: who may do what; absent, every authenticated caller may do everything. */
  readonly callers?: Callers | undefined;
  /** CONTRACT 7.2: counts a caller's requests in the current one-second window (needed for `maxRequestsPerSecond`). */
  readonly rateWindow?: RateWindow;
  /** CONTRACT 6.8: the operator page at `/` (`Http:OperatorPage`); absent, `/` and `/ui/*` are unknown paths. */
  readonly operatorPage?: { readonly kind: ConnectorKind; readonly id: string } | undefined;
}

const routeOf = (req: Request): string => {
  const r = (req as Request & { route?: { path?: unknown } }).route;
  return typeof r?.path === 'string' ? `${req.baseUrl}${r.path}` : 'unmatched';
};

/** What follows a thrown error or a rejected handler: a log line and 500 problem details. */
const unexpected = (log: Logger, err: unknown, req: IncomingMessage, path: string, res: ServerResponse): void => {
  log.error({ err: err instanceof Error ? err.message : String(err), method: req.method, path }, 'unexpected error');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendProblem(res, 500, 'an unexpected error occurred');
};

/** Each request's caller, for its log line (set where it is authenticated). */
const requestCallers = new WeakMap<IncomingMessage, string>();

/**
 * The HTTP side of a connector: express for everything, and in front of it the lean path of the
 * data routes (`dataPath.ts`), which serves the exact method and path of a data route without
 * express's router. Both run each data route through the same `serve` chain.
 */

export const createApp = (deps: AppDeps): RequestListener => {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', 'simple');
  const requestLog = makeRequestLog(deps.log, deps.metrics, (req) => requestCallers.get(req));
  app.use((req, res, next) => {
    requestLog(req, res, () => routeOf(req), () => req.path);
    next();
  });

  // Settings are fixed for the life of the process (a change restarts it): guards that would
  // always pass are left out rather than run on every request.
  const keyCheck = makeApiKeyCheck(deps.apiKeys);
  const keyRequired = deps.apiKeys.length > 0;
  /** The request's caller (a verified client certificate's CN, else the matching key's name), remembered for its log line. */
  const callerOf = (req: IncomingMessage): string | undefined => {
    const caller = certificateCaller(req) ?? (keyRequired ? keyCheck(req) : undefined);
    if (caller !== undefined) requestCallers.set(req, caller);
    return caller;
  };
  const denied = (res: ServerResponse) =>
    sendProblem(res, 401, 'a valid API key is required (Authorization: Bearer <key> or X-Api-Key)', { 'WWW-Authenticate': 'Bearer' });
  const refuse = makeRefusals(deps.log, deps.metrics);
  const { callers, rateWindow } = deps;
  /**
   * CONTRACT 5.1, 7 and 7.2, in their order: authenticated (401), a listed caller (403), within its
   * rate (429); then `next` with the caller and its grant. Everything after the rate's count waits
   * for it (a round trip to Redis, shared by the requests that arrive meanwhile).
   */
  const admit = (req: IncomingMessage, res: ServerResponse, next: (caller: string | undefined, grant: CallerGrant | undefined) => void): void => {
    const caller = callerOf(req);
    if (keyRequired && caller === undefined) return denied(res);
    if (callers === undefined) return next(caller, undefined);
    const grant = caller === undefined ? undefined : callers.get(caller);
    if (grant === undefined) {
      return refuse(res, caller, 'forbidden', caller === undefined
        ? 'no caller is identified (an API key name or a client certificate CN) and only the callers listed may use this endpoint'
        : `caller '${caller}' is not listed in callers`);
    }
    const limit = grant.maxRequestsPerSecond;
    if (limit === undefined || rateWindow === undefined) return next(caller, grant);
    const verdict = rateWindow(caller!, limit);
    const go = (v: Awaited<typeof verdict>) => {
      if (v.allowed) next(caller, grant);
      // CONTRACT 7.2: Redis refused the count (not "unreachable"): nothing is let through uncounted
      else if ('failed' in v) sendProblem(res, 503, `the requests of caller '${caller}' could not be counted: ${v.failed}`);
      else refuse(res, caller, 'rate_limited', `caller '${caller}' may send at most ${limit} requests a second`, { 'Retry-After': String(v.retryAfterSeconds) });
    };
    if (verdict instanceof Promise) verdict.then(go).catch((err: unknown) => unexpected(deps.log, err, req, req.url ?? '', res));
    else go(verdict);
  };
  const requireKey: RequestHandler[] = keyRequired || callers !== undefined ? [(req, res, next) => admit(req, res, () => next())] : [];
  const inactive = !deps.isActive();

  /** A data route behind authentication, the callers' checks and the inactive check; an error thrown is a 500. */
  const { tracing } = deps;
  const serve = (handler: DataHandler, route: string) => (req: IncomingMessage, res: ServerResponse, path: string): void => {
    const trace = tracing?.request(req.method ?? 'GET', route, req.headers);
    if (trace !== undefined) {
      res.once('close', () => {
        // the caller as authentication named it, also on a refused request
        const caller = requestCallers.get(req);
        if (caller !== undefined) trace.caller(caller);
        trace.end(res.statusCode);
      });
    }
    admit(req, res, (caller, grant) => {
      if (inactive) return sendProblem(res, 503, INACTIVE);
      const forbid = (detail: string) => refuse(res, caller, 'forbidden', detail);
      try {
        const done = handler(req, res, { receivedAt: new Date(), caller, log: deps.log, trace, grant, forbid });
        if (done !== undefined) done.catch((err: unknown) => unexpected(deps.log, err, req, path, res));
      } catch (err) {
        unexpected(deps.log, err, req, path, res);
      }
    });
  };
  const served = deps.dataRoutes.map((r) => ({ ...r, serve: serve(r.handler, r.path) }));

  // The data routes first: they are the hot path, and express tries routes in order. These catch
  // what the lean path passes on: HEAD, a trailing slash, another letter case.
  for (const r of served) app[r.method](r.path, (req, res) => r.serve(req, res, req.path));
  app.get('/health/live', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/health/ready', (_req, res) => {
    const reason = deps.failure?.() ?? (!deps.isConnected() ? NOT_CONNECTED : !deps.isActive() ? INACTIVE : undefined);
    if (reason === undefined) res.json({ status: 'ready' });
    else res.status(503).json({ status: 'not ready', reason });
  });
  const metricsHandler: RequestHandler = async (_req, res) => {
    deps.metrics.datastoreConnected.set(deps.isConnected() ? 1 : 0);
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  };
  const openapiHandler: RequestHandler = (_req, res) => {
    res.json(deps.openapi());
  };
  if (deps.operatorPage !== undefined) mountOperatorPage(app, deps.operatorPage.kind, deps.operatorPage.id);
  app.get('/metrics', ...requireKey, metricsHandler);
  app.get('/openapi.json', ...requireKey, openapiHandler);

  app.use((req: Request, res: Response) => {
    sendError(res, 404, 'not_found', `no resource at ${req.method} ${req.path}`);
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => unexpected(deps.log, err, req, req.path, res));
  return withDataPath(served, requestLog, app);
};
