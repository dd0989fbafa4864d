import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../telemetry/metrics';

/**
 * Starts the request's log line and metric sample, written when the response ends; `route` and
 * `path` are asked then (express knows the route only once it has matched one). The labelled
 * metric children are looked up once per (route, method, status) rather than hashed per request.
 */
export type RequestLog = (req: IncomingMessage, res: ServerResponse, route: () => string, path: () => string) => void;

export const makeRequestLog = (log: Logger, metrics: Metrics, callerOf: (req: IncomingMessage) => string | undefined = () => undefined): RequestLog => {
  const counters = new Map<string, { inc(): void }>();
  const timers = new Map<string, { observe(v: number): void }>();
  return (req, res, routeNow, pathNow) => {
    const start = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeNow();
      const method = req.method ?? '';
      const status = res.headersSent ? res.statusCode : 0;
      const key = `${route} ${method}`;
      let timer = timers.get(key);
      if (timer === undefined) timers.set(key, (timer = metrics.httpDuration.labels(route, method)));
      let counter = counters.get(`${key} ${status}`);
      if (counter === undefined) counters.set(`${key} ${status}`, (counter = metrics.httpRequests.labels(route, method, String(status))));
      counter.inc();
      timer.observe(seconds);
      // CONTRACT 7.1: the caller by name (a key's name, key-N, a certificate's CN), never a key
      log.info({ method, route, path: pathNow(), status, durationMs: Math.round(seconds * 1e6) / 1e3, caller: callerOf(req), aborted: !res.writableFinished || undefined }, 'request');
    });
  };
};
