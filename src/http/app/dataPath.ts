import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { RequestLog } from './requestLog';

/** A data route as the lean path sees it: its method and path, and its chain (key, inactive, handler). */
export interface ServedRoute {
  readonly method: 'get' | 'post' | 'delete';
  readonly path: string;
  readonly serve: (req: IncomingMessage, res: ServerResponse, path: string) => void;
}

/**
 * The lean path of the data routes. A request whose method and path are exactly those
 * of a data route (`POST /api/datapoints`, `GET /api/datapoints`, `GET /api/webhooks`) is served
 * without express: its router and its request and response decoration cost about a third of an
 * inbound request's CPU time (measured with `npm run bench`). The request runs the same chain as
 * under express — the same request log line and metrics, API key check, inactive check, handler,
 * and 500 on an unexpected error — so the answers are the same byte for byte. Everything else,
 * variants of these paths included (HEAD, a trailing slash, another letter case, an absolute URL),
 * goes to express, where the same routes are mounted.
 */
export const withDataPath = (routes: readonly ServedRoute[], requestLog: RequestLog, app: RequestListener): RequestListener => {
  const byKey = new Map(routes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r]));
  return (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const route = byKey.get(`${req.method ?? ''} ${path}`);
    if (route === undefined) {
      app(req, res);
      return;
    }
    requestLog(req, res, () => route.path, () => path);
    route.serve(req, res, path);
  };
};
