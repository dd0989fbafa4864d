import type { Express } from 'express';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * CONTRACT 6.8: the operator page — `GET /` and its files under `/ui/` — served by the connector
 * itself, nothing loaded from elsewhere. No authentication: everything the page shows comes from the
 * authenticated endpoints it calls. The scripts are `src/ui/*.ts` compiled for the browser
 * (`tsconfig.ui.json` → `dist/ui/`); the page and its style are here.
 */
export type ConnectorKind = 'inbound' | 'outbound';

/** The policy of 6.8: only this origin's files, no inline script or style, never in a frame. */
export const PAGE_CSP = "default-src 'self'; frame-ancestors 'none'";
const SAFETY = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' } as const;

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export const pageHtml = (kind: ConnectorKind, id: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rest-connector ${kind} ${escapeHtml(id)}</title>
<link rel="stylesheet" href="/ui/page.css">
<script type="module" src="/ui/page.js"></script>
</head>
<body data-connector="${kind}">
<header>
<h1>rest-connector: ${kind} <span class="id">${escapeHtml(id)}</span></h1>
<nav aria-label="Session"><button type="button" id="signout">Sign out</button></nav>
</header>
<main>
<section id="signin" aria-labelledby="signin-h" hidden>
<h2 id="signin-h">Sign in</h2>
<form id="signin-form" aria-label="Sign in">
<label for="key">API key</label>
<input id="key" name="API key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button>
</form>
<p id="signin-message" role="alert"></p>
</section>
<div id="content"></div>
<p id="status" role="status" aria-live="polite"></p>
</main>
</body>
</html>
`;

export const PAGE_CSS = `:root { font-family: system-ui, sans-serif; color: #1b1b1b; background: #fafafa; }
body { margin: 0 auto; max-width: 80rem; padding: 0.5rem 1rem; }
header { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: 0.5rem; }
h1 { font-size: 1.25rem; margin: 0.5rem 0; }
h1 .id { font-weight: normal; color: #555; }
h2 { font-size: 1.1rem; margin: 1.25rem 0 0.5rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { border-bottom: 1px solid #ccc; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
td { max-width: 40rem; overflow-wrap: break-word; }
td.actions { white-space: nowrap; }
button { font: inherit; margin: 0.1rem; padding: 0.25rem 0.6rem; }
button:focus-visible, input:focus-visible, textarea:focus-visible { outline: 3px solid #1a5fb4; outline-offset: 1px; }
form { display: flex; flex-wrap: wrap; gap: 0.4rem; align-items: center; }
textarea { width: 100%; font-family: ui-monospace, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f0f0f0; padding: 0.5rem; }
[role=alert] { color: #a51d2d; }
`;

/** Where the compiled scripts are: `dist/ui` next to `dist/src` (the built connector), or under the project (tests run from `src`). */
const uiDir = (): string => {
  const candidates = [join(__dirname, '..', '..', '..', 'ui'), join(__dirname, '..', '..', '..', 'dist', 'ui')];
  return candidates.find((d) => existsSync(join(d, 'page.js'))) ?? candidates[0]!;
};

/** The files under `/ui/`: the style, and the scripts read once, when first asked for. */
const files = new Map<string, { type: string; body: () => string }>([
  ['page.css', { type: 'text/css; charset=utf-8', body: () => PAGE_CSS }],
  ['page.js', { type: 'text/javascript; charset=utf-8', body: () => readFileSync(join(uiDir(), 'page.js'), 'utf8') }],
  ['model.js', { type: 'text/javascript; charset=utf-8', body: () => readFileSync(join(uiDir(), 'model.js'), 'utf8') }],
]);

export const mountOperatorPage = (app: Express, kind: ConnectorKind, id: string): void => {
  const html = pageHtml(kind, id);
  const cache = new Map<string, string>();
  app.get('/', (_req, res) => {
    res.set({ 'Content-Security-Policy': PAGE_CSP, ...SAFETY, 'Cache-Control': 'no-store' }).type('text/html; charset=utf-8').send(html);
  });
  app.get('/ui/:file', (req, res, next) => {
    const name = String(req.params.file);
    const f = files.get(name);
    if (f === undefined) return next();
    let body = cache.get(name);
    if (body === undefined) cache.set(name, (body = f.body()));
    res.set({ ...SAFETY, 'Cache-Control': 'no-cache' }).type(f.type).send(body);
  });
};
