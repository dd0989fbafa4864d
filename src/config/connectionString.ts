import * as E from 'fp-ts/Either';
import type { RedisOptions } from 'ioredis';
import { keyPair, readCaBundle, readCertificate, readFromDisk, readKey, type ReadFile } from './pem';
import { PARAMETERS, type StartupSettings } from './startup';

/** What a connection string says, before it becomes ioredis options. */
export interface DatastoreTarget {
  readonly endpoints: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
  readonly db: number;
  readonly sentinelMaster?: string;
  /** The password of the sentinels themselves (`sentinelPassword=`), separate from the data nodes'. */
  readonly sentinelPassword?: string;
  /** The server name a TLS certificate must carry (`sslHost=`), when it is not the host connected to. */
  readonly sslHost?: string;
  readonly connectTimeoutMs?: number;
}

/** PEM contents of the TLS startup parameters (`Datastore:TlsCaFile`, …), read at start-up. */
export interface TlsFiles {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

const DEFAULT_PORT = 6379;

const parsePort = (s: string, whole: string): E.Either<string, number> =>
  /^[0-9]{1,5}$/.test(s) && Number(s) >= 1 && Number(s) <= 65535
    ? E.right(Number(s))
    : E.left(`invalid port '${s}' in '${whole}'`);

/** `host`, `host:port`, `[v6]`, `[v6]:port`. */
export const parseEndpoint = (s: string): E.Either<string, { host: string; port: number }> => {
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(s);
  if (v6) {
    const port = v6[2] === undefined ? E.right(DEFAULT_PORT) : parsePort(v6[2], s);
    return E.map((p: number) => ({ host: v6[1]!, port: p }))(port);
  }
  const parts = s.split(':');
  if (parts.length > 2 || parts[0] === '') return E.left(`invalid endpoint '${s}' (expected host:port)`);
  const port = parts[1] === undefined ? E.right(DEFAULT_PORT) : parsePort(parts[1], s);
  return E.map((p: number) => ({ host: parts[0]!, port: p }))(port);
};

const parseBool = (key: string, v: string): E.Either<string, boolean> => {
  const l = v.toLowerCase();
  return l === 'true' ? E.right(true) : l === 'false' ? E.right(false) : E.left(`${key}: expected true or false, got '${v}'`);
};

const parseUrl = (s: string): E.Either<string, DatastoreTarget> => {
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return E.left(`invalid URL '${redactUrl(s)}'`);
  }
  if (url.hostname === '') return E.left(`missing host in '${redactUrl(s)}'`);
  const dbPart = url.pathname.replace(/^\//, '');
  if (dbPart !== '' && !/^[0-9]+$/.test(dbPart)) return E.left(`invalid database '${dbPart}' in URL`);
  const port = url.port === '' ? E.right(DEFAULT_PORT) : parsePort(url.port, redactUrl(s));
  if (E.isLeft(port)) return port;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return E.right({
    endpoints: [{ host, port: port.right }],
    ...(url.username !== '' ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password !== '' ? { password: decodeURIComponent(url.password) } : {}),
    tls: url.protocol === 'rediss:',
    db: dbPart === '' ? 0 : Number(dbPart),
  });
};

/** Hides the password of a URL, for error messages. */
const redactUrl = (s: string): string => s.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');

/**
 * `host:port`, the StackExchange.Redis form `host:port,host2:port,password=…,user=…,ssl=true,
 * sslHost=…,defaultDatabase=N,serviceName=…,sentinelPassword=…,connectTimeout=ms,abortConnect=…`, or a `redis://`/`rediss://` URL.
 * Option names are case-insensitive, as in StackExchange.Redis; an unknown option is an error
 * rather than silently dropped.
 */
export const parseConnectionString = (input: string): E.Either<string, DatastoreTarget> => {
  const s = input.trim();
  if (/^rediss?:\/\//i.test(s)) return parseUrl(s);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) return E.left(`unsupported scheme in '${redactUrl(s)}' (use redis:// or rediss://)`);
  const endpoints: Array<{ host: string; port: number }> = [];
  let target: { -readonly [K in keyof DatastoreTarget]: DatastoreTarget[K] } = { endpoints, tls: false, db: 0 };
  for (const partRaw of s.split(',')) {
    const part = partRaw.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq < 0) {
      const ep = parseEndpoint(part);
      if (E.isLeft(ep)) return ep;
      endpoints.push(ep.right);
      continue;
    }
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    switch (key.toLowerCase()) {
      case 'password':
        target = { ...target, password: value };
        break;
      case 'user':
        target = { ...target, username: value };
        break;
      case 'ssl': {
        const b = parseBool(key, value);
        if (E.isLeft(b)) return b;
        target = { ...target, tls: b.right };
        break;
      }
      case 'defaultdatabase':
        if (!/^[0-9]+$/.test(value)) return E.left(`defaultDatabase: expected a database number, got '${value}'`);
        target = { ...target, db: Number(value) };
        break;
      case 'sentinelpassword':
        target = { ...target, sentinelPassword: value };
        break;
      case 'sslhost':
        if (value === '') return E.left('sslHost: must not be empty');
        target = { ...target, sslHost: value };
        break;
      case 'servicename':
        if (value === '') return E.left('serviceName: must not be empty');
        target = { ...target, sentinelMaster: value };
        break;
      case 'connecttimeout':
        if (!/^[0-9]+$/.test(value) || Number(value) === 0) return E.left(`connectTimeout: expected milliseconds, got '${value}'`);
        target = { ...target, connectTimeoutMs: Number(value) };
        break;
      case 'abortconnect':
        // Accepted for compatibility with StackExchange.Redis strings; we always keep retrying.
        break;
      default:
        return E.left(
          `unsupported option '${key}' (supported: password, user, ssl, sslHost, defaultDatabase, serviceName, sentinelPassword, connectTimeout, abortConnect)`,
        );
    }
  }
  if (endpoints.length === 0) return E.left(`no host:port in '${s.replace(/password=[^,]*/i, 'password=***')}'`);
  return E.right(target);
};

/**
 * ioredis options for a target. RESP2 is chosen on purpose: stream replies keep their nested-array
 * shape. With `serviceName`, the sentinels are asked for the master and their `+switch-master`
 * announcements are followed (`failoverDetector`), so a failover moves the connection within about
 * a second instead of at the next error; with `ssl=true` the sentinels are reached over the same
 * TLS as the data nodes.
 */
export const toRedisOptions = (t: DatastoreTarget, files: TlsFiles = {}): RedisOptions => {
  const first = t.endpoints[0]!;
  const tls = t.tls
    ? {
        ...(files.ca !== undefined ? { ca: files.ca } : {}),
        ...(files.cert !== undefined ? { cert: files.cert } : {}),
        ...(files.key !== undefined ? { key: files.key } : {}),
        ...(t.sslHost !== undefined ? { servername: t.sslHost } : {}),
      }
    : undefined;
  const common: RedisOptions = {
    protocol: 2,
    db: t.db,
    ...(t.username !== undefined ? { username: t.username } : {}),
    ...(t.password !== undefined ? { password: t.password } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(t.connectTimeoutMs !== undefined ? { connectTimeout: t.connectTimeoutMs } : {}),
  };
  return t.sentinelMaster !== undefined
    ? {
        ...common,
        sentinels: t.endpoints.map((e) => ({ host: e.host, port: e.port })),
        name: t.sentinelMaster,
        failoverDetector: true,
        ...(t.sentinelPassword !== undefined ? { sentinelPassword: t.sentinelPassword } : {}),
        ...(tls !== undefined ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
      }
    : { ...common, host: first.host, port: first.port };
};

/**
 * The data store's connection, from the startup parameters: the connection string and the PEM files
 * of `Datastore:TlsCaFile`, `Datastore:TlsCertFile` and `Datastore:TlsKeyFile`, read at start by the
 * one PEM reader (`pem.ts`). Every problem is reported, each naming its parameter (a startup error:
 * exit 2).
 */
export const datastoreOptions = (s: StartupSettings, read: ReadFile = readFromDisk): E.Either<string[], RedisOptions> => {
  const target = parseConnectionString(s.connectionString);
  if (E.isLeft(target)) return E.left([`${PARAMETERS.connectionString}: ${target.left}`]);
  const d = s.datastore;
  const errors: string[] = [];
  const take = (got: E.Either<string, Buffer> | undefined): Buffer | undefined => {
    if (got === undefined) return undefined;
    if (E.isLeft(got)) errors.push(got.left);
    return E.isRight(got) ? got.right : undefined;
  };
  const ca = take(d.tlsCaFile === undefined ? undefined : readCaBundle(PARAMETERS.datastore.tlsCaFile, d.tlsCaFile, read));
  const cert = take(d.tlsCertFile === undefined ? undefined : readCertificate(PARAMETERS.datastore.tlsCertFile, d.tlsCertFile, read));
  const key = take(d.tlsKeyFile === undefined ? undefined : readKey(PARAMETERS.datastore.tlsKeyFile, d.tlsKeyFile, read));
  if (errors.length === 0 && (cert === undefined) !== (key === undefined)) {
    errors.push(`${PARAMETERS.datastore.tlsCertFile} and ${PARAMETERS.datastore.tlsKeyFile} go together (mutual TLS needs both)`);
  }
  if (cert !== undefined && key !== undefined) {
    const pair = keyPair(PARAMETERS.datastore.tlsCertFile, PARAMETERS.datastore.tlsKeyFile, cert, key);
    if (E.isLeft(pair)) errors.push(pair.left);
  }
  if (!target.right.tls && (d.tlsCaFile ?? d.tlsCertFile ?? d.tlsKeyFile) !== undefined) {
    errors.push(`${PARAMETERS.connectionString}: TLS files are set but the connection string does not ask for TLS (add ssl=true, or use rediss://)`);
  }
  // as text: the options travel to the interrogation thread, where a Buffer would arrive as a plain Uint8Array
  const text = (b: Buffer | undefined) => b?.toString('utf8');
  const files: TlsFiles = { ...(ca !== undefined ? { ca: text(ca) } : {}), ...(cert !== undefined ? { cert: text(cert) } : {}), ...(key !== undefined ? { key: text(key) } : {}) };
  return errors.length > 0 ? E.left(errors) : E.right(toRedisOptions(target.right, files));
};
