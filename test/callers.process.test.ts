import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { Connector, eventually, runCli } from './helpers/cli';
import { makeCerts, type Certs } from './helpers/ha';
import { postJson, request, type Reply } from './helpers/http';
import { freePort, privateRedis } from './helpers/redis';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * CONTRACT 7.2 with the CLI's own processes and a private Redis: named API keys and a client
 * certificate's CN as callers, every endpoint allowed and refused in the check order of 5.1,
 * nothing written by a refused request (read back from Redis), per-caller idempotency keys,
 * refusals counted and logged, and `maxRequestsPerSecond` shared by two replicas of one Id.
 */
const r = privateRedis();
let certs: Certs;
const running: Connector[] = [];
beforeAll(() => {
  certs = makeCerts();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
  await r.client.flushall();
});

const KEYS = 'scada-a=key-scada-a,scada-b=key-scada-b,historian=key-historian,operator=key-operator,stranger=key-stranger,rest-connectors=key-rest-connectors';
const as = (caller: string): Record<string, string> => ({ 'X-Api-Key': `key-${caller}` });
const MAPPINGS = ['plant-a', 'plant-a/line-1', 'plant-b'].map((topic, i) => ({ name: `m${i}`, topic, casdu: 1, ioa: i + 1, type: 36, valuePath: 'v' }));
const CALLERS = {
  'scada-a': { topics: ['plant-a', 'plant-a/*'] },
  'scada-b': { topics: ['plant-a'] },
  historian: { casdu: ['10-19', 30] },
  operator: { operate: true, casdu: ['0-65535'] },
  'cn:rest-connectors': { casdu: [30] }, // the test client certificate (CN rest-connectors)
  'rest-connectors': { operate: true, casdu: ['0-65535'] }, // a key of the same name: never the certificate's grant (CONTRACT 7.1)
};

const start = async (kind: 'inbound' | 'outbound', config: Record<string, unknown>, env: Record<string, string> = {}, id = `c-${kind}`) => {
  const port = await freePort();
  await r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], ...config }));
  const c = new Connector(kind, { Id: id, ConnectionStrings__Datastore: r.redis.url, Authentication__ApiKeys: KEYS, ...env });
  running.push(c);
  await c.waitForLog((l) => l.msg === `${kind} connector listening`);
  return { c, url: `http://127.0.0.1:${port}` };
};

/** A GET over https as a client of the test CA (`redis.test` is the server certificate's name), with a client certificate or none. */
const httpsGet = (port: number, path: string, client?: { cert: string; key: string }) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpsRequest({
      host: '127.0.0.1', port, path, servername: 'redis.test', ca: readFileSync(certs.ca), agent: false,
      ...(client !== undefined ? { cert: readFileSync(client.cert), key: readFileSync(client.key) } : {}),
    }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });

const point = (casdu: number, ioa: number) => JSON.stringify({ casdu, ioa, type: 36, value: casdu + ioa / 10, timestamp: '2026-11-27T00:00:00.000Z', source: 't' });
/** Two points in each of the casdus 5, 10, 15, 19, 20 and 30. */
const seed = async () => {
  for (const casdu of [5, 10, 15, 19, 20, 30]) for (const ioa of [1, 2]) await r.client.set(`process:image:casdu:${casdu}:ioa:${ioa}`, point(casdu, ioa));
};

const post = (url: string, topic: string | undefined, body: unknown, headers: Record<string, string>) =>
  postJson(`${url}/api/datapoints${topic === undefined ? '' : `?topic=${encodeURIComponent(topic)}`}`, body, headers);
const detail = (reply: Reply) => (reply.json() as { detail: string }).detail;
const refusedLines = (c: Connector) => c.logs().filter((l) => l.msg === 'request refused');
/** Every key and stream entry in Redis but the config key: what requests wrote. */
const written = async (id: string) => ({
  keys: (await r.client.keys('*')).filter((k) => k !== `connectors:${id}:config`).sort(),
  entries: await r.client.xlen('process:updates'),
});

describe('inbound', () => {
  it('POST in the check order of 5.1: 401, 403 not listed, missing_topic, 403 topic (before the media type and the body), then the usual; nothing written by a refusal', async () => {
    const { c, url } = await start('inbound', { mappings: MAPPINGS, callers: CALLERS });
    expect((await post(url, 'plant-a', { v: 1 }, {})).status).toBe(401);
    const stranger = await post(url, 'plant-a', { v: 1 }, as('stranger'));
    expect([stranger.status, stranger.headers['content-type'], detail(stranger)]).toEqual([403, 'application/problem+json; charset=utf-8', "caller 'stranger' is not listed in callers"]);
    expect((await post(url, undefined, { v: 1 }, as('scada-a'))).json().code).toBe('missing_topic');
    const other = await post(url, 'plant-b', { v: 1 }, as('scada-a'));
    expect([other.status, detail(other)]).toEqual([403, "caller 'scada-a' may not write topic 'plant-b'"]);
    // the topic is refused before the media type, the body and the topic's existence are looked at
    expect((await request(`${url}/api/datapoints?topic=plant-b`, { method: 'POST', headers: { ...as('scada-a'), 'Content-Type': 'text/plain' }, body: 'x' })).status).toBe(403);
    expect((await post(url, 'plant-b', 'not json', as('scada-a'))).status).toBe(403);
    expect((await post(url, 'nowhere', { v: 1 }, as('scada-a'))).status).toBe(403);
    // a caller without topics writes nothing; a prefix is not a bare name
    expect(detail(await post(url, 'plant-a', { v: 1 }, as('historian')))).toBe("caller 'historian' may not write topic 'plant-a'");
    expect((await post(url, 'plant-a/line-1', { v: 1 }, as('scada-b'))).status).toBe(403);
    expect(await written('c-inbound')).toEqual({ keys: [], entries: 0 });
    // what is granted is written, and then the table goes on as before
    expect((await post(url, 'plant-a', { v: 1 }, as('scada-a'))).status).toBe(200);
    expect((await post(url, 'plant-a/line-1', { v: 2 }, as('scada-a'))).status).toBe(200);
    expect((await post(url, 'plant-a/unknown', { v: 2 }, as('scada-a'))).json().code).toBe('unknown_topic');
    expect((await request(`${url}/api/datapoints?topic=plant-a`, { method: 'POST', headers: { ...as('scada-a'), 'Content-Type': 'text/plain' }, body: 'x' })).status).toBe(415);
    expect(await written('c-inbound')).toEqual({ keys: ['process:image:casdu:1:ioa:1', 'process:image:casdu:1:ioa:2', 'process:updates'], entries: 2 });
    // every refusal counted by caller and reason; the metrics are open to every listed caller, not to others
    expect((await request(`${url}/metrics`, { headers: as('stranger') })).status).toBe(403);
    const metrics = await request(`${url}/metrics`, { headers: as('historian') });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('http_requests_refused_total{caller="stranger",reason="forbidden"} 2');
    // (the /openapi.json refusal below comes after this scrape)
    expect(metrics.text).toContain('http_requests_refused_total{caller="scada-a",reason="forbidden"} 4');
    expect(metrics.text).toContain('http_requests_refused_total{caller="historian",reason="forbidden"} 1');
    expect(metrics.text).toContain('http_requests_refused_total{caller="scada-b",reason="forbidden"} 1');
    expect((await request(`${url}/openapi.json`, { headers: as('scada-b') })).status).toBe(200);
    const unlistedDoc = await request(`${url}/openapi.json`, { headers: as('stranger') });
    expect([unlistedDoc.status, detail(unlistedDoc)]).toEqual([403, "caller 'stranger' is not listed in callers"]);
    // the request log names the caller of a refused request; the refusal line says why
    await eventually(() => (refusedLines(c).length >= 4 ? true : undefined));
    expect(refusedLines(c).every((l) => l.level === 'warn' && typeof l.caller === 'string' && l.reason === 'forbidden')).toBe(true);
    expect(c.logs().filter((l) => l.msg === 'request' && l.status === 403).map((l) => l.caller)).toContain('stranger');
    expect(c.stdout).not.toContain('key-stranger');
  });

  it('a caller refused in a loop is logged at most once a second per reason; each refusal is counted', async () => {
    const { c, url } = await start('inbound', { mappings: MAPPINGS, callers: CALLERS });
    const began = Date.now();
    for (let i = 0; i < 30; i++) expect((await post(url, 'plant-b', { v: 1 }, as('scada-b'))).status).toBe(403);
    const seconds = Math.ceil((Date.now() - began) / 1000);
    await eventually(() => (c.logs().filter((l) => l.msg === 'request').length >= 30 ? true : undefined));
    const lines = refusedLines(c).filter((l) => l.caller === 'scada-b');
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(seconds + 1);
    const metrics = await request(`${url}/metrics`, { headers: as('historian') });
    expect(metrics.text).toContain('http_requests_refused_total{caller="scada-b",reason="forbidden"} 30');
  });

  it('idempotency keys belong to their caller: one key from two callers is two keys', async () => {
    const { url } = await start('inbound', { mappings: MAPPINGS, callers: CALLERS }, {}, 'idem');
    const a = await post(url, 'plant-a', { v: 1 }, { ...as('scada-a'), 'Idempotency-Key': 'k-1' });
    const b = await post(url, 'plant-a', { v: 2 }, { ...as('scada-b'), 'Idempotency-Key': 'k-1' });
    expect([a.status, b.status, b.headers['idempotent-replayed']]).toEqual([200, 200, undefined]);
    const again = await post(url, 'plant-a', { v: 1 }, { ...as('scada-a'), 'Idempotency-Key': 'k-1' });
    expect([again.status, again.headers['idempotent-replayed']]).toEqual([200, 'true']);
    expect((await r.client.keys('connectors:idem:idempotency:*')).sort()).toEqual(['connectors:idem:idempotency:7:scada-a:k-1', 'connectors:idem:idempotency:7:scada-b:k-1']);
    expect(await r.client.xlen('process:updates')).toBe(2);
  });

  it('inactive: a caller not listed is still 403 and one over its rate 429 (both right after authentication), a listed one 503', async () => {
    const callers = { ...CALLERS, 'scada-b': { topics: ['plant-a'], maxRequestsPerSecond: 1 } };
    const { url } = await start('inbound', { mappings: MAPPINGS, callers, isActive: false });
    expect((await post(url, 'plant-a', { v: 1 }, as('stranger'))).status).toBe(403);
    expect((await post(url, 'plant-a', { v: 1 }, as('scada-a'))).status).toBe(503);
    // five at once at one a second: at least two share a window, and the second of them is 429
    const limited = await Promise.all(Array.from({ length: 5 }, () => post(url, 'plant-a', { v: 1 }, as('scada-b'))));
    expect(limited.map((x) => x.status).filter((st) => st !== 503 && st !== 429)).toEqual([]);
    expect(limited.filter((x) => x.status === 429).length).toBeGreaterThanOrEqual(1);
  });

  it('callers without authentication: the connector does not start (exit 2), config validate says why', async () => {
    const port = await freePort();
    const config = { hostUrls: [`http://127.0.0.1:${port}`], callers: { a: { topics: ['t'] } } };
    await r.client.set('connectors:noauth:config', JSON.stringify(config));
    const c = new Connector('inbound', { Id: 'noauth', ConnectionStrings__Datastore: r.redis.url });
    running.push(c);
    expect(await c.exited).toBe(2);
    expect(c.stderr + c.stdout).toContain('callers: set, but no authentication is configured');
    const dir = mkdtempSync(join(tmpdir(), 'callers-'));
    writeFileSync(join(dir, 'c.json'), JSON.stringify(config));
    const v = await runCli(['config', 'validate', join(dir, 'c.json')]);
    expect([v.code, v.stderr]).toEqual([2, expect.stringContaining('callers: set, but no authentication is configured')]);
    expect((await runCli(['config', 'validate', join(dir, 'c.json')], { Authentication__ApiKeys: 'a=k' })).code).toBe(0);
    // another parameter that does not parse: said, not taken for "no authentication"
    const bad = await runCli(['config', 'validate', join(dir, 'c.json')], { Authentication__ApiKeys: 'a=k', Http__MaxBodyBytes: 'lots' });
    expect([bad.code, bad.stderr]).toEqual([2, "rest-connector: callers cannot be checked: Http:MaxBodyBytes: expected a positive integer, got 'lots'\n"]);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('a change to callers without authentication', () => {
  it('is logged as invalid and ignored: the connector keeps running on the configuration it has', async () => {
    const port = await freePort();
    const config = { hostUrls: [`http://127.0.0.1:${port}`], mappings: MAPPINGS };
    await r.client.set('connectors:change:config', JSON.stringify(config));
    const c = new Connector('inbound', { Id: 'change', ConnectionStrings__Datastore: r.redis.url, Datastore__ConfigPollIntervalMilliseconds: '200' });
    running.push(c);
    await c.waitForLog((l) => l.msg === 'inbound connector listening');
    await r.client.set('connectors:change:config', JSON.stringify({ ...config, callers: { a: { topics: ['plant-a'] } } }));
    const line = await c.waitForLog((l) => l.msg === 'configuration change is invalid; keeping the current configuration');
    expect(line.errors).toEqual([expect.stringContaining('callers: set, but no authentication is configured')]);
    expect(c.proc.exitCode).toBeNull();
    // still the old configuration: no callers, no authentication, every topic open
    expect((await post(`http://127.0.0.1:${port}`, 'plant-b', { v: 1 }, {})).status).toBe(200);
  });
});

describe('outbound', () => {
  const casdus = (reply: Reply) => (reply.json() as { datapoints: Array<{ casdu: number; ioa: number }> }).datapoints.map((p) => `${p.casdu}/${p.ioa}`);

  it('GET /api/datapoints: a full read streams only the granted casdus; an explicit casdu outside them, or no casdu granted, is 403', async () => {
    const { url } = await start('outbound', { callers: CALLERS });
    await seed();
    const get = (q: string, caller: string) => request(`${url}/api/datapoints${q}`, { headers: as(caller) });
    expect(casdus(await get('', 'historian'))).toEqual(['10/1', '10/2', '15/1', '15/2', '19/1', '19/2', '30/1', '30/2']);
    expect(casdus(await get('?ioa=2', 'historian'))).toEqual(['10/2', '15/2', '19/2', '30/2']);
    expect(casdus(await get('?casdu=15&ioa=1', 'historian'))).toEqual(['15/1']);
    expect(casdus(await get('?casdu=30', 'historian'))).toEqual(['30/1', '30/2']);
    const outside = await get('?casdu=20', 'historian');
    expect([outside.status, detail(outside)]).toEqual([403, "caller 'historian' may not read casdu 20"]);
    expect((await get('?casdu=5&ioa=1', 'historian')).status).toBe(403);
    // a bad query is 400 before the casdu is judged; a caller without casdu is refused first
    expect((await get('?casdu=x', 'historian')).json().code).toBe('invalid_casdu');
    const none = await get('?casdu=x', 'scada-a');
    expect([none.status, detail(none)]).toEqual([403, "caller 'scada-a' may not read data points"]);
    expect(casdus(await get('', 'operator'))).toHaveLength(12);
    expect((await get('', 'stranger')).status).toBe(403);
  });

  it('/api/webhooks and interrogation need operate', async () => {
    const { url } = await start('outbound', { callers: CALLERS, webhooks: [{ url: 'http://127.0.0.1:9/never' }] }, { Webhooks__AllowedNetworks: '127.0.0.0/8' });
    const webhooks = (caller: string) => request(`${url}/api/webhooks`, { headers: as(caller) });
    const interrogate = (caller: string, index: number) => request(`${url}/api/webhooks/${index}/interrogation`, { method: 'POST', headers: as(caller) });
    expect((await webhooks('operator')).status).toBe(200);
    const refused = await webhooks('historian');
    expect([refused.status, detail(refused)]).toEqual([403, "caller 'historian' may not operate the webhooks"]);
    expect((await interrogate('historian', 0)).status).toBe(403);
    expect((await interrogate('historian', 7)).status).toBe(403);
    expect((await interrogate('operator', 7)).status).toBe(404);
    expect((await interrogate('stranger', 0)).status).toBe(403);
    expect(detail(await webhooks('stranger'))).toBe("caller 'stranger' is not listed in callers");
    // the refused requests queued nothing: the operator's is the first (202, not 409 "already queued")
    expect((await interrogate('operator', 0)).status).toBe(202);
  });

  it("a client certificate is the caller cn:{CN}, never the key whose name is its CN", async () => {
    const [http, https] = [await freePort(), await freePort()];
    await r.client.set('connectors:cn:config', JSON.stringify({ hostUrls: [`http://127.0.0.1:${http}`, `https://127.0.0.1:${https}`], callers: CALLERS }));
    await seed();
    const c = new Connector('outbound', {
      Id: 'cn', ConnectionStrings__Datastore: r.redis.url, Http__TlsCertFile: certs.serverCert, Http__TlsKeyFile: certs.serverKey, Http__ClientCaFile: certs.ca, Authentication__ApiKeys: KEYS,
    });
    running.push(c);
    await c.waitForLog((l) => l.msg === 'outbound connector listening');
    const get = (path: string, withCert: boolean) => httpsGet(https, path, withCert ? { cert: certs.clientCert, key: certs.clientKey } : undefined);
    const mine = await get('/api/datapoints', true);
    expect(mine.status).toBe(200);
    expect((JSON.parse(mine.body) as { datapoints: Array<{ casdu: number }> }).datapoints.map((p) => p.casdu)).toEqual([30, 30]);
    expect((await get('/api/datapoints?casdu=10', true)).status).toBe(403);
    expect((await get('/api/webhooks', true)).status).toBe(403);
    // no certificate, no key: API keys are configured, so nobody gets in unnamed
    const anonymous = await get('/api/datapoints', false);
    expect(anonymous.status).toBe(401);
    expect((await request(`http://127.0.0.1:${http}/metrics`)).status).toBe(401);
    expect((await get('/health/live', false)).status).toBe(200);
    await eventually(() => (c.logs().some((l) => l.msg === 'request' && l.caller === 'cn:rest-connectors' && l.status === 403) ? true : undefined));
    // the key named like the CN has its own grant
    expect((await request(`http://127.0.0.1:${http}/api/webhooks`, { headers: { 'X-Api-Key': 'key-rest-connectors' } })).status).toBe(200);
    const refused = (await request(`http://127.0.0.1:${http}/metrics`, { headers: { 'X-Api-Key': 'key-rest-connectors' } })).text;
    expect(refused).toMatch(/^http_requests_refused_total\{caller="cn:rest-connectors",reason="forbidden"\} [1-9]/m);
  });
});

describe('maxRequestsPerSecond', () => {
  it('two replicas of one Id share the limit: what both let through stays within N a window (±1 window); 429 has Retry-After and writes nothing', async () => {
    const N = 5;
    const config = { mappings: MAPPINGS, callers: { ...CALLERS, 'scada-a': { topics: ['plant-a'], maxRequestsPerSecond: N } } };
    // one config key: both replicas listen on a port of their own (port 0), found in their log
    await r.client.set('connectors:rate:config', JSON.stringify({ ...config, hostUrls: ['http://127.0.0.1:0'] }));
    const replica = async () => {
      const c = new Connector('inbound', { Id: 'rate', ConnectionStrings__Datastore: r.redis.url, Authentication__ApiKeys: KEYS });
      running.push(c);
      const line = await c.waitForLog((l) => l.msg === 'inbound connector listening');
      return Number(/:(\d+)$/.exec((line.addresses as string[])[0]!)![1]);
    };
    const [p1, p2] = [await replica(), await replica()];
    const began = Math.floor(Date.now() / 1000);
    const replies: Reply[] = [];
    // bursts of 12 at once, 6 to each replica, for 3 seconds: a burst is more than two windows let
    // through (10), however slow the machine, unless it straddles three seconds
    const until = Date.now() + 3000;
    let i = 0;
    while (Date.now() < until) {
      const burst = await Promise.all(Array.from({ length: 12 }, (_, k) => post(`http://127.0.0.1:${k % 2 === 0 ? p1 : p2}`, 'plant-a', { v: i++ }, as('scada-a'))));
      replies.push(...burst);
      await new Promise((res) => setTimeout(res, 100));
    }
    const ended = Math.floor(Date.now() / 1000);
    const windows = ended - began + 1;
    const ok = replies.filter((x) => x.status === 200).length;
    const limited = replies.filter((x) => x.status === 429);
    expect(ok + limited.length).toBe(replies.length);
    expect(ok).toBeGreaterThanOrEqual(N);
    expect(ok).toBeLessThanOrEqual(N * (windows + 1));
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.every((x) => Number(x.headers['retry-after']) >= 1 && detail(x) === "caller 'scada-a' may send at most 5 requests a second")).toBe(true);
    // only what was let through was written
    expect(await r.client.xlen('process:updates')).toBe(ok);
    // another caller is not limited by scada-a's count
    expect((await post(`http://127.0.0.1:${p1}`, 'plant-a', { v: 1 }, as('scada-b'))).status).toBe(200);
  });

  it('when Redis cannot be reached for the count, the request goes on as the endpoint would: 503 for a write, 200 for the metrics', async () => {
    const { c, url } = await start('inbound', { mappings: MAPPINGS, callers: { ...CALLERS, 'scada-a': { topics: ['plant-a'], maxRequestsPerSecond: 1000 } } }, {}, 'down');
    await r.redis.stop();
    try {
      await c.waitForLog((l) => l.level === 'warn' && /data store/i.test(String(l.msg)));
      const write = await eventually(async () => {
        const x = await post(url, 'plant-a', { v: 1 }, as('scada-a'));
        return x.status === 503 ? x : undefined;
      });
      expect(detail(write)).toBe('data store is not connected');
      expect((await request(`${url}/metrics`, { headers: as('scada-a') })).status).toBe(200);
    } finally {
      await r.redis.start();
    }
  });
});

describe("the README's worked example (Callers: each caller only what it needs)", () => {
  it('a SCADA gateway, a historian with a client certificate and an operator get what the README says', async () => {
    const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Callers: each caller only what it needs'));
    const example = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as { callers: Record<string, unknown> };
    expect(Object.keys(example.callers)).toEqual(['scada-a', 'cn:historian', 'operator']);
    // the README's keys, and a client certificate whose CN is "historian"
    const keys = /Authentication__ApiKeys=(\S+)/.exec(section)![1]!;
    writeFileSync(join(certs.dir, 'historian.ext'), 'extendedKeyUsage=clientAuth\n');
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: certs.dir, stdio: 'ignore' });
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'historian.key', '-out', 'historian.csr', '-subj', '/CN=historian');
    ssl('x509', '-req', '-in', 'historian.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'historian.crt', '-days', '2', '-extfile', 'historian.ext');
    const historian = { cert: join(certs.dir, 'historian.crt'), key: join(certs.dir, 'historian.key') };
    await seed();
    const inPort = await freePort();
    await r.client.set('connectors:ex-in:config', JSON.stringify({
      hostUrls: [`http://127.0.0.1:${inPort}`], callers: example.callers,
      mappings: ['plant-a/line-1', 'plant-b'].map((topic, i) => ({ name: `m${i}`, topic, casdu: 10, ioa: 100 + i, type: 36, valuePath: 'v' })),
    }));
    const [outHttp, outHttps] = [await freePort(), await freePort()];
    await r.client.set('connectors:ex-out:config', JSON.stringify({
      hostUrls: [`http://127.0.0.1:${outHttp}`, `https://127.0.0.1:${outHttps}`], callers: example.callers, webhooks: [{ url: 'http://127.0.0.1:9/ingest' }],
    }));
    const env = { ConnectionStrings__Datastore: r.redis.url, Authentication__ApiKeys: keys };
    const inbound = new Connector('inbound', { Id: 'ex-in', ...env });
    const outbound = new Connector('outbound', { Id: 'ex-out', ...env, Http__TlsCertFile: certs.serverCert, Http__TlsKeyFile: certs.serverKey, Http__ClientCaFile: certs.ca });
    running.push(inbound, outbound);
    await inbound.waitForLog((l) => l.msg === 'inbound connector listening');
    await outbound.waitForLog((l) => l.msg === 'outbound connector listening');
    const scada = { 'X-Api-Key': 'k-scada' };
    const inUrl = `http://127.0.0.1:${inPort}`;
    expect((await post(inUrl, 'plant-a/line-1', { v: 1 }, scada)).status).toBe(200);
    expect(detail(await post(inUrl, 'plant-b', { v: 1 }, scada))).toBe("caller 'scada-a' may not write topic 'plant-b'");
    const all = await httpsGet(outHttps, '/api/datapoints', historian);
    expect(all.status).toBe(200);
    expect([...new Set((JSON.parse(all.body) as { datapoints: Array<{ casdu: number }> }).datapoints.map((p) => p.casdu))]).toEqual([10, 15, 19, 30]);
    const five = await httpsGet(outHttps, '/api/datapoints?casdu=5', historian);
    expect([five.status, JSON.parse(five.body).detail]).toEqual([403, "caller 'cn:historian' may not read casdu 5"]);
    const hooks = await httpsGet(outHttps, '/api/webhooks', historian);
    expect([hooks.status, JSON.parse(hooks.body).detail]).toEqual([403, "caller 'cn:historian' may not operate the webhooks"]);
    expect((await request(`http://127.0.0.1:${outHttp}/api/webhooks`, { headers: { 'X-Api-Key': 'k-op' } })).status).toBe(200);
    expect((await request(`http://127.0.0.1:${outHttp}/api/webhooks/0/interrogation`, { method: 'POST', headers: { 'X-Api-Key': 'k-op' } })).status).toBe(202);
  });
});
