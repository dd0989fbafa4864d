import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import * as t from 'io-ts';
import { compilePath, type CompiledPath } from '../mapping/path';
import { CASDU_MAX, IOA_MAX, TYPE_CODES, VALUE_TYPES, type Mapping, type TypeCode, type ValueType } from '../mapping/types';
import { formatErrors } from './report';
import { renderValue, tooDeep } from '../mapping/render';
import { safeUrl } from './urls';

/** CONTRACT 2: the managed settings under `connectors:{ID}:config`, after defaults. */
export interface ManagedSettings {
  readonly displayName: string;
  readonly description: string;
  readonly logLevel: PinoLevel;
  readonly isActive: boolean;
  readonly hostUrls: readonly HostUrl[];
  readonly webhooks: readonly Webhook[];
  readonly mappings: readonly Mapping[];
}

export type PinoLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export interface HostUrl {
  readonly url: string;
  /** CONTRACT 7.1: https listeners serve the certificate of `Http:TlsCertFile`. */
  readonly https: boolean;
  /** `undefined` means every interface (`*`, `+`, `[::]`). */
  readonly host: string | undefined;
  readonly port: number;
}

export interface Webhook {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Every current signing secret (CONTRACT 6.4): each one signs; empty means unsigned. */
  readonly secrets: readonly string[];
  /** CONTRACT 4.5: the points it gets; absent, all of them. */
  readonly filter?: PointFilter;
  /** CONTRACT 4.5: requests per second at most; absent, unlimited. */
  readonly maxRequestsPerSecond?: number;
  /** CONTRACT 4.5: its own TLS settings (file names: read at start, see `webhookFiles.ts`). */
  readonly tls?: WebhookTls;
  /** CONTRACT 4.5: the OAuth 2.0 client-credentials grant, in place of a static Authorization header. */
  readonly auth?: { readonly oauth2: OAuth2Settings };
  /** CONTRACT 4.6: an interrogation once per URL before its first live batch. */
  readonly initialState?: true;
  /** CONTRACT 4.6: a periodic interrogation this many seconds after the previous one ended (10 to 86400). */
  readonly integrityPeriodSeconds?: number;
}

/** Inclusive ranges of integers; a single value is a range of one. */
export type Ranges = readonly (readonly [number, number])[];

/** A field given matches when the point's value lies in one of its ranges; a field left out matches everything. */
export interface PointFilter {
  readonly casdu?: Ranges;
  readonly ioa?: Ranges;
  readonly types?: Ranges;
}

export interface WebhookTls {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
  readonly serverName?: string;
}

export interface OAuth2Settings {
  readonly tokenUrl: string;
  readonly clientId: string;
  /** Exactly one of the two. */
  readonly clientSecret?: string;
  readonly clientSecretFile?: string;
  readonly scope?: string;
  readonly audience?: string;
  readonly caFile?: string;
}

const LOG_LEVELS: Record<string, PinoLevel> = {
  trace: 'trace', debug: 'debug', information: 'info', warning: 'warn',
  error: 'error', critical: 'fatal', none: 'silent',
};

const refine = <A>(name: string, check: (u: unknown) => E.Either<string, A>): t.Type<A, unknown, unknown> =>
  new t.Type<A, unknown, unknown>(
    name,
    (u): u is A => E.isRight(check(u)),
    (u, c) => pipe(check(u), E.fold((message) => t.failure(u, c, message), (a) => t.success(a))),
    (a) => a,
  );

/** An optional field: absent is fine, present must decode (no union, so errors keep one message). */
const optional = <A>(codec: t.Type<A, unknown, unknown>): t.Type<A | undefined, unknown, unknown> =>
  new t.Type<A | undefined, unknown, unknown>(
    codec.name,
    (u): u is A | undefined => u === undefined || codec.is(u),
    (u, c) => (u === undefined ? t.success(undefined) : codec.validate(u, c)),
    (a) => a,
  );

const describe = (u: unknown): string => (u === undefined ? 'nothing' : renderValue(u));

const intIn = (min: number, max: number) =>
  refine<number>(`integer ${min}..${max}`, (u) =>
    typeof u === 'number' && Number.isInteger(u) && u >= min && u <= max
      ? E.right(u)
      : E.left(`must be an integer in ${min} to ${max}, got ${describe(u)}`),
  );

const nonEmptyString = refine<string>('non-empty string', (u) =>
  typeof u === 'string' && u.length > 0 ? E.right(u) : E.left(`must be a non-empty string, got ${describe(u)}`),
);

const typeCode = refine<TypeCode>('type code', (u) =>
  (TYPE_CODES as readonly unknown[]).includes(u) ? E.right(u as TypeCode) : E.left(`must be one of 1, 13, 30, 32, 36, got ${describe(u)}`),
);

const valueType = refine<ValueType>('value type', (u) =>
  typeof u === 'string' && (VALUE_TYPES as readonly string[]).includes(u)
    ? E.right(u as ValueType)
    : E.left(`must be one of float, int, bool, string, got ${describe(u)}`),
);

const path = refine<CompiledPath>('path', (u) =>
  typeof u !== 'string'
    ? E.left(`must be a path string, got ${describe(u)}`)
    : pipe(compilePath(u), E.mapLeft((e) => e.message)),
);

const logLevel = refine<PinoLevel>('log level', (u) => {
  const level = typeof u === 'string' ? LOG_LEVELS[u.toLowerCase()] : undefined;
  return level !== undefined
    ? E.right(level)
    : E.left(`must be one of Trace, Debug, Information, Warning, Error, Critical, None, got ${describe(u)}`);
});

const hostUrl = refine<HostUrl>('host URL', (u) => {
  const m = typeof u === 'string' ? /^(https?):\/\/(\[[^\]]*\]|[^:/[\]]+):([0-9]{1,5})\/?$/i.exec(u) : null;
  if (m === null || Number(m[3]) > 65535) return E.left(`must be http://HOST:PORT or https://HOST:PORT, got ${describe(u)}`);
  const rawHost = m[2]!;
  const all = rawHost === '*' || rawHost === '+' || rawHost === '[::]';
  return E.right({ url: u as string, https: m[1]!.toLowerCase() === 'https', host: all ? undefined : rawHost.replace(/^\[(.*)\]$/, '$1'), port: Number(m[3]) });
});

/** Errors show the URL without user information or query (CONTRACT 6.5): either may be a credential. */
const webhookUrl = refine<string>('webhook URL', (u) => {
  if (typeof u !== 'string') return E.left(`must be an http(s) URL, got ${u === undefined ? 'nothing' : typeof u}`);
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return E.left('must be an http(s) URL, got a string that is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return E.left(`must be an http(s) URL, got ${JSON.stringify(`${url.protocol}//${url.host}`)}`);
  if (url.username !== '' || url.password !== '') {
    return E.left(`must not carry user information (${safeUrl(u)}): put credentials in a header, e.g. "Authorization"`);
  }
  return E.right(u);
});

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Headers that define the message's framing or the connection: the client sets them (CONTRACT 6.5). */
const RESERVED_HEADER = /^(content-length|transfer-encoding|connection|host|upgrade|te|trailer|keep-alive|proxy-.*)$/i;
// A header value may not carry CR, LF or NUL: they would split or end the header.
const headers = refine<Record<string, string>>('headers', (u) => {
  if (u === null || typeof u !== 'object' || Array.isArray(u)) return E.left(`must be an object of header names to strings`);
  for (const [name, value] of Object.entries(u)) {
    if (/[\r\n]/.test(name)) return E.left(`header name ${JSON.stringify(name)} contains CR or LF`);
    if (!TOKEN.test(name)) return E.left(`header name ${JSON.stringify(name)} is not a valid HTTP header name`);
    if (RESERVED_HEADER.test(name)) return E.left(`header '${name}' may not be set: it defines the request's framing or connection`);
    if (typeof value !== 'string') return E.left(`header '${name}' must be a string`);
    // The value itself is never echoed: it may be a credential.
    if (/[\r\n\0]/.test(value)) return E.left(`value of header '${name}' contains CR or LF`);
  }
  return E.right(u as Record<string, string>);
});

const secretProblem = (u: unknown): string | undefined => {
  if (typeof u !== 'string' || u.length === 0) return 'must be a non-empty string';
  if (u.startsWith('whsec_') && !/^[A-Za-z0-9+/]+={0,2}$/.test(u.slice(6))) return 'whsec_ secret must be followed by base64';
  return undefined;
};

/** One secret, or a non-empty list of them (rotation: every listed secret signs, CONTRACT 6.4). */
const secrets = refine<readonly string[]>('secret', (u) => {
  const list = Array.isArray(u) ? u : [u];
  if (list.length === 0) return E.left('must be a secret or a non-empty list of secrets');
  for (const [i, s] of list.entries()) {
    const problem = secretProblem(s);
    if (problem !== undefined) return E.left(Array.isArray(u) ? `[${i}] ${problem}` : problem);
  }
  return E.right(list as string[]);
});

/** One item of a filter list: an integer, or an inclusive `"A-B"` range, within `min`..`max`. */
const rangeItem = (min: number, max: number, allowed?: readonly number[]) =>
  refine<readonly [number, number]>('range', (x) => {
    let lo: number;
    let hi: number;
    if (typeof x === 'number' && Number.isInteger(x)) lo = hi = x;
    else {
      const m = typeof x === 'string' ? /^\s*([0-9]+)\s*-\s*([0-9]+)\s*$/.exec(x) : null;
      if (m === null) return E.left(`must be an integer or a range "A-B", got ${describe(x)}`);
      lo = Number(m[1]);
      hi = Number(m[2]);
      if (lo > hi) return E.left(`range ${JSON.stringify(x)} is empty`);
    }
    if (lo < min || hi > max) return E.left(`must lie within ${min} to ${max}, got ${describe(x)}`);
    if (allowed !== undefined && lo === hi && !allowed.includes(lo)) return E.left(`must be one of ${allowed.join(', ')}, got ${lo}`);
    return E.right([lo, hi] as const);
  });

/** `[10, "20-29"]`: a non-empty list of integers and ranges; errors name the item (`ioa[0]`). */
const ranges = (min: number, max: number, allowed?: readonly number[]): t.Type<Ranges, unknown, unknown> => {
  const list = t.array(rangeItem(min, max, allowed));
  return new t.Type<Ranges, unknown, unknown>(
    'ranges',
    (u): u is Ranges => list.is(u) && u.length > 0,
    (u, c) =>
      Array.isArray(u) && u.length === 0
        ? t.failure(u, c, 'must be a non-empty list of integers and "A-B" ranges, got []')
        : list.validate(u, c),
    (a) => a,
  );
};

const FilterCodec = t.exact(t.partial({ casdu: ranges(0, CASDU_MAX), ioa: ranges(0, IOA_MAX), types: ranges(1, 127, TYPE_CODES) }));

const positiveNumber = refine<number>('positive number', (u) =>
  typeof u === 'number' && Number.isFinite(u) && u > 0 ? E.right(u) : E.left(`must be a positive number, got ${describe(u)}`),
);

const fileName = nonEmptyString;
const TlsCodec = t.exact(t.partial({ caFile: fileName, certFile: fileName, keyFile: fileName, serverName: nonEmptyString }));

/** A secret: never echoed in an error, whatever it holds. */
const secretString = refine<string>('secret string', (u) => (typeof u === 'string' && u.length > 0 ? E.right(u) : E.left('must be a non-empty string')));

const OAuth2Codec = t.intersection([
  t.type({ tokenUrl: webhookUrl, clientId: nonEmptyString }),
  t.partial({ clientSecret: secretString, clientSecretFile: fileName, scope: nonEmptyString, audience: nonEmptyString, caFile: fileName }),
]);

const WebhookCodec = t.intersection([
  t.type({ url: webhookUrl, headers: optional(headers), secret: optional(secrets) }),
  t.partial({
    filter: FilterCodec,
    maxRequestsPerSecond: positiveNumber,
    tls: TlsCodec,
    auth: t.type({ oauth2: OAuth2Codec }),
    initialState: t.boolean,
    integrityPeriodSeconds: intIn(10, 86400),
  }),
]);

const MappingCodec = t.type({
  name: nonEmptyString,
  topic: nonEmptyString,
  casdu: intIn(0, CASDU_MAX),
  ioa: intIn(0, IOA_MAX),
  type: typeCode,
  valuePath: path,
  valueType: optional(valueType),
  timestampPath: optional(path),
});

const SettingsCodec = t.partial({
  displayName: t.string,
  description: t.string,
  logLevel,
  isActive: t.boolean,
  hostUrls: t.array(hostUrl),
  webhooks: t.array(WebhookCodec),
  mappings: t.array(MappingCodec),
});

export const DEFAULT_HOST_URL = 'http://0.0.0.0:8080';

const withDefaults = (s: t.TypeOf<typeof SettingsCodec>): ManagedSettings => ({
  displayName: s.displayName ?? '',
  description: s.description ?? '',
  logLevel: s.logLevel ?? 'info',
  isActive: s.isActive ?? true,
  hostUrls: s.hostUrls ?? [{ url: DEFAULT_HOST_URL, https: false, host: '0.0.0.0', port: 8080 }],
  webhooks: (s.webhooks ?? []).map((w) => ({
    url: w.url,
    headers: w.headers ?? {},
    secrets: w.secret ?? [],
    ...(w.filter !== undefined ? { filter: w.filter } : {}),
    ...(w.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: w.maxRequestsPerSecond } : {}),
    ...(w.tls !== undefined ? { tls: w.tls } : {}),
    ...(w.auth !== undefined ? { auth: { oauth2: w.auth.oauth2 } } : {}),
    ...(w.initialState === true ? { initialState: true as const } : {}),
    ...(w.integrityPeriodSeconds !== undefined ? { integrityPeriodSeconds: w.integrityPeriodSeconds } : {}),
  })),
  mappings: (s.mappings ?? []).map((m) => ({
    name: m.name, topic: m.topic, casdu: m.casdu, ioa: m.ioa, type: m.type,
    valuePath: m.valuePath, valueType: m.valueType ?? 'float',
    ...(m.timestampPath !== undefined ? { timestampPath: m.timestampPath } : {}),
  })),
});

const duplicateNames = (mappings: readonly Mapping[]): string[] => {
  const seen = new Map<string, number>();
  return mappings.flatMap((m, i) => {
    const key = JSON.stringify([m.topic, m.name]);
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, i);
      return [];
    }
    return [`mappings[${i}].name: duplicate name '${m.name}' in topic '${m.topic}' (first at mappings[${first}])`];
  });
};

/** What the codecs cannot see alone: fields that exclude or require each other (CONTRACT 4.5). */
const webhookProblems = (w: Webhook, i: number): string[] => {
  const at = `webhooks[${i}]`;
  const out: string[] = [];
  if (w.tls !== undefined && (w.tls.certFile === undefined) !== (w.tls.keyFile === undefined)) {
    out.push(`${at}.tls.${w.tls.certFile === undefined ? 'certFile' : 'keyFile'}: required with tls.${w.tls.certFile === undefined ? 'keyFile' : 'certFile'} (both or neither)`);
  }
  const o = w.auth?.oauth2;
  if (o !== undefined) {
    if (Object.keys(w.headers).some((h) => h.toLowerCase() === 'authorization')) {
      out.push(`${at}.auth: cannot be used together with an Authorization header (headers.Authorization)`);
    }
    if (o.clientSecret === undefined && o.clientSecretFile === undefined) out.push(`${at}.auth.oauth2.clientSecret: required (or clientSecretFile)`);
    if (o.clientSecret !== undefined && o.clientSecretFile !== undefined) out.push(`${at}.auth.oauth2.clientSecretFile: give clientSecret or clientSecretFile, not both`);
  }
  return out;
};

/** Decodes an already-parsed JSON value; every problem is reported with its field path. */
export const decodeManagedSettings = (u: unknown): E.Either<string[], ManagedSettings> => {
  if (u === null || typeof u !== 'object' || Array.isArray(u)) return E.left([`(root): must be a JSON object, got ${describe(u)}`]);
  return pipe(
    SettingsCodec.decode(u),
    E.mapLeft(formatErrors),
    E.map(withDefaults),
    E.chain((s) => {
      const problems = [...duplicateNames(s.mappings), ...s.webhooks.flatMap(webhookProblems)];
      return problems.length > 0 ? E.left(problems) : E.right(s);
    }),
  );
};

/** Limits on the config JSON (CONTRACT 6.5): no value in the key may crash a connector. */
export const CONFIG_MAX_BYTES = 16 * 1024 * 1024;
export const CONFIG_MAX_DEPTH = 16;

/**
 * Decodes the text of the config key (or a config file). Total: any text, however large or deeply
 * nested, gives settings or errors naming the field, and never throws.
 */
export const parseManagedSettings = (text: string): E.Either<string[], ManagedSettings> => {
  if (text.length > CONFIG_MAX_BYTES) return E.left([`(root): larger than ${CONFIG_MAX_BYTES} bytes`]);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return E.left([`(root): not valid JSON: ${(err as Error).message}`]);
  }
  const deep = tooDeep(json, CONFIG_MAX_DEPTH);
  if (deep !== undefined) return E.left([`${deep}: nested deeper than ${CONFIG_MAX_DEPTH} levels`]);
  try {
    return decodeManagedSettings(json);
  } catch (err) {
    return E.left([`(root): cannot be decoded: ${(err as Error).message}`]);
  }
};

export const DEFAULT_SETTINGS: ManagedSettings = withDefaults({});

/**
 * The settings as the "configuration loaded" line shows them: URLs without user information or
 * query, header names without values, the number of secrets (CONTRACT 6.2, 6.5).
 */
export const settingsForLog = (s: ManagedSettings) => ({
  displayName: s.displayName,
  isActive: s.isActive,
  hostUrls: s.hostUrls.map((h) => h.url),
  webhooks: s.webhooks.map((w) => ({
    url: safeUrl(w.url), headerNames: Object.keys(w.headers), secrets: w.secrets.length,
    ...(w.filter !== undefined ? { filter: filterForShow(w.filter) } : {}),
    ...(w.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: w.maxRequestsPerSecond } : {}),
    ...(w.tls !== undefined ? { tls: true } : {}),
    ...(w.auth !== undefined ? { auth: 'oauth2' } : {}),
    ...(w.initialState === true ? { initialState: true } : {}),
    ...(w.integrityPeriodSeconds !== undefined ? { integrityPeriodSeconds: w.integrityPeriodSeconds } : {}),
  })),
  mappings: s.mappings.length,
});

const byName = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** One webhook's settings in a canonical form (key order does not count). */
export const webhookFingerprint = (w: Webhook): unknown[] => [
  w.url, Object.entries(w.headers).sort(byName), w.secrets,
  w.filter === undefined ? null : [w.filter.casdu ?? null, w.filter.ioa ?? null, w.filter.types ?? null],
  w.maxRequestsPerSecond ?? null,
  w.tls === undefined ? null : [w.tls.caFile ?? null, w.tls.certFile ?? null, w.tls.keyFile ?? null, w.tls.serverName ?? null],
  w.auth === undefined ? null : Object.entries(w.auth.oauth2).sort(byName),
  // only when set: a webhook without them keeps the fingerprint (and the 410 mark's digest) it had before they existed
  ...(w.initialState === true || w.integrityPeriodSeconds !== undefined ? [w.initialState === true, w.integrityPeriodSeconds ?? null] : []),
];

/**
 * The settings a connector acts on, as a canonical string: two configurations are "the same"
 * (CONTRACT 2) when these are equal, whatever the key order or unknown fields.
 */
export const settingsFingerprint = (s: ManagedSettings, connector: 'outbound' | 'inbound'): string =>
  JSON.stringify({
    displayName: s.displayName,
    description: s.description,
    logLevel: s.logLevel,
    isActive: s.isActive,
    hostUrls: s.hostUrls.map((h) => [h.https ? 'https' : 'http', h.host ?? '*', h.port]),
    webhooks:
      connector === 'outbound'
        ? s.webhooks.map(webhookFingerprint)
        : [],
    mappings:
      connector === 'inbound'
        ? s.mappings.map((m) => [m.name, m.topic, m.casdu, m.ioa, m.type, m.valuePath.source, m.valueType, m.timestampPath?.source ?? null])
        : [],
  });

/** A filter as configured again (`[10, "20-29"]`), for the status and the log. */
export const filterForShow = (f: PointFilter): Record<string, Array<number | string>> => {
  const show = (r: Ranges) => r.map(([lo, hi]) => (lo === hi ? lo : `${lo}-${hi}`));
  return {
    ...(f.casdu !== undefined ? { casdu: show(f.casdu) } : {}),
    ...(f.ioa !== undefined ? { ioa: show(f.ioa) } : {}),
    ...(f.types !== undefined ? { types: show(f.types) } : {}),
  };
};
