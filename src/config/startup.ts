import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';

/**
 * Startup parameters (CONTRACT 1): `appsettings.json` overridden by environment variables,
 * keys matched case-insensitively, `__` in an environment variable standing for `:`.
 */
export interface StartupSettings {
  readonly id: string;
  readonly connectionString: string;
  readonly datastore: {
    readonly connectionRetrySeconds: number;
    readonly streamPollIntervalMilliseconds: number;
    readonly startFromLatest: boolean;
    readonly configPollIntervalMilliseconds: number;
    readonly streamMaxLength: number;
    /** The consumer name in the group; stable across restarts so own pending entries are re-read. */
    readonly consumerName: string;
    /** A consumer that has not read for this long is taken for dead and its entries claimed (CONTRACT 4.3: 60 s). */
    readonly claimIdleMilliseconds: number;
    readonly claimIntervalMilliseconds: number;
    /** A data-store command unanswered this long fails (503), and the store counts as stalled. */
    readonly commandTimeoutMilliseconds: number;
    /** PEM files for TLS to Redis (and sentinels): CA, client certificate and key (mutual TLS). */
    readonly tlsCaFile?: string;
    readonly tlsCertFile?: string;
    readonly tlsKeyFile?: string;
    /** CONTRACT 5.1.1: replicas that must acknowledge an inbound write before it is answered 200 (WAIT). */
    readonly waitReplicas: number;
    readonly waitTimeoutMilliseconds: number;
    /** CONTRACT 6.6: start-up fails (exit 2) unless Redis's maxmemory_policy is noeviction. */
    readonly requireNoEviction: boolean;
    /** CONTRACT 6.6: how often the policy and the evictions are read (60 s). */
    readonly memoryCheckIntervalMilliseconds: number;
  };
  readonly webhooks: {
    readonly batchWindowMilliseconds: number;
    readonly batchMaxSize: number;
    readonly timeoutMilliseconds: number;
    readonly maxAttempts: number;
    readonly maxInFlight: number;
    /** How long a graceful stop waits for in-flight deliveries (CONTRACT 4.3). */
    readonly stopTimeoutMilliseconds: number;
    /** CONTRACT 4.4: circuit, probes, redrive and the backlog's cap. */
    readonly circuitFailureThreshold: number;
    readonly probeIntervalSeconds: number;
    readonly autoRedrive: boolean;
    readonly deadLetterMaxLength: number;
  };
  readonly http: {
    readonly maxBodyBytes: number;
    /** CONTRACT 6.5: connection and memory budgets. */
    readonly maxConnections: number;
    readonly headersTimeoutMilliseconds: number;
    readonly requestTimeoutMilliseconds: number;
    readonly maxBodyBytesInFlight: number;
    /** CONTRACT 5.1.1: how long an Idempotency-Key's answer is kept. */
    readonly idempotencyTtlSeconds: number;
    /** Where the running connector records the address it listens on, for `rest-connector healthcheck`. */
    readonly addressFile?: string;
    /** CONTRACT 7.1: the https listeners' certificate chain and key (PEM), watched for changes. */
    readonly tlsCertFile?: string;
    readonly tlsKeyFile?: string;
    /** CONTRACT 7.1: the CA that signs client certificates; with it, https clients are asked for one. */
    readonly clientCaFile?: string;
  };
  readonly apiKeys: readonly ApiKey[];
  /** CONTRACT 7.1: `optional` by default when `Http:ClientCaFile` is set, else `off`. */
  readonly clientCertificates: ClientCertificates;
}

type Raw = ReadonlyMap<string, string>;
type Parser<A> = (name: string, value: string) => E.Either<string, A>;

const positiveInt: Parser<number> = (name, value) =>
  /^\s*[0-9]+\s*$/.test(value) && Number(value) > 0 && Number.isSafeInteger(Number(value))
    ? E.right(Number(value))
    : E.left(`${name}: expected a positive integer, got '${value}'`);

const positiveNumber: Parser<number> = (name, value) => {
  const n = Number(value);
  return value.trim() !== '' && Number.isFinite(n) && n > 0
    ? E.right(n)
    : E.left(`${name}: expected a positive number, got '${value}'`);
};

/** The push side's share of the 10 s graceful stop (CONTRACT 4.3): at most 10000. */
const stopTimeout: Parser<number> = (name, value) =>
  E.chain((n: number) => (n <= 10000 ? E.right(n) : E.left(`${name}: must be at most 10000 (the whole stop takes at most 10 s), got '${value}'`)))(millis(name, value));

const seconds: Parser<number> = (name, value) =>
  E.chain((n: number) => (n * 1000 <= MAX_MILLISECONDS ? E.right(n) : E.left(`${name}: must be at most ${MAX_MILLISECONDS / 1000}, got '${value}'`)))(positiveNumber(name, value));

const bool: Parser<boolean> = (name, value) => {
  const v = value.trim().toLowerCase();
  return v === 'true' ? E.right(true) : v === 'false' ? E.right(false) : E.left(`${name}: expected true or false, got '${value}'`);
};

const nonNegativeInt: Parser<number> = (name, value) =>
  /^\s*[0-9]+\s*$/.test(value) && Number.isSafeInteger(Number(value)) ? E.right(Number(value)) : E.left(`${name}: expected an integer of 0 or more, got '${value}'`);

const nonEmptyText: Parser<string> = (name, value) =>
  value.trim() === '' ? E.left(`${name}: must not be empty`) : E.right(value);

/** `~` joins a consumer's name to the one it claimed from (`claimConsumer`): not part of a name. */
const consumerNameText: Parser<string> = (name, value) =>
  E.chain((v: string) => (v.includes('~') ? E.left(`${name}: must not contain '~' (it names the consumers that hold claimed entries), got '${value}'`) : E.right(v)))(
    nonEmptyText(name, value),
  );

/** An explicitly set value without any usable key would turn authentication off: refused (CONTRACT 6.5). */
/** An API key and the name a request log line shows for it (CONTRACT 7.1): its own, or `key-N`. */
export interface ApiKey {
  readonly name: string;
  readonly key: string;
}

const NAMED = /^([A-Za-z][A-Za-z0-9_.-]*)=(.*[^=].*)$/;

/**
 * `k1,name=k2`: a key, or `name=key` (the first `=` separates; a name starts with a letter and holds
 * letters, digits, `-`, `_`, `.`). An unnamed key is `key-N`, N its place in the whole list from 1.
 * (A base64 key ending in `=` padding stays one key; give a name to a key that has `=` inside.)
 */
export const parseApiKeys = (value: string): ApiKey[] =>
  value.split(',').map((k) => k.trim()).filter((k) => k.length > 0).map((entry, i) => {
    const m = NAMED.exec(entry);
    return m !== null ? { name: m[1]!, key: m[2]! } : { name: `key-${i + 1}`, key: entry };
  });

const keyList: Parser<readonly ApiKey[]> = (name, value) => {
  const keys = parseApiKeys(value);
  // (a value without a usable key holds only commas and blanks: safe to show)
  if (keys.length === 0 && value.trim() !== '') return E.left(`${name}: no usable key in '${value}' (leave it empty to turn authentication off)`);
  const names = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) return E.left(`${name}: the name '${k.name}' is given to two keys`);
    names.add(k.name);
  }
  return E.right(keys);
};

export type ClientCertificates = 'off' | 'optional' | 'required';
const clientCertificates: Parser<ClientCertificates> = (name, value) => {
  const v = value.trim().toLowerCase();
  return v === 'off' || v === 'optional' || v === 'required' ? E.right(v) : E.left(`${name}: expected off, optional or required, got '${value}'`);
};

/** Node timers take at most 2^31 − 1 ms; beyond it they fire at once (CONTRACT 6.5). */
export const MAX_MILLISECONDS = 2147483647;
const millis: Parser<number> = (name, value) =>
  E.chain((n: number) => (n <= MAX_MILLISECONDS ? E.right(n) : E.left(`${name}: must be at most ${MAX_MILLISECONDS}, got '${value}'`)))(positiveInt(name, value));

/** The canonical spelling of every parameter, as the README and error messages show it. */
export const PARAMETERS = {
  id: 'Id',
  connectionString: 'ConnectionStrings:Datastore',
  connectionRetrySeconds: 'Datastore:ConnectionRetrySeconds',
  streamPollIntervalMilliseconds: 'Datastore:StreamPollIntervalMilliseconds',
  startFromLatest: 'Datastore:StartFromLatest',
  configPollIntervalMilliseconds: 'Datastore:ConfigPollIntervalMilliseconds',
  streamMaxLength: 'Datastore:StreamMaxLength',
  consumerName: 'Datastore:ConsumerName',
  claimIdleMilliseconds: 'Datastore:ClaimIdleMilliseconds',
  claimIntervalMilliseconds: 'Datastore:ClaimIntervalMilliseconds',
  batchWindowMilliseconds: 'Webhooks:BatchWindowMilliseconds',
  batchMaxSize: 'Webhooks:BatchMaxSize',
  timeoutMilliseconds: 'Webhooks:TimeoutMilliseconds',
  maxAttempts: 'Webhooks:MaxAttempts',
  maxInFlight: 'Webhooks:MaxInFlight',
  stopTimeoutMilliseconds: 'Webhooks:StopTimeoutMilliseconds',
  circuitFailureThreshold: 'Webhooks:CircuitFailureThreshold',
  probeIntervalSeconds: 'Webhooks:ProbeIntervalSeconds',
  autoRedrive: 'Webhooks:AutoRedrive',
  deadLetterMaxLength: 'Webhooks:DeadLetterMaxLength',
  maxBodyBytes: 'Http:MaxBodyBytes',
  maxConnections: 'Http:MaxConnections',
  headersTimeoutMilliseconds: 'Http:HeadersTimeoutMilliseconds',
  requestTimeoutMilliseconds: 'Http:RequestTimeoutMilliseconds',
  maxBodyBytesInFlight: 'Http:MaxBodyBytesInFlight',
  commandTimeoutMilliseconds: 'Datastore:CommandTimeoutMilliseconds',
  tlsCaFile: 'Datastore:TlsCaFile',
  tlsCertFile: 'Datastore:TlsCertFile',
  tlsKeyFile: 'Datastore:TlsKeyFile',
  waitReplicas: 'Datastore:WaitReplicas',
  waitTimeoutMilliseconds: 'Datastore:WaitTimeoutMilliseconds',
  idempotencyTtlSeconds: 'Http:IdempotencyTtlSeconds',
  requireNoEviction: 'Datastore:RequireNoEviction',
  memoryCheckIntervalMilliseconds: 'Datastore:MemoryCheckIntervalMilliseconds',
  addressFile: 'Http:AddressFile',
  httpTlsCertFile: 'Http:TlsCertFile',
  httpTlsKeyFile: 'Http:TlsKeyFile',
  clientCaFile: 'Http:ClientCaFile',
  apiKeys: 'Authentication:ApiKeys',
  clientCertificates: 'Authentication:ClientCertificates',
} as const;

/**
 * Flattens `appsettings.json` (nested objects → `a:b`) and the environment (`A__B` → `a:b`)
 * into one map of lower-case keys; the environment wins.
 */
export const collectRaw = (
  appsettings: unknown,
  env: Readonly<Record<string, string | undefined>>,
): Raw => {
  const out = new Map<string, string>();
  const walk = (value: unknown, prefix: string): void => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, prefix === '' ? k : `${prefix}:${k}`);
    } else if (prefix !== '' && value !== null && value !== undefined) {
      out.set(prefix.toLowerCase(), Array.isArray(value) ? value.join(',') : String(value));
    }
  };
  walk(appsettings, '');
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined) out.set(k.replace(/__/g, ':').toLowerCase(), v);
  }
  return out;
};

const param = <A>(raw: Raw, name: string, parse: Parser<A>, fallback: A): E.Either<string, A> => {
  const value = raw.get(name.toLowerCase());
  return value === undefined ? E.right(fallback) : parse(name, value);
};

/** A path-like parameter: present and not blank, or absent. */
const optionalText = <K extends string>(raw: Raw, name: string, key: K): Partial<Record<K, string>> => {
  const v = raw.get(name.toLowerCase())?.trim();
  return v === undefined || v === '' ? {} : ({ [key]: v } as Record<K, string>);
};

const clientCaSet = (raw: Raw): boolean => (raw.get(PARAMETERS.clientCaFile.toLowerCase())?.trim() ?? '') !== '';

/** Every startup parameter that does not parse is reported, not only the first. */
export const loadStartupSettings = (
  raw: Raw,
  options: { requireId: boolean; hostname: string },
): E.Either<string[], StartupSettings> => {
  const errors: string[] = [];
  const get = <A>(e: E.Either<string, A>, fallback: A): A =>
    pipe(e, E.getOrElse((msg: string) => (errors.push(msg), fallback)));
  const P = PARAMETERS;
  const idRaw = raw.get(P.id.toLowerCase());
  const id = idRaw === undefined || idRaw.trim() === '' ? '' : idRaw.trim();
  if (options.requireId && id === '') errors.push(`${P.id}: the connector Id is required (set the environment variable Id)`);
  const settings: StartupSettings = {
    id,
    connectionString: get(param(raw, P.connectionString, nonEmptyText, 'localhost:6379'), ''),
    datastore: {
      connectionRetrySeconds: get(param(raw, P.connectionRetrySeconds, seconds, 2), 2),
      streamPollIntervalMilliseconds: get(param(raw, P.streamPollIntervalMilliseconds, millis, 500), 500),
      startFromLatest: get(param(raw, P.startFromLatest, bool, true), true),
      configPollIntervalMilliseconds: get(param(raw, P.configPollIntervalMilliseconds, millis, 1000), 1000),
      streamMaxLength: get(param(raw, P.streamMaxLength, positiveInt, 100000), 100000),
      consumerName: get(param(raw, P.consumerName, consumerNameText, options.hostname), options.hostname),
      claimIdleMilliseconds: get(param(raw, P.claimIdleMilliseconds, millis, 60000), 60000),
      claimIntervalMilliseconds: get(param(raw, P.claimIntervalMilliseconds, millis, 30000), 30000),
      commandTimeoutMilliseconds: get(param(raw, P.commandTimeoutMilliseconds, millis, 5000), 5000),
      ...optionalText(raw, P.tlsCaFile, 'tlsCaFile'),
      ...optionalText(raw, P.tlsCertFile, 'tlsCertFile'),
      ...optionalText(raw, P.tlsKeyFile, 'tlsKeyFile'),
      waitReplicas: get(param(raw, P.waitReplicas, nonNegativeInt, 0), 0),
      waitTimeoutMilliseconds: get(param(raw, P.waitTimeoutMilliseconds, millis, 1000), 1000),
      requireNoEviction: get(param(raw, P.requireNoEviction, bool, false), false),
      memoryCheckIntervalMilliseconds: get(param(raw, P.memoryCheckIntervalMilliseconds, millis, 60000), 60000),
    },
    webhooks: {
      batchWindowMilliseconds: get(param(raw, P.batchWindowMilliseconds, millis, 100), 100),
      batchMaxSize: get(param(raw, P.batchMaxSize, positiveInt, 1000), 1000),
      timeoutMilliseconds: get(param(raw, P.timeoutMilliseconds, millis, 10000), 10000),
      maxAttempts: get(param(raw, P.maxAttempts, positiveInt, 5), 5),
      maxInFlight: get(param(raw, P.maxInFlight, positiveInt, 4), 4),
      stopTimeoutMilliseconds: get(param(raw, P.stopTimeoutMilliseconds, stopTimeout, 8000), 8000),
      circuitFailureThreshold: get(param(raw, P.circuitFailureThreshold, positiveInt, 3), 3),
      probeIntervalSeconds: get(param(raw, P.probeIntervalSeconds, seconds, 5), 5),
      autoRedrive: get(param(raw, P.autoRedrive, bool, true), true),
      deadLetterMaxLength: get(param(raw, P.deadLetterMaxLength, positiveInt, 100000), 100000),
    },
    http: {
      maxBodyBytes: get(param(raw, P.maxBodyBytes, positiveInt, 1048576), 1048576),
      maxConnections: get(param(raw, P.maxConnections, positiveInt, 1024), 1024),
      headersTimeoutMilliseconds: get(param(raw, P.headersTimeoutMilliseconds, millis, 10000), 10000),
      requestTimeoutMilliseconds: get(param(raw, P.requestTimeoutMilliseconds, millis, 30000), 30000),
      maxBodyBytesInFlight: get(param(raw, P.maxBodyBytesInFlight, positiveInt, 67108864), 67108864),
      idempotencyTtlSeconds: get(param(raw, P.idempotencyTtlSeconds, positiveInt, 86400), 86400),
      ...optionalText(raw, P.addressFile, 'addressFile'),
      ...optionalText(raw, P.httpTlsCertFile, 'tlsCertFile'),
      ...optionalText(raw, P.httpTlsKeyFile, 'tlsKeyFile'),
      ...optionalText(raw, P.clientCaFile, 'clientCaFile'),
    },
    apiKeys: get(param(raw, P.apiKeys, keyList, []), []),
    clientCertificates: get(param(raw, P.clientCertificates, clientCertificates, clientCaSet(raw) ? 'optional' : 'off'), 'off'),
  };
  if (settings.clientCertificates !== 'off' && settings.http.clientCaFile === undefined) {
    errors.push(`${P.clientCertificates}: ${settings.clientCertificates} needs ${P.clientCaFile} (the CA that signs client certificates)`);
  }
  return errors.length > 0 ? E.left(errors) : E.right(deepFreeze(settings));
};

export const deepFreeze = <A>(value: A): A => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
};
