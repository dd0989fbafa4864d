/// <reference lib="dom" />
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Connector, eventually } from './helpers/cli';
import { request } from './helpers/http';
import { Receiver } from './helpers/receiver';
import { freePort, privateRedis } from './helpers/redis';

/**
 * Where the pictures of the docs are taken: docs/images with UPDATE_SCREENSHOTS=1 (to refresh them),
 * else a temporary directory — a test run does not rewrite tracked files.
 */
const PICTURES = process.env.UPDATE_SCREENSHOTS === '1' ? join(__dirname, '..', 'docs', 'images') : join(tmpdir(), 'rest-connectors-screenshots');

/**
 * CONTRACT 6.8 in a real browser: Debian's Chromium driven by playwright-core against the CLI's own
 * connector processes, a private Redis and real receivers. Elements are found by role and accessible
 * name as 6.8 names them. Every request the page makes is recorded: all of them go to the connector.
 */
/** Debian's Chromium (`.ci/run` installs it); CHROMIUM_PATH names another build. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const r = privateRedis();
let browser: Browser;
const running: Connector[] = [];
const receivers: Receiver[] = [];
/** Every URL a page asked for, across the tests. */
const asked: string[] = [];
const bases: string[] = [];

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}, 60000);
afterAll(async () => {
  await browser?.close();
  // every request the page made went to the connector that served it (nothing from elsewhere)
  expect(asked.length).toBeGreaterThan(20);
  expect(asked.filter((u) => !bases.some((b) => u.startsWith(`${b}/`)))).toEqual([]);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
  await Promise.all(receivers.splice(0).map((x) => x.close()));
  await r.client.flushall();
});

const KEYS = 'operator=key-op,viewer=key-viewer';
const CALLERS = { operator: { operate: true, casdu: ['0-65535'] }, viewer: { casdu: [1] } };

const start = async (kind: 'outbound' | 'inbound', config: object, env: Record<string, string> = {}) => {
  const port = await freePort();
  const id = `page-${kind}`;
  await r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], ...config }));
  const c = new Connector(kind, { Id: id, ConnectionStrings__Datastore: r.redis.url, ...env });
  running.push(c);
  await c.waitForLog((l) => l.msg === `${kind} connector listening`);
  const base = `http://127.0.0.1:${port}`;
  bases.push(base);
  return { c, base, id };
};

const open = async (base: string, width = 1200): Promise<{ context: BrowserContext; page: Page }> => {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.on('request', (req) => asked.push(req.url()));
  await page.goto(`${base}/`);
  return { context, page };
};

const signIn = async (page: Page, key: string) => {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
};

/** An entry as the inbound connector appends it. */
const append = (n: number, source = 'plc') =>
  r.client.xadd('process:updates', '*', 'casdu', '1', 'ioa', String(n), 'source', source, 'data', JSON.stringify({ casdu: 1, ioa: n, type: 36, value: n, timestamp: new Date().toISOString(), source }));

const backlogOf = async (id: string) => (await r.client.xrange(`connectors:${id}:deadletter`, '-', '+')).map(([, f]) => f[f.indexOf('reason') + 1]);

it('sign-in: the key is asked for, kept in sessionStorage only (no cookie, no localStorage, never in a URL), sent as Bearer; signing out asks again', async () => {
  const hook = await Receiver.start();
  receivers.push(hook);
  const { base } = await start('outbound', { webhooks: [{ url: hook.url }], callers: CALLERS }, { Authentication__ApiKeys: KEYS });
  const { context, page } = await open(base);
  const bearer: string[] = [];
  page.on('request', (req) => void (req.headers().authorization !== undefined && bearer.push(req.headers().authorization!)));
  // the form comes once the page has learnt that a key is needed: waited for, not looked at once
  await page.getByLabel('API key').waitFor({ state: 'visible', timeout: 15000 });
  await signIn(page, 'key-op');
  await page.getByRole('table', { name: 'Webhooks' }).waitFor();
  expect(await page.evaluate(() => [sessionStorage.getItem('rest-connector-api-key'), localStorage.length, document.cookie])).toEqual(['key-op', 0, '']);
  expect((await context.cookies()).length).toBe(0);
  expect(bearer.length).toBeGreaterThan(0);
  expect(new Set(bearer)).toEqual(new Set(['Bearer key-op']));
  expect(asked.filter((u) => u.includes('key-op'))).toEqual([]);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  await context.close();
});

it('a receiver that starts failing shows "open" in the Webhooks table within seconds, without a reload; Replay after it recovered empties the backlog (read in Redis), Purge empties another', async () => {
  let failing = false;
  const hook = await Receiver.start(() => ({ status: failing ? 503 : 200 }));
  receivers.push(hook);
  const { base, id } = await start('outbound', { webhooks: [{ url: hook.url }] }, {
    Webhooks__MaxAttempts: '1', Webhooks__CircuitFailureThreshold: '1', Webhooks__ProbeIntervalSeconds: '600', Webhooks__AutoRedrive: 'false',
    Webhooks__BatchWindowMilliseconds: '20', Datastore__StartFromLatest: 'false',
  });
  const { context, page } = await open(base);
  const row = page.getByRole('table', { name: 'Webhooks' }).getByRole('row').nth(1);
  await eventually(async () => ((await row.textContent()) ?? '').includes('healthy') || undefined, 10000, 'the row healthy');
  failing = true;
  for (let n = 1; n <= 3; n++) await append(n);
  // the fault took effect: the receiver refused, the backlog holds the batches
  await eventually(async () => ((await backlogOf(id)).length >= 1 ? true : undefined), 15000, 'a batch in the backlog');
  expect(hook.requests.some((x) => x.status === 503)).toBe(true);
  await eventually(async () => ((await row.textContent()) ?? '').includes('open') || undefined, 10000, '"open" in the row');
  const urlBefore = page.url();
  // the backlog, shown
  await page.getByRole('button', { name: 'Backlog of webhook 0', exact: true }).click();
  await page.getByRole('table', { name: 'Backlog of webhook 0' }).waitFor();
  expect(await page.getByRole('table', { name: 'Backlog of webhook 0' }).getByRole('row').count()).toBeGreaterThan(1);
  // recovered, then Replay (confirmed)
  failing = false;
  const entries = (await backlogOf(id)).length;
  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Replay backlog of webhook 0' }).click();
  await page.getByRole('status').filter({ hasText: 'delivered' }).waitFor();
  expect(await page.getByRole('status').textContent()).toBe(`webhook 0: delivered ${entries}, failed 0`);
  expect(await backlogOf(id)).toEqual([]);
  // a new failure, then Purge; a refused confirmation does nothing
  failing = true;
  await append(4);
  await eventually(async () => ((await backlogOf(id)).length === 1 ? true : undefined), 15000, 'a new backlog entry');
  page.once('dialog', (d) => void d.dismiss());
  await page.getByRole('button', { name: 'Purge backlog of webhook 0' }).click();
  expect((await backlogOf(id)).length).toBe(1);
  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Purge backlog of webhook 0' }).click();
  await page.getByRole('status').filter({ hasText: 'purged' }).waitFor();
  expect(await page.getByRole('status').textContent()).toBe('webhook 0: purged 1');
  expect(await backlogOf(id)).toEqual([]);
  expect(page.url()).toBe(urlBefore);
  await context.close();
}, 90000);

it('Interrogate, from the keyboard alone, reaches the receiver with Webhook-Cause: interrogation; the page is readable at 400 px (nothing wider than the window but the tables\' own scrolling)', async () => {
  const hook = await Receiver.start();
  receivers.push(hook);
  await r.client.set('process:image:casdu:1:ioa:7', JSON.stringify({ casdu: 1, ioa: 7, type: 36, value: 1.5, timestamp: '2026-11-28T10:00:00.000Z', source: 'plc' }));
  const { base } = await start('outbound', { webhooks: [{ url: hook.url }] });
  const { context, page } = await open(base, 400);
  await page.getByRole('button', { name: 'Interrogate webhook 0' }).waitFor();
  let focused = '';
  for (let i = 0; i < 40 && focused !== 'Interrogate webhook 0'; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? '');
  }
  expect(focused).toBe('Interrogate webhook 0');
  await page.keyboard.press('Enter');
  await eventually(() => hook.requests.find((x) => x.headers['webhook-cause'] === 'interrogation'), 15000, 'the interrogation at the receiver');
  expect(await page.getByRole('status').textContent()).toBe('interrogation of webhook 0 queued');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);
  mkdirSync(PICTURES, { recursive: true });
  await page.setViewportSize({ width: 1000, height: 600 });
  // the picture for the docs: the table scrolled back to its start
  await page.evaluate(() => document.querySelectorAll('.scroll').forEach((e) => (e.scrollLeft = 0)));
  await page.screenshot({ path: join(PICTURES, 'operator-page-outbound.png') });
  await context.close();
});

it('a caller without operate is offered no action (the refusal is shown), and the endpoints refuse it; a <script> in a source or an error shows as text', async () => {
  const hook = await Receiver.start();
  receivers.push(hook);
  const { base, id } = await start('outbound', { webhooks: [{ url: hook.url }], callers: CALLERS }, { Authentication__ApiKeys: KEYS });
  await r.client.set('process:image:casdu:1:ioa:5', JSON.stringify({ casdu: 1, ioa: 5, type: 36, value: 2, timestamp: '2026-11-28T10:00:00.000Z', source: '<script>window.hit=1</script>' }));
  await r.client.xadd(`connectors:${id}:deadletter`, '*', 'webhook', '0', 'url', hook.url, 'webhookId', '1-0_1-0', 'error', '<img src=x onerror="window.hit=2">', 'attempts', '1', 'body', '{"datapoints":[]}', 'reason', 'refused');
  const viewer = await open(base);
  await signIn(viewer.page, 'key-viewer');
  await viewer.page.getByText("caller 'viewer' may not operate the webhooks").waitFor();
  expect(await viewer.page.getByRole('button', { name: /^(Interrogate|Backlog|Replay|Purge)/ }).count()).toBe(0);
  for (const [method, path] of [['POST', '/api/webhooks/0/interrogation'], ['POST', '/api/webhooks/0/backlog/replay'], ['DELETE', '/api/webhooks/0/backlog']] as const) {
    expect([path, (await request(`${base}${path}`, { method, headers: { Authorization: 'Bearer key-viewer' } })).status]).toEqual([path, 403]);
  }
  // its stations: the Data points form, with a hostile source
  await viewer.page.getByLabel('casdu').fill('1');
  await viewer.page.getByRole('button', { name: 'Show' }).click();
  await viewer.page.getByRole('table', { name: 'Data points found' }).waitFor();
  expect(await viewer.page.getByRole('cell', { name: '<script>window.hit=1</script>' }).count()).toBe(1);
  await viewer.context.close();
  const operator = await open(base);
  await signIn(operator.page, 'key-op');
  await operator.page.getByRole('button', { name: 'Backlog of webhook 0', exact: true }).click();
  await operator.page.getByRole('cell', { name: '<img src=x onerror="window.hit=2">' }).waitFor();
  expect(await operator.page.evaluate(() => [(window as unknown as { hit?: number }).hit, document.querySelectorAll('script').length, document.querySelectorAll('img').length])).toEqual([undefined, 1, 0]);
  await operator.context.close();
});

it('inbound: the Mappings table, and Try a payload shows what a POST would write — and writes nothing; a <script> topic shows as text', async () => {
  const mappings = [
    { name: 'level', topic: 'plant-a/tank', casdu: 1, ioa: 10, type: 36, valuePath: 'level' },
    { name: 'x', topic: '<script>window.hit=3</script>', casdu: 1, ioa: 11, type: 36, valuePath: 'x' },
  ];
  const { base } = await start('inbound', { mappings });
  const { context, page } = await open(base);
  const table = page.getByRole('table', { name: 'Mappings' });
  await table.waitFor();
  expect(await table.getByRole('row').count()).toBe(3);
  expect(await table.getByRole('cell', { name: '<script>window.hit=3</script>' }).count()).toBe(1);
  const before = (await r.client.keys('*')).sort();
  await page.getByLabel('Topic').fill('plant-a/tank');
  await page.getByLabel('Body').fill('{"level": 4.5}');
  await page.getByRole('button', { name: 'Try' }).click();
  await page.getByText('"succeeded"').waitFor();
  const shown = (await page.locator('#tried').textContent()) ?? '';
  expect(shown.startsWith('200\n')).toBe(true);
  expect(JSON.parse(shown.slice(4))).toMatchObject({ topic: 'plant-a/tank', datapoints: [{ casdu: 1, ioa: 10, value: 4.5 }] });
  await page.getByLabel('Body').fill('{"level": "high"}');
  await page.getByRole('button', { name: 'Try' }).click();
  await page.getByText(/^422/).waitFor();
  expect((await r.client.keys('*')).sort()).toEqual(before);
  expect(await page.evaluate(() => (window as unknown as { hit?: number }).hit)).toBeUndefined();
  await page.setViewportSize({ width: 1000, height: 700 });
  mkdirSync(PICTURES, { recursive: true });
  await page.screenshot({ path: join(PICTURES, 'operator-page-inbound.png') });
  await context.close();
});
