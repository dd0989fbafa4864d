/**
 * The operator page (CONTRACT 6.8) in the browser: a client of the connector's public endpoints,
 * nothing else. Every value is inserted as text (`textContent`), never as HTML; the API key lives in
 * this tab's `sessionStorage` only and goes out as `Authorization: Bearer`. What it shows and offers
 * is worked out by `model.ts`; this file only builds elements and calls endpoints.
 */
import {
  accessOf, backlogRows, BACKLOG_COLUMNS, DATAPOINT_COLUMNS, datapointQuery, datapointRows, MAPPING_COLUMNS, mappingRows, outcomeText,
  refusalText, WEBHOOK_COLUMNS, webhookActions, webhookRows, type Access,
} from './model.js';

const KEY = 'rest-connector-api-key';
const REFRESH_MS = 1500;

type Attrs = Record<string, string>;
const el = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return e;
};
const byId = (id: string): HTMLElement => document.getElementById(id)!;

/** A table with a caption (its accessible name), column headers and rows of text. */
const table = (caption: string, headers: readonly string[], rows: ReadonlyArray<readonly string[]>): HTMLElement =>
  el('div', { class: 'scroll' }, el('table', {},
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
  ));

const say = (text: string): void => {
  byId('status').textContent = text;
};

interface Answer { readonly status: number; readonly json: unknown }

/** One request to the connector (same origin), with the tab's key; a 401 asks for a key again. */
const call = async (method: string, path: string, body?: string): Promise<Answer> => {
  const headers: Record<string, string> = {};
  const key = sessionStorage.getItem(KEY);
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, cache: 'no-store', credentials: 'same-origin', ...(body !== undefined ? { body } : {}) });
  let json: unknown = null;
  try {
    json = await r.json();
  } catch {
    // no JSON body
  }
  if (accessOf(r.status) === 'sign-in') signIn(sessionStorage.getItem(KEY) !== null ? 'That API key was not accepted.' : '');
  return { status: r.status, json };
};

let started = false;
const signIn = (message: string): void => {
  byId('signin').hidden = false;
  byId('content').hidden = true;
  byId('signin-message').textContent = message;
  (byId('key') as HTMLInputElement).focus();
};

const buildSignIn = (onSignedIn: () => void): void => {
  const form = byId('signin-form') as HTMLFormElement;
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = byId('key') as HTMLInputElement;
    sessionStorage.setItem(KEY, input.value);
    input.value = '';
    byId('signin').hidden = true;
    byId('content').hidden = false;
    onSignedIn();
  });
  byId('signout').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    signIn('Signed out.');
  });
};

/** The outbound connector's page: the `Webhooks` table, its actions, and the `Data points` form. */
const outbound = (content: HTMLElement): (() => void) => {
  const hooks = el('section', { 'aria-labelledby': 'webhooks-h' }, el('h2', { id: 'webhooks-h' }, 'Webhooks'), el('div', { id: 'webhooks' }));
  const backlog = el('section', { 'aria-labelledby': 'backlog-h', id: 'backlog-section', hidden: '' }, el('h2', { id: 'backlog-h' }, 'Backlog'), el('div', { id: 'backlog' }));
  const casdu = el('input', { id: 'casdu', name: 'casdu', inputmode: 'numeric', autocomplete: 'off' });
  const ioa = el('input', { id: 'ioa', name: 'ioa', inputmode: 'numeric', autocomplete: 'off' });
  const form = el('form', { 'aria-label': 'Data points' },
    el('label', { for: 'casdu' }, 'casdu'), casdu, el('label', { for: 'ioa' }, 'ioa'), ioa, el('button', { type: 'submit' }, 'Show'));
  const points = el('section', { 'aria-labelledby': 'points-h' }, el('h2', { id: 'points-h' }, 'Data points'), form, el('div', { id: 'points' }));
  content.append(hooks, backlog, points);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void call('GET', `/api/datapoints${datapointQuery(casdu.value, ioa.value)}`).then((a) => {
      byId('points').replaceChildren(accessOf(a.status) === 'ok' ? table('Data points found', DATAPOINT_COLUMNS, datapointRows(a.json)) : el('p', { role: 'alert' }, refusalText(a.status, a.json)));
    });
  });
  const showBacklog = async (index: number, after?: string): Promise<void> => {
    const a = await call('GET', `/api/webhooks/${index}/backlog?limit=100${after !== undefined ? `&after=${encodeURIComponent(after)}` : ''}`);
    byId('backlog-section').hidden = false;
    if (accessOf(a.status) !== 'ok') return void byId('backlog').replaceChildren(el('p', { role: 'alert' }, refusalText(a.status, a.json)));
    const { rows, next } = backlogRows(a.json);
    const more = el('button', { type: 'button' }, 'More entries');
    more.addEventListener('click', () => void showBacklog(index, next!));
    byId('backlog').replaceChildren(table(`Backlog of webhook ${index}`, BACKLOG_COLUMNS, rows), ...(next !== null ? [more] : []));
  };
  const act = async (action: string, index: number): Promise<void> => {
    if (action === 'Backlog') return showBacklog(index);
    if (action === 'Interrogate') {
      const a = await call('POST', `/api/webhooks/${index}/interrogation`);
      return say(accessOf(a.status) === 'ok' ? `interrogation of webhook ${index} queued` : refusalText(a.status, a.json));
    }
    if (!window.confirm(`${action} the backlog of webhook ${index}?`)) return;
    say(`${action === 'Replay' ? 'replaying' : 'purging'} the backlog of webhook ${index}…`);
    const a = await call(action === 'Replay' ? 'POST' : 'DELETE', `/api/webhooks/${index}/backlog${action === 'Replay' ? '/replay' : ''}`);
    say(accessOf(a.status) === 'ok' ? `webhook ${index}: ${outcomeText(action as 'Replay' | 'Purge', a.json)}` : refusalText(a.status, a.json));
    if (!byId('backlog-section').hidden) await showBacklog(index);
  };
  const label = (action: string, index: number) => (action === 'Interrogate' ? `Interrogate webhook ${index}` : action === 'Backlog' ? `Backlog of webhook ${index}` : `${action} backlog of webhook ${index}`);
  let shown = '';
  return () => {
    void call('GET', '/api/webhooks').then((a) => {
      const access: Access = accessOf(a.status);
      const box = byId('webhooks');
      if (access !== 'ok') {
        shown = '';
        if (access !== 'sign-in') box.replaceChildren(el('p', { role: 'alert' }, refusalText(a.status, a.json)));
        return;
      }
      const rows = webhookRows(a.json);
      const actions = webhookActions(access);
      const key = rows.map((r) => r.index).join(',');
      if (key === shown) {
        // the same webhooks: only the cells change (focus and buttons stay where they are)
        rows.forEach((r, i) => {
          const tds = box.querySelectorAll('tbody tr')[i]!.querySelectorAll('td');
          r.cells.forEach((c, k) => (tds[k]!.textContent = c));
        });
        return;
      }
      shown = key;
      box.replaceChildren(el('div', { class: 'scroll' }, el('table', {},
        el('caption', {}, 'Webhooks'),
        el('thead', {}, el('tr', {}, ...WEBHOOK_COLUMNS.map(([h]) => el('th', { scope: 'col' }, h)), ...(actions.length > 0 ? [el('th', { scope: 'col' }, 'Actions')] : []))),
        el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.cells.map((c) => el('td', {}, c)), ...(actions.length > 0 ? [el('td', { class: 'actions' }, ...actions.map((x) => {
          const b = el('button', { type: 'button', 'aria-label': label(x, r.index) }, x);
          b.addEventListener('click', () => void act(x, r.index));
          return b;
        }))] : [])))),
      )));
    });
  };
};

/** The inbound connector's page: the `Mappings` table and the `Try a payload` form. */
const inbound = (content: HTMLElement): (() => void) => {
  const topic = el('input', { id: 'topic', name: 'Topic', autocomplete: 'off' });
  const body = el('textarea', { id: 'body', name: 'Body', rows: '8' });
  const form = el('form', { 'aria-label': 'Try a payload' },
    el('label', { for: 'topic' }, 'Topic'), topic, el('label', { for: 'body' }, 'Body'), body, el('button', { type: 'submit' }, 'Try'));
  content.append(
    el('section', { 'aria-labelledby': 'mappings-h' }, el('h2', { id: 'mappings-h' }, 'Mappings'), el('div', { id: 'mappings' })),
    el('section', { 'aria-labelledby': 'try-h' }, el('h2', { id: 'try-h' }, 'Try a payload'), form, el('pre', { id: 'tried', 'aria-live': 'polite' })),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void call('POST', `/api/mappings/test?topic=${encodeURIComponent(topic.value)}`, body.value).then((a) => {
      byId('tried').textContent = `${a.status}\n${a.json === null ? '' : JSON.stringify(a.json, null, 2)}`;
    });
  });
  return () => {
    void call('GET', '/api/mappings').then((a) => {
      const access = accessOf(a.status);
      if (access === 'sign-in') return;
      byId('mappings').replaceChildren(access === 'ok' ? table('Mappings', MAPPING_COLUMNS.map(([h]) => h), mappingRows(a.json)) : el('p', { role: 'alert' }, refusalText(a.status, a.json)));
    });
  };
};

const start = (): void => {
  if (started) return;
  started = true;
  const kind = document.body.dataset.connector;
  const content = byId('content');
  const refresh = kind === 'inbound' ? inbound(content) : outbound(content);
  buildSignIn(refresh);
  refresh();
  // the table stays current while the page is visible (CONTRACT 6.8: at least every 2 s)
  if (kind !== 'inbound') setInterval(() => !document.hidden && byId('signin').hidden && refresh(), REFRESH_MS);
};

start();
