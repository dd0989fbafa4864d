import { HELP } from '../src/cli/help';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { Connector, eventually, runCli } from './helpers/cli';
import { request } from './helpers/http';
import { freePort, TestRedis } from './helpers/redis';

const pkg = require('../package.json') as { version: string };

let redis: TestRedis;
let client: Redis;
const dir = mkdtempSync(join(tmpdir(), 'rc-cli-'));
const file = (name: string, content: unknown) => {
  const p = join(dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
};

beforeAll(async () => {
  redis = await TestRedis.start();
  client = redis.client();
});
afterAll(async () => {
  client.disconnect();
  await redis.destroy();
});

const envFor = (id: string, extra: Record<string, string> = {}) => ({
  Id: id,
  ConnectionStrings__Datastore: redis.url,
  Datastore__ConfigPollIntervalMilliseconds: '100',
  Datastore__ConnectionRetrySeconds: '0.2',
  ...extra,
});

/** Stores a config that listens on a free port, starts the connector, waits until it listens. */
const launch = async (kind: 'outbound' | 'inbound', id: string, config: object = {}, extra: Record<string, string> = {}) => {
  const port = await freePort();
  await client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], ...config }));
  const c = new Connector(kind, envFor(id, extra), dir);
  await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
  return { c, base: `http://127.0.0.1:${port}`, port };
};

describe('CLI basics', () => {
  it('--version prints the package version; --help, every command and every sub-command --help, and help COMMAND exit 0', async () => {
    const v = await runCli(['--version']);
    expect([v.code, v.stdout.trim()]).toEqual([0, pkg.version]);
    // every command the main help lists, and each group of sub-commands
    const listed = [...new Set([...HELP.main!.matchAll(/^ {2}rest-connector ([a-z]+(?: [a-z]+)?)/gm)].map((m) => m[1]!.split(' ').filter((w) => /^[a-z]+$/.test(w)).join(' ')))];
    expect(listed).toEqual(expect.arrayContaining(['outbound', 'inbound', 'config validate', 'config get', 'config set', 'mappings test', 'deadletter list', 'deadletter replay', 'deadletter purge', 'webhooks resend', 'webhooks render', 'healthcheck', 'help']));
    const commands = [...listed, 'config', 'mappings', 'deadletter', 'webhooks'];
    for (const args of [['--help'], ...commands.map((c) => [...c.split(' '), '--help']), ['help'], ['help', 'webhooks', 'render'], ['help', 'config']]) {
      const r = await runCli(args);
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, '']);
      expect([args.join(' '), r.stdout]).toEqual([args.join(' '), expect.stringMatching(/Usage/)]);
    }
    expect((await runCli(['webhooks', '--help'])).stdout).toContain('rest-connector webhooks render FILE --webhook N BATCH.json');
  });

  it('exits 2 on a usage error', async () => {
    for (const args of [[], ['frobnicate'], ['outbound', 'extra'], ['config', 'nope'], ['config', 'get'], ['mappings', 'test', 'x.json'], ['config'], ['webhooks'], ['help', 'nope']]) {
      const r = await runCli(args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2]);
    }
  });
});

describe('startup errors: exit 2 with one line on stderr', () => {
  it.each(['outbound', 'inbound'])('%s without Id names Id', async (kind) => {
    const r = await runCli([kind], { ConnectionStrings__Datastore: redis.url });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\bId\b/);
  });

  it.each([
    ['Datastore__StreamPollIntervalMilliseconds', 'abc'],
    ['Datastore__StreamPollIntervalMilliseconds', '0'],
    ['Datastore__StartFromLatest', 'perhaps'],
    ['Webhooks__MaxInFlight', '-2'],
  ])('%s=%s names the parameter and the value', async (name, value) => {
    const r = await runCli(['outbound'], { ...envFor('x'), [name]: value });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(name.replace('__', ':'));
    expect(r.stderr).toContain(`'${value}'`);
  });

  it('CONTRACT 1: a misspelt parameter names itself and the nearest one, for the connectors and the operator commands alike; the other connector\'s is accepted', async () => {
    // the names below are misspelt on purpose: the exit 2 and its message are what they cause
    for (const kind of ['outbound', 'inbound']) {
      const r = await runCli([kind], { ...envFor('x'), Webhooks__CircuitBreakerThreshold: '2' });
      expect([kind, r.code, r.stderr.trim()]).toEqual([kind, 2, 'rest-connector: Webhooks__CircuitBreakerThreshold is not a startup parameter: did you mean Webhooks:CircuitFailureThreshold?']);
    }
    const ops = [['config', 'validate', file('spelt.json', {})], ['deadletter', 'list', '--id', 'x'], ['config', 'get', '--id', 'x']];
    for (const args of ops) {
      const r = await runCli(args, { ConnectionStrings__Datastore: redis.url, Datastore__ConectionRetrySeconds: '1' });
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 2, expect.stringContaining('Datastore__ConectionRetrySeconds is not a startup parameter: did you mean Datastore:ConnectionRetrySeconds?')]);
    }
    // Http:MaxBatchItems is the inbound connector's: an outbound one given it starts
    await client.set('connectors:both:config', JSON.stringify({ hostUrls: ['http://127.0.0.1:0'] }));
    const c = new Connector('outbound', { ...envFor('both'), Http__MaxBatchItems: '5' });
    try {
      await c.waitForLog((l) => l.msg === 'outbound connector listening');
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });

  it('a connection string that does not parse', async () => {
    const r = await runCli(['inbound'], { ...envFor('x'), ConnectionStrings__Datastore: 'h:1,bogus=1' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/ConnectionStrings:Datastore: unsupported option 'bogus'/);
  });

  it('an invalid stored configuration names the offending field', async () => {
    await client.set('connectors:bad:config', JSON.stringify({ mappings: [{ name: 'a', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'a]' }] }));
    const r = await runCli(['inbound'], envFor('bad'));
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('mappings[0].valuePath: unexpected "]" at 1');
  });

  it('appsettings.json is read from the working directory (and a broken one is an error)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'rc-appsettings-'));
    writeFileSync(join(cwd, 'appsettings.json'), JSON.stringify({ Datastore: { StreamPollIntervalMilliseconds: 'slow' } }));
    const r = await runCli(['outbound'], envFor('x'), { cwd });
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("Datastore:StreamPollIntervalMilliseconds: expected a positive integer, got 'slow'")]);
    writeFileSync(join(cwd, 'appsettings.json'), '{');
    const broken = await runCli(['outbound'], envFor('x'), { cwd });
    expect([broken.code, broken.stderr]).toEqual([2, expect.stringContaining('appsettings.json: not valid JSON')]);
  });
});

describe('running connectors', () => {
  it.each(['outbound', 'inbound'] as const)('%s answers health, readiness, metrics, openapi and 404, and exits 0 on SIGTERM', async (kind) => {
    const { c, base } = await launch(kind, `run-${kind}`);
    try {
      const live = await request(`${base}/health/live`);
      expect([live.status, live.json()]).toEqual([200, { status: 'ok' }]);
      expect(live.headers['x-powered-by']).toBeUndefined();
      expect((await request(`${base}/health/ready`)).json()).toEqual({ status: 'ready' });
      const metrics = await request(`${base}/metrics`);
      expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
      expect(metrics.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(metrics.text).toMatch(/^datastore_connected 1$/m);
      expect(metrics.text).toMatch(/^http_requests_total\{route="\/health\/live",method="GET",status="200"\} 1$/m);
      const doc = (await request(`${base}/openapi.json`)).json();
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready', '/metrics', '/api/datapoints']));
      const missing = await request(`${base}/no/such/thing`);
      expect([missing.status, missing.json().code]).toEqual([404, 'not_found']);
      const line = c.logs().find((l) => l.msg === 'request' && l.route === '/health/live');
      expect(line).toMatchObject({ method: 'GET', status: 200, durationMs: expect.any(Number) });
    } finally {
      expect(await c.stop('SIGTERM')).toBe(0);
    }
  });

  it('exits 0 on SIGINT too, and a second signal during the stop does not change that', async () => {
    const { c } = await launch('inbound', 'sigint');
    expect(await c.stop('SIGINT')).toBe(0);
    const { c: twice } = await launch('outbound', 'sigterm-twice');
    twice.proc.kill('SIGTERM');
    twice.proc.kill('SIGTERM');
    expect(await twice.exited).toBe(0);
  });

  it('exits 0 on a valid configuration change; ignores rewrites of the same settings, invalid changes and deletion', async () => {
    const config = { displayName: 'A', mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 1, type: 36, valuePath: 'v' }] };
    const { c, port } = await launch('inbound', 'watch', config);
    const key = 'connectors:watch:config';
    // the same settings, keys reordered, an unknown field added: not a change
    await client.set(key, JSON.stringify({ unknownFromNewerBackend: true, mappings: config.mappings, hostUrls: [`http://127.0.0.1:${port}`], displayName: 'A' }));
    await client.set(key, JSON.stringify({ ...config, hostUrls: [`http://127.0.0.1:${port}`], isActive: 'no' }));
    await c.waitForLog((l) => l.level === 'error' && Array.isArray(l.errors) && (l.errors as string[]).includes('isActive: must be a boolean, got "no"'));
    await client.del(key);
    await c.waitForLog((l) => l.level === 'warn' && l.msg === 'configuration key deleted; keeping the current configuration');
    expect(c.proc.exitCode).toBeNull();
    await client.set(key, JSON.stringify({ ...config, hostUrls: [`http://127.0.0.1:${port}`], displayName: 'B' }));
    expect(await c.exited).toBe(0);
    expect(c.logs().some((l) => String(l.msg).startsWith('configuration changed'))).toBe(true);
  });

  it('readiness turns 503 while Redis is stopped and back to 200 when it returns; GET answers 503 meanwhile', async () => {
    const { c, base } = await launch('outbound', 'ready');
    try {
      await redis.stop();
      const down = await eventually(async () => {
        const r = await request(`${base}/health/ready`);
        return r.status === 503 ? r : undefined;
      });
      expect(down.json()).toEqual({ status: 'not ready', reason: 'data store is not connected' });
      expect((await request(`${base}/health/live`)).status).toBe(200);
      expect((await request(`${base}/api/datapoints`)).status).toBe(503);
      // every failed reconnection attempt is logged as a warning
      await c.waitForLog((l) => l.level === 'warn' && l.msg === 'data store connection failed');
      await redis.start();
      await eventually(async () => ((await request(`${base}/health/ready`)).status === 200 ? true : undefined));
    } finally {
      await redis.start();
      expect(await c.stop()).toBe(0);
    }
  });

  it('connects when Redis appears after the start, logging a warning per failed attempt', async () => {
    const late = await freePort();
    const c = new Connector('inbound', { Id: 'late', ConnectionStrings__Datastore: `127.0.0.1:${late}`, Datastore__ConnectionRetrySeconds: '0.1' }, dir);
    try {
      await eventually(() => (c.logs().filter((l) => l.msg === 'data store connection failed').length >= 2 ? true : undefined));
      expect(c.logs().find((l) => l.msg === 'data store connection failed')).toMatchObject({ level: 'warn', retryInSeconds: 0.1 });
      // No config key in that fresh Redis: defaults would listen on 8080; stop it before it gets there.
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });

  it('requires an API key on data routes, /metrics and /openapi.json when keys are set; health stays open; inactive is 503 after auth', async () => {
    const { c, base } = await launch('outbound', 'auth', { isActive: false }, { Authentication__ApiKeys: 'alpha,beta' });
    try {
      for (const path of ['/api/datapoints', '/metrics', '/openapi.json']) {
        const r = await request(`${base}${path}`);
        expect([path, r.status, r.headers['content-type']]).toEqual([path, 401, expect.stringMatching(/^application\/problem\+json/)]);
        expect(r.json()).toMatchObject({ type: 'about:blank', title: 'Unauthorized', status: 401 });
        expect((await request(`${base}${path}`, { headers: { Authorization: 'Bearer gamma' } })).status).toBe(401);
      }
      expect((await request(`${base}/metrics`, { headers: { Authorization: 'Bearer beta' } })).status).toBe(200);
      expect((await request(`${base}/openapi.json`, { headers: { 'X-Api-Key': 'alpha' } })).json().security).toBeDefined();
      const inactive = await request(`${base}/api/datapoints`, { headers: { 'X-Api-Key': 'alpha' } });
      expect([inactive.status, inactive.json()]).toEqual([503, { type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'connector is inactive' }]);
      expect((await request(`${base}/health/live`)).status).toBe(200);
      expect((await request(`${base}/health/ready`)).status).toBe(503);
    } finally {
      await c.stop();
    }
  });

  it('redacts header values, API keys and webhook secrets from every log line', async () => {
    const { c, base } = await launch(
      'outbound',
      'redact',
      { logLevel: 'Debug', webhooks: [{ url: 'http://127.0.0.1:9/hook?token=QUERY-TOKEN-5', headers: { Authorization: 'Bearer HEADER-SECRET-1' }, secret: 'WEBHOOK-SECRET-2' }] },
      { Authentication__ApiKeys: 'API-KEY-SECRET-3' },
    );
    try {
      await request(`${base}/api/datapoints`, { headers: { Authorization: 'Bearer API-KEY-SECRET-3' } });
      await request(`${base}/api/datapoints`, { headers: { 'X-Api-Key': 'WRONG-KEY-4' } });
    } finally {
      await c.stop();
    }
    const loaded = c.logs().find((l) => l.msg === 'configuration loaded') as { webhooks: Array<Record<string, unknown>> };
    expect(loaded.webhooks[0]).toEqual({ url: 'http://127.0.0.1:9/hook', headerNames: ['Authorization'], secrets: 1 });
    for (const secret of ['HEADER-SECRET-1', 'WEBHOOK-SECRET-2', 'API-KEY-SECRET-3', 'WRONG-KEY-4', 'QUERY-TOKEN-5']) {
      expect(c.stdout + c.stderr).not.toContain(secret);
    }
  });

  it('listens on every hostUrls entry', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    await client.set('connectors:multi:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${p1}`, `http://localhost:${p2}`] }));
    const c = new Connector('inbound', envFor('multi'), dir);
    try {
      await c.waitForLog((l) => String(l.msg).endsWith('connector listening'));
      expect((await request(`http://127.0.0.1:${p1}/health/live`)).status).toBe(200);
      expect((await request(`http://localhost:${p2}/health/live`)).status).toBe(200);
    } finally {
      await c.stop();
    }
  });

  it('exits 2 when a host URL cannot be listened on', async () => {
    const { c, port } = await launch('inbound', 'busy-1');
    try {
      await client.set('connectors:busy-2:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`] }));
      const r = await runCli(['inbound'], envFor('busy-2'));
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/cannot listen on http:\/\/127\.0\.0\.1:\d+: .*EADDRINUSE/);
    } finally {
      await c.stop();
    }
  });
});

describe('operator commands', () => {
  const valid = { displayName: 'x', mappings: [{ name: 'temp', topic: 't', casdu: 1, ioa: 2, type: 36, valuePath: 'a.b', timestampPath: 'ts' }] };

  it('config validate: 0 when valid, 2 with every problem by field', async () => {
    const ok = await runCli(['config', 'validate', file('ok.json', valid)]);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringContaining('valid')]);
    const bad = await runCli(['config', 'validate', file('bad.json', { isActive: 3, webhooks: [{ url: 'x' }] })]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n').sort()).toEqual(['isActive: must be a boolean, got 3', 'webhooks[0].url: must be an http(s) URL, got a string that is not a URL']);
    expect((await runCli(['config', 'validate', join(dir, 'missing.json')])).code).toBe(2);
  });

  it('config set validates and writes; config get prints it, or exits 1 when absent', async () => {
    const env = { ConnectionStrings__Datastore: redis.url };
    expect((await runCli(['config', 'get', '--id', 'ops'], env)).code).toBe(1);
    const bad = await runCli(['config', 'set', '--id', 'ops', file('bad2.json', { logLevel: 'Loud' })], env);
    expect(bad.code).toBe(2);
    expect(await client.exists('connectors:ops:config')).toBe(0);
    const set = await runCli(['config', 'set', '--id', 'ops', file('ok2.json', { ...valid, newerField: 1 })], env);
    expect(set.code).toBe(0);
    const got = await runCli(['config', 'get', '--id', 'ops'], env);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ ...valid, newerField: 1 });
  });

  it('config get exits 1 when the data store cannot be reached', async () => {
    const r = await runCli(['config', 'get', '--id', 'ops'], { ConnectionStrings__Datastore: `127.0.0.1:${await freePort()}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/data store/);
  });

  it('mappings test prints the data points, or the 422 body with exit 1, writing nothing', async () => {
    const cfg = file('map.json', valid);
    const ok = await runCli(['mappings', 'test', cfg, '--topic', 't', file('p1.json', { a: { b: '7.5' }, ts: 1763720100 })], { Id: 'in-x' });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({
      topic: 't', succeeded: ['temp'],
      datapoints: [{ casdu: 1, ioa: 2, type: 36, value: 7.5, timestamp: '2025-11-21T10:15:00.000Z', source: 'in-x' }],
    });
    const failed = await runCli(['mappings', 'test', cfg, '--topic', 't', file('p2.json', { a: {} })]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toEqual({
      topic: 't', message: '1 of 1 mappings failed',
      failed: [{ signalId: 'temp', error: "value not found at path 'a.b'" }], succeeded: [],
    });
    expect((await runCli(['mappings', 'test', cfg, '--topic', 'zz', file('p3.json', {})])).code).toBe(2);
    expect((await runCli(['mappings', 'test', cfg, '--topic', 't', file('p4.json', '[1]')])).code).toBe(2);
  });

  it('CONTRACT 5.5: config validate names a bad selector, value map or scale; mappings test takes an array payload', async () => {
    const devices = { mappings: [
      { name: 'temp', topic: 'e', casdu: 5, ioa: 1, type: 36, valuePath: 'readings[name=temp].value', scale: { factor: 0.1 } },
      { name: 'run', topic: 'e', casdu: 5, ioa: 2, type: 1, valuePath: 'state', valueType: 'bool', valueMap: { RUN: true, STOP: false } },
    ] };
    expect((await runCli(['config', 'validate', file('dev.json', devices)])).code).toBe(0);
    const bad = await runCli(['config', 'validate', file('dev-bad.json', { mappings: [
      { ...devices.mappings[0], valuePath: 'readings[name=temp.value' },
      { ...devices.mappings[1], valueMap: { RUN: null }, scale: { factor: 2 } },
    ] })]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('mappings[0].valuePath: unexpected end of path at 24');
    expect(bad.stderr).toContain('mappings[1].valueMap: must map to numbers, booleans or strings; "RUN" maps to null');
    const cfg = file('dev-ok.json', devices);
    const reading = (t: number, state: string) => ({ state, readings: [{ name: 'hum', value: 1 }, { name: 'temp', value: t }] });
    const ok = await runCli(['mappings', 'test', cfg, '--topic', 'e', file('arr.json', [reading(215, 'RUN'), reading(220, 'STOP')])], { Id: 'in-x' });
    expect(ok.code).toBe(0);
    const printed = JSON.parse(ok.stdout) as { topic: string; items: number; succeeded: string[]; datapoints: Array<{ ioa: number; value: unknown }> };
    expect([printed.topic, printed.items, printed.succeeded]).toEqual(['e', 2, ['temp', 'run']]);
    expect(printed.datapoints.map((p) => [p.ioa, p.value])).toEqual([[1, 21.5], [2, true], [1, 22], [2, false]]);
    const failed = await runCli(['mappings', 'test', cfg, '--topic', 'e', file('arr-bad.json', [reading(215, 'RUN'), reading(220, 'FAULT')])]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toEqual({
      topic: 'e', message: '1 of 4 mappings failed', items: 2,
      failed: [{ signalId: 'run', error: `value "FAULT" at path 'state' is not in the value map`, item: 1 }], succeeded: [{ signalId: 'temp' }],
    });
    const empty = await runCli(['mappings', 'test', cfg, '--topic', 'e', file('arr-empty.json', [])]);
    expect([empty.code, empty.stderr]).toEqual([2, expect.stringContaining('the payload must be a JSON object or an array of 1 to 1000 objects: the array is empty')]);
  });
});
