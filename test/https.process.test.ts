import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { Connector, eventually, runCli } from './helpers/cli';
import { makeCerts, type Certs } from './helpers/ha';
import { freePort, privateRedis } from './helpers/redis';

/**
 * Issue 24 (CONTRACT 7.1): https listeners with certificates made here by openssl — http and https
 * on one connector, client certificates optional and required, a wrong CA and an expired client
 * certificate, named API keys in the request log, the certificate files replaced while a
 * keep-alive connection stays open, a broken replacement, and start-up errors.
 */
const r = privateRedis();
let certs: Certs;
let extra: { server2Cert: string; server2Key: string; expiredCert: string; expiredKey: string; foreignCert: string; foreignKey: string };
const running: Connector[] = [];
const ssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

beforeAll(async () => {
  certs = makeCerts();
  const d = certs.dir;
  // a second server certificate for the same name (another serial), an expired client certificate
  // (valid for no time at all), and a client certificate of a CA the connector does not trust
  writeFileSync(join(d, 'server2.ext'), 'subjectAltName=DNS:redis.test\nextendedKeyUsage=serverAuth\n');
  ssl(d, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server2.key', '-out', 'server2.csr', '-subj', '/CN=redis.test');
  ssl(d, 'x509', '-req', '-in', 'server2.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server2.crt', '-days', '2', '-extfile', 'server2.ext');
  writeFileSync(join(d, 'cl.ext'), 'extendedKeyUsage=clientAuth\n');
  ssl(d, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'expired.key', '-out', 'expired.csr', '-subj', '/CN=expired-client');
  ssl(d, 'x509', '-req', '-in', 'expired.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'expired.crt', '-days', '0', '-extfile', 'cl.ext');
  ssl(d, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'foreign.key', '-out', 'foreign.csr', '-subj', '/CN=foreign-client');
  ssl(d, 'x509', '-req', '-in', 'foreign.csr', '-CA', 'other-ca.crt', '-CAkey', 'other-ca.key', '-CAcreateserial', '-out', 'foreign.crt', '-days', '2', '-extfile', 'cl.ext');
  extra = {
    server2Cert: join(d, 'server2.crt'), server2Key: join(d, 'server2.key'), expiredCert: join(d, 'expired.crt'), expiredKey: join(d, 'expired.key'),
    foreignCert: join(d, 'foreign.crt'), foreignKey: join(d, 'foreign.key'),
  };
  // valid for no time at all: expired from the next second on (certificates count whole seconds)
  await new Promise((res) => setTimeout(res, 1100));
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
  await r.client.flushall();
});

interface Answer { status: number; body: string; serial: string | undefined; socket: unknown }

/** One https request as a client of the test CA (`redis.test` is the name in the server certificate). */
const get = (port: number, path: string, o: { cert?: string; key?: string; agent?: Agent; headers?: Record<string, string> } = {}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1', port, path, servername: 'redis.test', ca: readFileSync(certs.ca), headers: o.headers ?? {},
        ...(o.cert !== undefined ? { cert: readFileSync(o.cert), key: readFileSync(o.key!) } : {}),
        agent: o.agent ?? false,
      },
      (res) => {
        let body = '';
        const socket = res.socket as TLSSocket;
        const serial = socket.getPeerCertificate().serialNumber;
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial, socket }));
      },
    );
    req.on('error', reject);
    req.end();
  });

const plainGet = (port: number, path: string, headers: Record<string, string> = {}): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });

const serialOf = (file: string) => execFileSync('openssl', ['x509', '-in', file, '-noout', '-serial'], { encoding: 'utf8' }).trim().replace(/^serial=/, '').toUpperCase();

/** An outbound connector listening on http and https, with these startup parameters. */
const start = async (env: Record<string, string>, id = 'tls') => {
  const [http, https] = [await freePort(), await freePort()];
  await r.client.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${http}`, `https://127.0.0.1:${https}`] }));
  await r.client.set('process:image:casdu:1:ioa:1', '{"casdu":1,"ioa":1,"type":36,"value":1.5,"timestamp":"2026-11-25T00:00:00.000Z","source":"t"}');
  const c = new Connector('outbound', { Id: id, ConnectionStrings__Datastore: r.redis.url, Http__TlsCertFile: certs.serverCert, Http__TlsKeyFile: certs.serverKey, ...env });
  running.push(c);
  await c.waitForLog((l) => l.msg === 'outbound connector listening');
  return { c, http, https };
};

const POINT = '/api/datapoints?casdu=1&ioa=1';
const requestLines = (c: Connector) => c.logs().filter((l) => l.msg === 'request' && l.path === '/api/datapoints');

it('http and https on one connector; named and unnamed API keys: the request log names the caller, never the key; OpenAPI lists both servers', async () => {
  const { c, http, https } = await start({ Authentication__ApiKeys: 'plant-a=k3y-of-plant-a,an0ther-key' });
  expect((await get(https, POINT, { headers: { 'X-Api-Key': 'k3y-of-plant-a' } })).status).toBe(200);
  expect(await plainGet(http, POINT, { Authorization: 'Bearer an0ther-key' })).toBe(200);
  expect((await get(https, POINT)).status).toBe(401);
  expect((await get(https, '/health/live')).status).toBe(200);
  await eventually(() => (requestLines(c).length === 3 ? true : undefined));
  expect(requestLines(c).map((l) => [l.status, l.caller])).toEqual([[200, 'plant-a'], [200, 'key-2'], [401, undefined]]);
  expect(c.stdout).not.toContain('k3y-of-plant-a');
  expect(c.stdout).not.toContain('an0ther-key');
  const servers = (JSON.parse((await get(https, '/openapi.json', { headers: { 'X-Api-Key': 'an0ther-key' } })).body) as { servers: Array<{ url: string }> }).servers.map((s) => s.url);
  expect(servers).toEqual([`http://127.0.0.1:${http}`, `https://127.0.0.1:${https}`]);
});

it('optional client certificates: a valid one authenticates like a key (caller = cn: and its CN); none, a foreign CA\'s or an expired one does not', async () => {
  const { c, https } = await start({ Http__ClientCaFile: certs.ca, Authentication__ApiKeys: 'k' });
  expect((await get(https, POINT, { cert: certs.clientCert, key: certs.clientKey })).status).toBe(200);
  expect((await get(https, POINT)).status).toBe(401);
  expect((await get(https, POINT, { cert: extra.foreignCert, key: extra.foreignKey })).status).toBe(401);
  expect((await get(https, POINT, { cert: extra.expiredCert, key: extra.expiredKey })).status).toBe(401);
  expect((await get(https, POINT, { headers: { 'X-Api-Key': 'k' } })).status).toBe(200);
  await eventually(() => (requestLines(c).length === 5 ? true : undefined));
  expect(requestLines(c).map((l) => [l.status, l.caller])).toEqual([[200, 'cn:rest-connectors'], [401, undefined], [401, undefined], [401, undefined], [200, 'key-1']]);
});

it('required client certificates: without one (or with a foreign or expired one) the handshake fails, health endpoints on https included; http listeners stay as they were', async () => {
  const { http, https } = await start({ Http__ClientCaFile: certs.ca, Authentication__ClientCertificates: 'required', Authentication__ApiKeys: 'k' });
  expect((await get(https, POINT, { cert: certs.clientCert, key: certs.clientKey })).status).toBe(200);
  await expect(get(https, '/health/live')).rejects.toThrow(/certificate|alert|socket hang up|ECONNRESET/i);
  await expect(get(https, POINT, { cert: extra.foreignCert, key: extra.foreignKey })).rejects.toThrow(/alert|unknown ca|ECONNRESET|socket hang up/i);
  await expect(get(https, POINT, { cert: extra.expiredCert, key: extra.expiredKey })).rejects.toThrow(/alert|expired|ECONNRESET|socket hang up/i);
  expect(await plainGet(http, '/health/live')).toBe(200);
  expect(await plainGet(http, POINT)).toBe(401);
  expect(await plainGet(http, POINT, { 'X-Api-Key': 'k' })).toBe(200);
});

it('the certificate files replaced (a Secret\'s symlink swap): an open keep-alive connection keeps working, a new one gets the new certificate within 10 s; a broken replacement is logged and the old one kept', async () => {
  // as Kubernetes mounts a Secret: tls.crt → ..data/tls.crt, ..data → a versioned directory, swapped atomically
  const mount = mkdtempSync(join(tmpdir(), 'rc-secret-'));
  const version = (name: string, cert: string, key: string) => {
    mkdirSync(join(mount, name));
    writeFileSync(join(mount, name, 'tls.crt'), readFileSync(cert));
    writeFileSync(join(mount, name, 'tls.key'), readFileSync(key));
    symlinkSync(name, join(mount, '..data_tmp'));
    renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
  };
  version('v1', certs.serverCert, certs.serverKey);
  symlinkSync('..data/tls.crt', join(mount, 'tls.crt'));
  symlinkSync('..data/tls.key', join(mount, 'tls.key'));
  try {
    const { c, https } = await start({ Http__TlsCertFile: join(mount, 'tls.crt'), Http__TlsKeyFile: join(mount, 'tls.key') });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const first = await get(https, '/health/live', { agent });
    expect(first.serial).toBe(serialOf(certs.serverCert));
    version('v2', extra.server2Cert, extra.server2Key);
    const fresh = await eventually(async () => {
      const a = await get(https, '/health/live');
      return a.serial === serialOf(extra.server2Cert) ? a : undefined;
    }, 10000, 'a new connection gets the new certificate');
    expect(fresh.status).toBe(200);
    // the keep-alive connection opened before the swap: still open, still served, same socket
    const again = await get(https, '/health/live', { agent });
    expect([again.status, again.serial, again.socket === first.socket]).toEqual([200, serialOf(certs.serverCert), true]);
    agent.destroy();
    await c.waitForLog((l) => l.msg === 'listener certificate reloaded: new connections get it');
    // a replacement whose key does not match: logged, and the certificate in use stays
    version('v3', certs.serverCert, extra.server2Key);
    await c.waitForLog((l) => l.msg === 'new listener certificate does not load; keeping the current one', 10000);
    expect((await get(https, '/health/live')).serial).toBe(serialOf(extra.server2Cert));
  } finally {
    rmSync(mount, { recursive: true, force: true });
  }
});

it('a client that opens a TLS connection and never finishes its handshake is cut after Http:HeadersTimeoutMilliseconds; the healthcheck records the plain listener', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-addr-'));
  const file = join(dir, 'address');
  const { http, https } = await start({ Http__HeadersTimeoutMilliseconds: '1000', Http__AddressFile: file });
  const { connect } = await import('node:net');
  const socket = connect(https, '127.0.0.1');
  const opened = Date.now();
  const closedAfter = await new Promise<number>((resolve) => {
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Date.now() - opened));
  });
  expect(closedAfter).toBeGreaterThanOrEqual(900);
  expect((JSON.parse(readFileSync(file, 'utf8')) as { urls: string[] }).urls).toEqual([`http://127.0.0.1:${http}`]);
  const check = await runCli(['healthcheck'], { Http__AddressFile: file });
  expect([check.code, check.stdout.trim()]).toEqual([0, `outbound connector live at http://127.0.0.1:${http}`]);
  rmSync(dir, { recursive: true, force: true });
});

it('start-up errors exit 2 naming the parameter: https without a certificate, an unreadable file, a key that does not match', async () => {
  const port = await freePort();
  await r.client.set('connectors:bad:config', JSON.stringify({ hostUrls: [`https://127.0.0.1:${port}`] }));
  const env = { Id: 'bad', ConnectionStrings__Datastore: r.redis.url };
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{}, /Http:TlsCertFile and Http:TlsKeyFile are required for https:\/\/127\.0\.0\.1:\d+ in hostUrls/],
    [{ Http__TlsCertFile: '/nope.pem', Http__TlsKeyFile: certs.serverKey }, /Http:TlsCertFile: cannot read \/nope\.pem: no such file/],
    [{ Http__TlsCertFile: certs.serverCert, Http__TlsKeyFile: certs.clientKey }, /Http:TlsCertFile and Http:TlsKeyFile do not load as a pair/],
    [{ Http__TlsCertFile: certs.serverCert, Http__TlsKeyFile: certs.serverKey, Http__ClientCaFile: certs.serverKey }, /Http:ClientCaFile: .* holds no PEM certificate/],
  ];
  for (const [more, message] of cases) {
    const run = await runCli(['outbound'], { ...env, ...more }, { timeoutMs: 20000 });
    expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(message)]);
  }
});
