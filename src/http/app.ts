import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from '../runtime/logger';
import { makeApiKeyCheck } from './auth';
import type { Metrics } from './metrics';
import { INACTIVE, NOT_CONNECTED, sendError, sendProblem } from './problem';

export interface DataRoute {
  readonly method: 'get' | 'post';
  readonly path: string;
  readonly handler: RequestHandler;
}

export interface AppDeps {
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly apiKeys: readonly string[];
  readonly isConnected: () => boolean;
  readonly isActive: () => boolean;
  /** Set when background work died: readiness answers 503 with it until the process exits. */
  readonly failure?: () => string | undefined;
  readonly openapi: () => object;
  /** The connector's data routes, each behind authentication and the inactive check. */
  readonly dataRoutes: readonly DataRoute[];
}

const routeOf = (req: Request): string => {
  const r = (req as Request & { route?: { path?: unknown } }).route;
  return typeof r?.path === 'string' ? `${req.baseUrl}${r.path}` : 'unmatched';
};

/**
 * One log line and one metric sample per request, written when the response ends. The labelled
 * metric children are looked up once per (route, method, status) rather than hashed per request.
 */
const requestLog = (log: Logger, metrics: Metrics): RequestHandler => {
  const counters = new Map<string, { inc(): void }>();
  const timers = new Map<string, { observe(v: number): void }>();
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeOf(req);
      const status = res.headersSent ? res.statusCode : 0;
      const key = `${route} ${req.method}`;
      let timer = timers.get(key);
      if (timer === undefined) timers.set(key, (timer = metrics.httpDuration.labels(route, req.method)));
      let counter = counters.get(`${key} ${status}`);
      if (counter === undefined) counters.set(`${key} ${status}`, (counter = metrics.httpRequests.labels(route, req.method, String(status))));
      counter.inc();
      timer.observe(seconds);
      log.info({ method: req.method, route, path: req.path, status, durationMs: Math.round(seconds * 1e6) / 1e3, aborted: !res.writableFinished || undefined }, 'request');
    });
    next();
  };
};

export const createApp = (deps: AppDeps): express.Express => {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', 'simple');
  app.use(requestLog(deps.log, deps.metrics));

  // Settings are fixed for the life of the process (a change restarts it): guards that would
  // always pass are left out rather than run on every request.
  const authorized = makeApiKeyCheck(deps.apiKeys);
  const requireKey: RequestHandler[] =
    deps.apiKeys.length === 0
      ? []
      : [
          (req, res, next) => {
            if (authorized(req)) return next();
            sendProblem(res, 401, 'a valid API key is required (Authorization: Bearer <key> or X-Api-Key)', { 'WWW-Authenticate': 'Bearer' });
          },
        ];
  const requireActive: RequestHandler[] = deps.isActive() ? [] : [(_req, res) => sendProblem(res, 503, INACTIVE)];

  // The data routes first: they are the hot path, and express tries routes in order.
  for (const r of deps.dataRoutes) app[r.method](r.path, ...requireKey, ...requireActive, r.handler);
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
  app.get('/metrics', ...requireKey, metricsHandler);
  app.get('/openapi.json', ...requireKey, openapiHandler);

  app.use((req: Request, res: Response) => {
    sendError(res, 404, 'not_found', `no resource at ${req.method} ${req.path}`);
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    deps.log.error({ err: err instanceof Error ? err.message : String(err), method: req.method, path: req.path }, 'unexpected error');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, 500, 'an unexpected error occurred');
  });
  return app;
};
