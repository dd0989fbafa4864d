import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../support/freePort';
import { startRedisServer } from '../../support/redisServer';

/**
 * Production-shaped Redis for tests (issue 11): certificates made with openssl, TLS servers, and a
 * Sentinel set (master, replica, three sentinels), each on free loopback ports, started and
 * removed by the test that uses them.
 */

export interface Certs {
  readonly dir: string;
  /** Paths of the PEM files. */
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A CA that signed nothing here: an untrusted one. */
  readonly otherCa: string;
}

const ssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

/** A CA, a server certificate for the name `redis.test` only (not 127.0.0.1), and a client certificate. */
export const makeCerts = (): Certs => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-certs-'));
  ssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=rest-connectors test CA');
  ssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '2', '-subj', '/CN=another CA');
  for (const [name, ext] of [['server', 'subjectAltName=DNS:redis.test\nextendedKeyUsage=serverAuth'], ['client', 'extendedKeyUsage=clientAuth']] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    ssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name === 'server' ? 'redis.test' : 'rest-connectors'}`);
    ssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`);
  }
  return {
    dir, ca: join(dir, 'ca.crt'), serverCert: join(dir, 'server.crt'), serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'), clientKey: join(dir, 'client.key'), otherCa: join(dir, 'other-ca.crt'),
  };
};

export interface Server {
  readonly port: number;
  readonly proc: ChildProcess;
  readonly dir: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const stopper = (proc: ChildProcess, dir: string) => (signal: NodeJS.Signals = 'SIGKILL') =>
  new Promise<void>((resolve) => {
    const done = () => {
      rmSync(dir, { recursive: true, force: true });
      resolve();
    };
    if (proc.exitCode !== null || proc.signalCode !== null) return done();
    proc.once('exit', done);
    proc.kill(signal);
  });

/** A redis-server that speaks only TLS; `authClients` asks clients for a certificate (mutual TLS). */
export const startTlsRedis = async (certs: Certs, authClients: boolean): Promise<Server> => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rc-tls-'));
  const proc = await startRedisServer(port, dir, 400, {
    args: [
      '--port', '0', '--tls-port', String(port), '--tls-cert-file', certs.serverCert, '--tls-key-file', certs.serverKey,
      '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', authClients ? 'yes' : 'no',
    ],
    probe: { tls: { ca: readFileSync(certs.ca), servername: 'redis.test', cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) } },
  });
  return { port, proc, dir, stop: stopper(proc, dir) };
};

export interface SentinelSet {
  readonly master: Server;
  readonly replica: Server;
  readonly sentinels: Server[];
  /** `127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3,serviceName=mymaster` */
  readonly connectionString: string;
  /** The port of the node the sentinels name master now. */
  masterPort(): Promise<number>;
  /** A client of the node the sentinels name master now (over TLS when the set speaks it). */
  masterClient(): Promise<Redis>;
  /** A client of the first sentinel. */
  sentinelClient(): Redis;
  /**
   * `SENTINEL FAILOVER`, asked again until the sentinels name another master (one right after
   * another may be refused or aborted while the demoted master still syncs); resolves to its port.
   */
  failover(): Promise<number>;
  close(): Promise<void>;
}

const sentinelProgram = (): string => {
  try {
    execFileSync('redis-sentinel', ['--version'], { stdio: 'ignore' });
    return 'redis-sentinel';
  } catch {
    return 'redis-server'; // with --sentinel below: the same program in sentinel mode
  }
};

/** One master, one replica and three sentinels (quorum 2, down after 1 s); `sentinelPassword` protects the sentinels. */
export const startSentinelSet = async (o: { sentinelPassword?: string; tls?: Certs } = {}): Promise<SentinelSet> => {
  // with `tls`: every node and sentinel speaks only TLS (replication too), with the server certificate for `redis.test`
  const tlsArgs = (port: number) =>
    o.tls === undefined
      ? ['--port', String(port)]
      : ['--port', '0', '--tls-port', String(port), '--tls-cert-file', o.tls.serverCert, '--tls-key-file', o.tls.serverKey, '--tls-ca-cert-file', o.tls.ca, '--tls-auth-clients', 'no', '--tls-replication', 'yes'];
  const clientTls = o.tls === undefined ? {} : { tls: { ca: readFileSync(o.tls.ca), servername: 'redis.test' } };
  const start = async (args: string[]): Promise<Server> => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'rc-ha-'));
    const proc = await startRedisServer(port, dir, 400, { args: [...tlsArgs(port), ...args, '--replica-announce-ip', '127.0.0.1'], probe: clientTls });
    return { port, proc, dir, stop: stopper(proc, dir) };
  };
  const master = await start([]);
  const replica = await start(['--replicaof', '127.0.0.1', String(master.port)]);
  const probe = new Redis({ port: replica.port, host: '127.0.0.1', protocol: 2, ...clientTls });
  for (let i = 0; i < 400 && !/master_link_status:up/.test(await probe.info('replication')); i++) await new Promise((r) => setTimeout(r, 25));
  probe.disconnect();
  const program = sentinelProgram();
  const sentinels: Server[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'rc-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    const listen = o.tls === undefined
      ? [`port ${port}`]
      : ['port 0', `tls-port ${port}`, `tls-cert-file ${o.tls.serverCert}`, `tls-key-file ${o.tls.serverKey}`, `tls-ca-cert-file ${o.tls.ca}`, 'tls-auth-clients no', 'tls-replication yes'];
    writeFileSync(conf, [
      ...listen, 'bind 127.0.0.1', `dir ${dir}`, 'sentinel announce-ip 127.0.0.1',
      `sentinel monitor mymaster 127.0.0.1 ${master.port} 2`,
      'sentinel down-after-milliseconds mymaster 1000', 'sentinel failover-timeout mymaster 3000', 'sentinel parallel-syncs mymaster 1',
      ...(o.sentinelPassword !== undefined ? [`requirepass ${o.sentinelPassword}`, `sentinel sentinel-pass ${o.sentinelPassword}`] : []), '',
    ].join('\n'));
    const proc = await startRedisServer(port, dir, 400, {
      program, replaceArgs: true, args: program === 'redis-sentinel' ? [conf] : [conf, '--sentinel'],
      probe: { ...clientTls, ...(o.sentinelPassword !== undefined ? { password: o.sentinelPassword } : {}) },
    });
    sentinels.push({ port, proc, dir, stop: stopper(proc, dir) });
  }
  const sentinelClient = () =>
    new Redis({ port: sentinels[0]!.port, host: '127.0.0.1', protocol: 2, ...clientTls, ...(o.sentinelPassword !== undefined ? { password: o.sentinelPassword } : {}) });
  const ask = async (): Promise<number> => {
    const s = sentinelClient();
    try {
      const [, port] = (await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')) as [string, string];
      return Number(port);
    } finally {
      s.disconnect();
    }
  };
  // every sentinel knows the replica and the other sentinels before a failover can be asked for
  for (let i = 0; i < 400; i++) {
    const s = sentinelClient();
    const info = (await s.call('SENTINEL', 'MASTER', 'mymaster')) as string[];
    s.disconnect();
    const f = new Map<string, string>();
    for (let j = 0; j + 1 < info.length; j += 2) f.set(info[j]!, info[j + 1]!);
    if (f.get('num-slaves') === '1' && f.get('num-other-sentinels') === '2') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    master, replica, sentinels,
    connectionString: `${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')},serviceName=mymaster`,
    masterPort: ask,
    masterClient: async () => new Redis({ port: await ask(), host: '127.0.0.1', protocol: 2, ...clientTls }),
    sentinelClient,
    failover: async () => {
      const before = await ask();
      const s = sentinelClient();
      try {
        for (const end = Date.now() + 60000; Date.now() < end; ) {
          await s.call('SENTINEL', 'FAILOVER', 'mymaster').catch(() => undefined);
          for (let i = 0; i < 20; i++) {
            const now = await ask();
            if (now !== before) return now;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
        throw new Error('the sentinels named no other master within 60 s');
      } finally {
        s.disconnect();
      }
    },
    close: async () => {
      await Promise.all([...sentinels, replica, master].map((s) => s.stop()));
    },
  };
};
