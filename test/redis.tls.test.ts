import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '../support/redisServer';
import { Redis } from 'ioredis';
import { freePort } from '../support/freePort';
import { Connector, eventually, runCli } from './helpers/cli';
import { makeCerts, startTlsRedis, type Certs, type Server } from './helpers/ha';
import { postJson, request } from './helpers/http';

/**
 * Issue 11: TLS to Redis with certificates made here by openssl — server-only and mutual TLS, the
 * name to verify (`sslHost=`), and what an operator sees when a certificate or a file is wrong.
 */
let certs: Certs;
let tlsOnly: Server;
let mutual: Server;
const running: Connector[] = [];

beforeAll(async () => {
  certs = makeCerts();
  tlsOnly = await startTlsRedis(certs, false);
  mutual = await startTlsRedis(certs, true);
}, 30000);
afterAll(async () => {
  await Promise.all([tlsOnly.stop(), mutual.stop()]);
  rmSync(certs.dir, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop('SIGKILL')));
});

const admin = (s: Server) =>
  new Redis({
    port: s.port, host: '127.0.0.1', protocol: 2,
    tls: { ca: readFileSync(certs.ca), servername: 'redis.test', cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
  });

const inbound = async (s: Server, id: string, env: Record<string, string>): Promise<{ c: Connector; base: string }> => {
  const port = await freePort();
  const a = admin(s);
  await a.set(`connectors:${id}:config`, JSON.stringify({ hostUrls: [`http://127.0.0.1:${port}`], mappings: [{ name: 'm', topic: 't', casdu: 1, ioa: 7, type: 36, valuePath: 'v' }] }));
  a.disconnect();
  const c = new Connector('inbound', { Id: id, Datastore__ConnectionRetrySeconds: '0.3', ...env });
  running.push(c);
  return { c, base: `http://127.0.0.1:${port}` };
};

it('server-only TLS: the CA file and sslHost (the name the certificate carries) make it work', async () => {
  const { c, base } = await inbound(tlsOnly, 'tls1', {
    ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true,sslHost=redis.test`,
    Datastore__TlsCaFile: certs.ca,
  });
  await c.waitForLog((l) => l.msg === 'inbound connector listening');
  expect((await postJson(`${base}/api/datapoints?topic=t`, { v: 1.5 })).status).toBe(200);
  expect(c.stderr).toBe('');
  const a = admin(tlsOnly);
  expect(JSON.parse((await a.get('process:image:casdu:1:ioa:7'))!)).toMatchObject({ value: 1.5 });
  a.disconnect();
});

it('Node\'s own warnings (NODE_TLS_REJECT_UNAUTHORIZED=0) become JSON log lines, not stderr text', async () => {
  const { c } = await inbound(tlsOnly, 'tls4', { ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true`, NODE_TLS_REJECT_UNAUTHORIZED: '0' });
  await c.waitForLog((l) => l.msg === 'inbound connector listening');
  const warning = await c.waitForLog((l) => l.source === 'node');
  expect([warning.level, warning.msg]).toEqual(['warn', expect.stringMatching(/NODE_TLS_REJECT_UNAUTHORIZED/)]);
  expect(c.stderr).toBe('');
});

it('a certificate the connector cannot trust, or for another name: an error naming the cause on every retry, and nothing but JSON lines', async () => {
  const cases = [
    { env: { ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true,sslHost=redis.test`, Datastore__TlsCaFile: certs.otherCa }, cause: /self[- ]signed|unable to verify|unable to get local issuer/i },
    { env: { ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true`, Datastore__TlsCaFile: certs.ca }, cause: /does not match|altnames/i },
  ];
  for (const { env, cause } of cases) {
    const c = new Connector('inbound', { Id: 'tls2', Datastore__ConnectionRetrySeconds: '0.2', ...env });
    running.push(c);
    await eventually(() => (c.logs().filter((l) => l.level === 'error' && cause.test(String(l.err))).length >= 3 ? true : undefined), 15000, `three errors matching ${cause}`);
    const line = c.logs().find((l) => l.level === 'error')!;
    expect(line.msg).toBe('data store refused the connection: check the password, user or TLS settings');
    expect(c.stderr).toBe(''); // nothing but JSON lines
    await c.stop('SIGKILL');
  }
});

it('mutual TLS: without a client certificate the cause is logged; with TlsCertFile and TlsKeyFile it works', async () => {
  const base = { ConnectionStrings__Datastore: `127.0.0.1:${mutual.port},ssl=true,sslHost=redis.test`, Datastore__TlsCaFile: certs.ca };
  const without = new Connector('inbound', { Id: 'tls3', Datastore__ConnectionRetrySeconds: '0.2', ...base });
  running.push(without);
  await eventually(() => (without.logs().filter((l) => /data store/.test(String(l.msg)) && l.err !== undefined).length >= 2 ? true : undefined), 15000, 'the refusal logged, again');
  await without.stop('SIGKILL');
  const { c, base: url } = await inbound(mutual, 'tls3', { ...base, Datastore__TlsCertFile: certs.clientCert, Datastore__TlsKeyFile: certs.clientKey });
  await c.waitForLog((l) => l.msg === 'inbound connector listening');
  expect((await postJson(`${url}/api/datapoints?topic=t`, { v: 2 })).status).toBe(200);
  expect((await request(`${url}/health/ready`)).status).toBe(200);
});

it('operator commands print the cause; a TLS file that cannot be read, or TLS files without ssl=true, is a startup error (exit 2)', async () => {
  const got = await runCli(['config', 'get', '--id', 'x'], { ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true,sslHost=redis.test`, Datastore__TlsCaFile: certs.otherCa });
  expect([got.code, got.stderr]).toEqual([1, expect.stringMatching(/^rest-connector: data store: .*(self[- ]signed|unable to verify|issuer)/im)]);
  const missing = await runCli(['inbound'], { Id: 'x', ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true`, Datastore__TlsCaFile: '/nonexistent/ca.pem' });
  expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/Datastore:TlsCaFile: cannot read \/nonexistent\/ca.pem: no such file/)]);
  const notPem = await runCli(['inbound'], { Id: 'x', ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true`, Datastore__TlsCaFile: '/etc/hostname' });
  expect([notPem.code, notPem.stderr]).toEqual([2, expect.stringMatching(/is not a PEM file/)]);
  const plain = await runCli(['inbound'], { Id: 'x', ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port}`, Datastore__TlsCaFile: certs.ca });
  expect([plain.code, plain.stderr]).toEqual([2, expect.stringMatching(/does not ask for TLS/)]);
  const half = await runCli(['inbound'], { Id: 'x', ConnectionStrings__Datastore: `127.0.0.1:${tlsOnly.port},ssl=true`, Datastore__TlsCertFile: certs.clientCert });
  expect([half.code, half.stderr]).toEqual([2, expect.stringMatching(/go together/)]);
});

it('a wrong password: the operator command prints WRONGPASS; the connector logs it as an error on every retry, and nothing but JSON', async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rc-auth-'));
  const proc = await startRedisServer(port, dir, 400, { args: ['--requirepass', 'right'], probe: { password: 'right' } });
  try {
    const got = await runCli(['config', 'get', '--id', 'x'], { ConnectionStrings__Datastore: `127.0.0.1:${port},password=wrong` });
    expect([got.code, got.stderr]).toEqual([1, expect.stringMatching(/^rest-connector: data store: WRONGPASS invalid username-password pair/)]);
    const c = new Connector('outbound', { Id: 'auth', ConnectionStrings__Datastore: `127.0.0.1:${port},password=wrong`, Datastore__ConnectionRetrySeconds: '0.2' });
    running.push(c);
    await eventually(() => (c.logs().filter((l) => l.level === 'error' && /WRONGPASS/.test(String(l.err))).length >= 3 ? true : undefined), 15000, 'three WRONGPASS errors');
    expect(c.stdout).not.toContain('wrong'); // the password itself is never logged
    expect(c.stderr).toBe('');
  } finally {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
