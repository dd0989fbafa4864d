import * as E from 'fp-ts/Either';
import { DEFAULT_MAX_BATCH_ITEMS } from '../mapping/payload';
import { parseNetworks } from './networks';
import { parseApiKeys, type ApiKey } from './callerNames';
import { unknownParameters } from './parameterNames';

export { UNKNOWN_PARAMETER } from './parameterNames';

/**
 * Startup parameters (CONTRACT 1): `appsettings.json` overridden by environment variables,
 * keys matched case-insensitively, `__` in an environment variable standing for `:`. Each
 * parameter is declared once, in `STARTUP` below — its name as the README and errors spell it,
 * how its text is read, its default — and `StartupSettings` and `PARAMETERS` follow from that.
 */
/**
 * The parameters as given: lower-case names (`a:b`) to their text; `spelled`, each name as it was
 * written (`Webhooks__CircuitBreakerThreshold`, or `Webhooks:X` from `appsettings.json`), for errors.
 */
export type RawParameters = ReadonlyMap<string, string> & { readonly spelled?: ReadonlyMap<string, string> };
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
const keyList: Parser<readonly ApiKey[]> = (name, value) => {
  const parsed = parseApiKeys(value);
  if (E.isLeft(parsed)) return E.left(`${name}: ${parsed.left}`);
  const keys = parsed.right;
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

/** CONTRACT 6.7: CIDRs (or addresses) the outbound connector may connect to; empty, anywhere but the blocked ranges. */
const networks: Parser<readonly string[]> = (name, value) =>
  E.mapLeft((entry: string) => (entry === ''
    ? `${name}: an empty entry is not a CIDR (got '${value}'; leave the parameter unset for the default rule)`
    : `${name}: '${entry}' is neither a CIDR nor an address`))(parseNetworks(value));

/** Node timers take at most 2^31 − 1 ms; beyond it they fire at once (CONTRACT 6.5). */
export const MAX_MILLISECONDS = 2147483647;
const millis: Parser<number> = (name, value) =>
  E.chain((n: number) => (n <= MAX_MILLISECONDS ? E.right(n) : E.left(`${name}: must be at most ${MAX_MILLISECONDS}, got '${value}'`)))(positiveInt(name, value));


/** A parameter: its name, how its text is read (errors name it), and its value when it is not given. */
interface Param<A> {
  readonly name: string;
  readonly parse: Parser<A>;
  /** The value when the parameter is absent; `hostname` and the other raw values are at hand for defaults that depend on them. */
  readonly fallback: (c: { readonly hostname: string; readonly raw: RawParameters }) => A;
}

const param = <A>(name: string, parse: Parser<A>, fallback: A): Param<A> => ({ name, parse, fallback: () => fallback });

/** A path-like parameter: present and not blank (trimmed), or absent. */
const path = (name: string): Param<string | undefined> => ({ name, parse: (_n, v) => E.right(v.trim() === '' ? undefined : v.trim()), fallback: () => undefined });

/** Its presence decides `Authentication:ClientCertificates`' default: both entries below use this one name. */
const CLIENT_CA_FILE = 'Http:ClientCaFile';

/** Every startup parameter, grouped as `StartupSettings` holds them. */
const STARTUP = {
  /** The connector Id; required by the connectors (`requireId`), optional for the operator commands. */
  id: { name: 'Id', parse: (_n: string, v: string) => E.right(v.trim()), fallback: () => '' } as Param<string>,
  connectionString: param('ConnectionStrings:Datastore', nonEmptyText, 'localhost:6379'),
  datastore: {
    connectionRetrySeconds: param('Datastore:ConnectionRetrySeconds', seconds, 2),
    streamPollIntervalMilliseconds: param('Datastore:StreamPollIntervalMilliseconds', millis, 500),
    startFromLatest: param('Datastore:StartFromLatest', bool, true),
    configPollIntervalMilliseconds: param('Datastore:ConfigPollIntervalMilliseconds', millis, 1000),
    streamMaxLength: param('Datastore:StreamMaxLength', positiveInt, 100000),
    /** The consumer name in the group; stable across restarts so own pending entries are re-read. The host's name by default. */
    consumerName: { name: 'Datastore:ConsumerName', parse: consumerNameText, fallback: (c) => c.hostname } as Param<string>,
    /** A consumer that has not read for this long is taken for dead and its entries claimed (CONTRACT 4.3: 60 s). */
    claimIdleMilliseconds: param('Datastore:ClaimIdleMilliseconds', millis, 60000),
    claimIntervalMilliseconds: param('Datastore:ClaimIntervalMilliseconds', millis, 30000),
    /** A data-store command unanswered this long fails (503), and the store counts as stalled. */
    commandTimeoutMilliseconds: param('Datastore:CommandTimeoutMilliseconds', millis, 5000),
    /** PEM files for TLS to Redis (and sentinels): CA, client certificate and key (mutual TLS). */
    tlsCaFile: path('Datastore:TlsCaFile'),
    tlsCertFile: path('Datastore:TlsCertFile'),
    tlsKeyFile: path('Datastore:TlsKeyFile'),
    /** CONTRACT 5.1.1: replicas that must acknowledge an inbound write before it is answered 200 (WAIT). */
    waitReplicas: param('Datastore:WaitReplicas', nonNegativeInt, 0),
    waitTimeoutMilliseconds: param('Datastore:WaitTimeoutMilliseconds', millis, 1000),
    /** CONTRACT 6.6: start-up fails (exit 2) unless Redis's maxmemory_policy is noeviction. */
    requireNoEviction: param('Datastore:RequireNoEviction', bool, false),
    /** CONTRACT 6.6: how often the policy and the evictions are read (60 s). */
    memoryCheckIntervalMilliseconds: param('Datastore:MemoryCheckIntervalMilliseconds', millis, 60000),
  },
  webhooks: {
    batchWindowMilliseconds: param('Webhooks:BatchWindowMilliseconds', millis, 100),
    batchMaxSize: param('Webhooks:BatchMaxSize', positiveInt, 1000),
    timeoutMilliseconds: param('Webhooks:TimeoutMilliseconds', millis, 10000),
    maxAttempts: param('Webhooks:MaxAttempts', positiveInt, 5),
    maxInFlight: param('Webhooks:MaxInFlight', positiveInt, 4),
    /** How long a graceful stop waits for in-flight deliveries (CONTRACT 4.3). */
    stopTimeoutMilliseconds: param('Webhooks:StopTimeoutMilliseconds', stopTimeout, 8000),
    /** CONTRACT 4.4: circuit, probes, redrive and the backlog's cap. */
    circuitFailureThreshold: param('Webhooks:CircuitFailureThreshold', positiveInt, 3),
    probeIntervalSeconds: param('Webhooks:ProbeIntervalSeconds', seconds, 5),
    autoRedrive: param('Webhooks:AutoRedrive', bool, true),
    deadLetterMaxLength: param('Webhooks:DeadLetterMaxLength', positiveInt, 100000),
    /** CONTRACT 6.7: where webhook and token requests may connect. */
    allowedNetworks: param('Webhooks:AllowedNetworks', networks, [] as readonly string[]),
    /** CONTRACT 4.7: the longest rendered body of one webhook request, uncompressed, any format (16 MiB). */
    maxBodyBytes: param('Webhooks:MaxBodyBytes', positiveInt, 16777216),
  },
  http: {
    maxBodyBytes: param('Http:MaxBodyBytes', positiveInt, 1048576),
    /** CONTRACT 5.5: the most objects an array body may hold. */
    maxBatchItems: param('Http:MaxBatchItems', positiveInt, DEFAULT_MAX_BATCH_ITEMS),
    /** CONTRACT 6.5: connection and memory budgets. */
    maxConnections: param('Http:MaxConnections', positiveInt, 1024),
    headersTimeoutMilliseconds: param('Http:HeadersTimeoutMilliseconds', millis, 10000),
    requestTimeoutMilliseconds: param('Http:RequestTimeoutMilliseconds', millis, 30000),
    maxBodyBytesInFlight: param('Http:MaxBodyBytesInFlight', positiveInt, 67108864),
    /** CONTRACT 5.1.1: how long an Idempotency-Key's answer is kept. */
    idempotencyTtlSeconds: param('Http:IdempotencyTtlSeconds', positiveInt, 86400),
    /** Where the running connector records the address it listens on, for `rest-connector healthcheck`. */
    addressFile: path('Http:AddressFile'),
    /** CONTRACT 7.1: the https listeners' certificate chain and key (PEM), watched for changes. */
    tlsCertFile: path('Http:TlsCertFile'),
    tlsKeyFile: path('Http:TlsKeyFile'),
    /** CONTRACT 7.1: the CA that signs client certificates; with it, https clients are asked for one. */
    clientCaFile: path(CLIENT_CA_FILE),
    /** CONTRACT 6.8: serve the operator page at `/` and its files under `/ui/`. */
    operatorPage: param('Http:OperatorPage', bool, true),
  },
  apiKeys: param('Authentication:ApiKeys', keyList, [] as readonly ApiKey[]),
  /** CONTRACT 7.1: `optional` by default when `Http:ClientCaFile` is set, else `off`. */
  clientCertificates: {
    name: 'Authentication:ClientCertificates',
    parse: clientCertificates,
    fallback: (c) => ((c.raw.get(CLIENT_CA_FILE.toLowerCase())?.trim() ?? '') !== '' ? 'optional' : 'off'),
  } as Param<ClientCertificates>,
};

type Values<S> = { readonly [K in keyof S]: S[K] extends Param<infer A> ? A : Values<S[K]> };
type Names<S> = { readonly [K in keyof S]: S[K] extends Param<unknown> ? string : Names<S[K]> };

export type StartupSettings = Values<typeof STARTUP>;

const isParam = (u: unknown): u is Param<unknown> => typeof (u as Param<unknown>).parse === 'function';

const namesOf = <S extends object>(spec: S): Names<S> =>
  Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, isParam(v) ? v.name : namesOf(v as object)])) as Names<S>;

/** The canonical spelling of every parameter, as the README and error messages show it (`PARAMETERS.http.tlsCertFile`). */
export const PARAMETERS = namesOf(STARTUP);

/**
 * Flattens `appsettings.json` (nested objects → `a:b`) and the environment (`A__B` → `a:b`)
 * into one map of lower-case keys; the environment wins.
 */
export const collectRaw = (
  appsettings: unknown,
  env: Readonly<Record<string, string | undefined>>,
): RawParameters => {
  const out = new Map<string, string>();
  const spelled = new Map<string, string>();
  const walk = (value: unknown, prefix: string): void => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, prefix === '' ? k : `${prefix}:${k}`);
    } else if (prefix !== '' && value !== null && value !== undefined) {
      out.set(prefix.toLowerCase(), Array.isArray(value) ? value.join(',') : String(value));
      spelled.set(prefix.toLowerCase(), `${prefix} (appsettings.json)`);
    }
  };
  walk(appsettings, '');
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    out.set(k.replace(/__/g, ':').toLowerCase(), v);
    spelled.set(k.replace(/__/g, ':').toLowerCase(), k);
  }
  return Object.assign(out, { spelled });
};

/** The canonical spelling of every parameter (both connectors': one environment may serve both). */
const KNOWN: readonly string[] = (function names(spec: object): string[] {
  return Object.values(spec).flatMap((v) => (isParam(v) ? [v.name] : names(v as object)));
})(STARTUP);

/** Every startup parameter that does not parse is reported, not only the first. */
export const loadStartupSettings = (
  raw: RawParameters,
  options: { requireId: boolean; hostname: string },
): E.Either<string[], StartupSettings> => {
  const errors: string[] = unknownParameters(raw, KNOWN);
  const context = { hostname: options.hostname, raw };
  const decode = (spec: object): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [key, p] of Object.entries(spec)) {
      if (!isParam(p)) {
        out[key] = decode(p as object);
        continue;
      }
      const text = raw.get(p.name.toLowerCase());
      const fallback = p.fallback(context);
      const value = text === undefined ? fallback : E.getOrElse((msg: string) => (errors.push(msg), fallback))(p.parse(p.name, text));
      // an optional parameter not given is no property at all, as the type has it
      if (value !== undefined) out[key] = value;
    }
    return out;
  };
  if (options.requireId && (raw.get(PARAMETERS.id.toLowerCase())?.trim() ?? '') === '') {
    errors.push(`${PARAMETERS.id}: the connector Id is required (set the environment variable Id)`);
  }
  const settings = decode(STARTUP) as unknown as StartupSettings;
  if (settings.clientCertificates !== 'off' && settings.http.clientCaFile === undefined) {
    errors.push(`${PARAMETERS.clientCertificates}: ${settings.clientCertificates} needs ${PARAMETERS.http.clientCaFile} (the CA that signs client certificates)`);
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
