import { refusalOf } from './networks';
import * as t from 'io-ts';
import { intIn, objectOf, positiveNumber } from './codecs';
import { safeUrl } from './urls';
import { FilterCodec, headers, OAuth2Codec, secrets, TlsCodec, webhookUrl, type Ranges } from './webhookCodecs';
import { CompressionCodec, FormatCodec, influxPrecision, type Compression, type FormatSettings } from './formatSettings';
import * as E from 'fp-ts/Either';
import { ReportCodec, type DeadbandRule, type ReportSettings } from './reportSettings';

/**
 * A webhook's settings (CONTRACT 4.2, 4.4–4.6): every field declared once, in `WEBHOOK_FIELDS` —
 * its codec (errors name `webhooks[N].<field>`), its value after defaults, its part of the
 * webhook's fingerprint, and how the status (`GET /api/webhooks`, with its OpenAPI schema) and the
 * "configuration loaded" line show it. A new field is one more entry there (and its meaning where
 * it acts: `src/streams/webhook/`).
 */
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
  /** CONTRACT 4.7: the body's format; absent, `datapoints`. */
  readonly format?: FormatSettings;
  /** CONTRACT 4.7: gzip or not (absent: none). */
  readonly compression?: Compression;
  /** CONTRACT 4.8: report by exception; absent, every matching entry. */
  readonly report?: ReportSettings;
}

export type { Ranges } from './webhookCodecs';

/** Which points a webhook gets: a field given matches when the point's value lies in one of its ranges; a field left out matches everything. */
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

/** A filter as configured again (`[10, "20-29"]`), for the status and the log. */
export const filterForShow = (f: PointFilter): Record<string, Array<number | string>> => {
  const show = (r: Ranges) => r.map(([lo, hi]) => (lo === hi ? lo : `${lo}-${hi}`));
  return {
    ...(f.casdu !== undefined ? { casdu: show(f.casdu) } : {}),
    ...(f.ioa !== undefined ? { ioa: show(f.ioa) } : {}),
    ...(f.types !== undefined ? { types: show(f.types) } : {}),
  };
};

/** A `report` as configured again (its rules' filters as `filterForShow` writes them), for the status and the log. */
export const reportForShow = (r: ReportSettings): Record<string, unknown> => ({
  ...(r.deadband !== undefined
    ? { deadband: r.deadband.map((d: DeadbandRule) => ({ ...(d.filter !== undefined ? { filter: filterForShow(d.filter) } : {}), ...('absolute' in d ? { absolute: d.absolute } : { percent: d.percent }) })) }
    : {}),
  ...(r.maxSilenceSeconds !== undefined ? { maxSilenceSeconds: r.maxSilenceSeconds } : {}),
});

const byName = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** One field of a webhook's stored settings, and everything the product does with its value. */
interface WebhookField<A> {
  readonly codec: t.Type<A, unknown, unknown>;
  readonly required?: true;
  /** The webhook's properties it gives, after defaults (the stored value absent: `undefined`). */
  readonly merge: (stored: A | undefined) => Partial<Webhook>;
  /**
   * Its part of the webhook's fingerprint: two webhooks are the same (CONTRACT 2) when every part
   * is, and a 410 mark (CONTRACT 4.5) holds a digest of it. A field added later gives nothing while
   * it is not set, so that the webhooks without it keep the fingerprint they had.
   */
  readonly fingerprint: (w: Webhook) => readonly unknown[];
  /** As `GET /api/webhooks` shows it (CONTRACT 4.4–4.6), with its schema; never a secret or a file's contents. */
  readonly status?: { readonly show: (w: Webhook) => unknown; readonly schema: object };
  /** As the "configuration loaded" line shows it (CONTRACT 6.2); nothing while it is not set. */
  readonly log?: (w: Webhook) => Readonly<Record<string, unknown>>;
}

const field = <A>(f: WebhookField<A>): WebhookField<A> => f;

/** Every field of a webhook, in the order errors, fingerprints, the status and the log list them. */
export const WEBHOOK_FIELDS = {
  url: field({
    codec: webhookUrl, required: true,
    merge: (url) => ({ url: url! }),
    fingerprint: (w) => [w.url],
    log: (w) => ({ url: safeUrl(w.url) }),
  }),
  headers: field({
    codec: headers,
    merge: (h) => ({ headers: h ?? {} }),
    fingerprint: (w) => [Object.entries(w.headers).sort(byName)],
    // names only: a value may be a credential
    log: (w) => ({ headerNames: Object.keys(w.headers) }),
  }),
  secret: field({
    codec: secrets,
    merge: (s) => ({ secrets: s ?? [] }),
    fingerprint: (w) => [w.secrets],
    log: (w) => ({ secrets: w.secrets.length }),
  }),
  filter: field({
    codec: FilterCodec as t.Type<PointFilter, unknown, unknown>,
    merge: (filter) => (filter === undefined ? {} : { filter }),
    fingerprint: (w) => [w.filter === undefined ? null : [w.filter.casdu ?? null, w.filter.ioa ?? null, w.filter.types ?? null]],
    status: {
      show: (w) => (w.filter === undefined ? null : filterForShow(w.filter)),
      schema: {
        type: ['object', 'null'], description: 'the points this webhook gets, as configured (null: all of them)',
        properties: Object.fromEntries(['casdu', 'ioa', 'types'].map((f) => [f, { type: 'array', items: { type: ['integer', 'string'] } }])),
      },
    },
    log: (w) => (w.filter === undefined ? {} : { filter: filterForShow(w.filter) }),
  }),
  maxRequestsPerSecond: field({
    codec: positiveNumber,
    merge: (n) => (n === undefined ? {} : { maxRequestsPerSecond: n }),
    fingerprint: (w) => [w.maxRequestsPerSecond ?? null],
    status: { show: (w) => w.maxRequestsPerSecond ?? null, schema: { type: ['number', 'null'], description: 'its rate cap (null: none)' } },
    log: (w) => (w.maxRequestsPerSecond === undefined ? {} : { maxRequestsPerSecond: w.maxRequestsPerSecond }),
  }),
  tls: field({
    codec: TlsCodec as t.Type<WebhookTls, unknown, unknown>,
    merge: (tls) => (tls === undefined ? {} : { tls }),
    fingerprint: (w) => [w.tls === undefined ? null : [w.tls.caFile ?? null, w.tls.certFile ?? null, w.tls.keyFile ?? null, w.tls.serverName ?? null]],
    status: { show: (w) => w.tls !== undefined, schema: { type: 'boolean', description: 'whether it has TLS settings of its own (never their contents)' } },
    log: (w) => (w.tls === undefined ? {} : { tls: true }),
  }),
  auth: field({
    codec: t.type({ oauth2: OAuth2Codec }) as t.Type<{ oauth2: OAuth2Settings }, unknown, unknown>,
    merge: (auth) => (auth === undefined ? {} : { auth: { oauth2: auth.oauth2 } }),
    fingerprint: (w) => [w.auth === undefined ? null : Object.entries(w.auth.oauth2).sort(byName)],
    status: { show: (w) => (w.auth !== undefined ? 'oauth2' : null), schema: { type: ['string', 'null'], enum: ['oauth2', null], description: 'how it authenticates beyond static headers' } },
    log: (w) => (w.auth === undefined ? {} : { auth: 'oauth2' }),
  }),
  initialState: field({
    codec: t.boolean,
    merge: (b) => (b === true ? { initialState: true as const } : {}),
    // with integrityPeriodSeconds, and only when either is set (they came together, after the fields above)
    fingerprint: (w) => (w.initialState === true || w.integrityPeriodSeconds !== undefined ? [w.initialState === true, w.integrityPeriodSeconds ?? null] : []),
    status: { show: (w) => w.initialState === true, schema: { type: 'boolean', description: 'whether it gets the process image before its first live batch' } },
    log: (w) => (w.initialState === true ? { initialState: true } : {}),
  }),
  integrityPeriodSeconds: field({
    codec: intIn(10, 86400),
    merge: (s) => (s === undefined ? {} : { integrityPeriodSeconds: s }),
    // part of initialState's
    fingerprint: () => [],
    status: { show: (w) => w.integrityPeriodSeconds ?? null, schema: { type: ['integer', 'null'], description: 'the period of its periodic interrogations (null: none)' } },
    log: (w) => (w.integrityPeriodSeconds === undefined ? {} : { integrityPeriodSeconds: w.integrityPeriodSeconds }),
  }),
  format: field({
    codec: FormatCodec,
    // `datapoints` given is the default: the same webhook as one without it
    merge: (f) => (f === undefined || f.type === 'datapoints' ? {} : { format: f }),
    fingerprint: (w) => (w.format === undefined ? [] : [Object.entries(w.format).sort(byName)]),
    status: { show: (w) => w.format?.type ?? 'datapoints', schema: { type: 'string', enum: ['datapoints', 'ndjson', 'influx-line', 'jsonata'], description: 'the format of its request bodies' } },
    log: (w) => (w.format === undefined ? {} : { format: w.format.type }),
  }),
  compression: field({
    codec: CompressionCodec,
    merge: (c) => (c === 'gzip' ? { compression: 'gzip' as const } : {}),
    fingerprint: (w) => (w.compression === undefined ? [] : [w.compression]),
    status: { show: (w) => w.compression ?? 'none', schema: { type: 'string', enum: ['none', 'gzip'], description: 'how its request bodies are compressed' } },
    log: (w) => (w.compression === undefined ? {} : { compression: w.compression }),
  }),
  report: field({
    codec: ReportCodec,
    merge: (r) => (r === undefined ? {} : { report: r }),
    fingerprint: (w) => (w.report === undefined ? [] : [JSON.stringify(reportForShow(w.report))]),
    status: {
      show: (w) => (w.report === undefined ? null : reportForShow(w.report)),
      schema: {
        type: ['object', 'null'], description: 'report by exception (CONTRACT 4.8), as configured (null: every matching entry is sent)',
        properties: {
          deadband: { type: 'array', items: { type: 'object', properties: { filter: { type: 'object' }, absolute: { type: 'number' }, percent: { type: 'number' } } } },
          maxSilenceSeconds: { type: 'integer' },
        },
      },
    },
    log: (w) => (w.report === undefined ? {} : { report: reportForShow(w.report) }),
  }),
};

type Fields = typeof WEBHOOK_FIELDS;
const FIELD_LIST = Object.entries(WEBHOOK_FIELDS) as Array<[keyof Fields, WebhookField<unknown>]>;

export const WebhookCodec = objectOf(WEBHOOK_FIELDS as unknown as Record<string, WebhookField<unknown>>);

/** A webhook as stored, decoded, with every field's default. */
export const webhookWithDefaults = (stored: Readonly<Record<string, unknown>>): Webhook =>
  Object.assign({}, ...FIELD_LIST.map(([k, f]) => f.merge(stored[k]))) as Webhook;

/** What the codecs cannot see alone: fields that exclude or require each other (CONTRACT 4.5). */
export const webhookProblems = (w: Webhook, i: number): string[] => {
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
  // CONTRACT 4.7: the timestamps' unit, from the URL or the format, never two different ones
  if (w.format?.type === 'influx-line') {
    const p = influxPrecision(w.url, w.format, at);
    if (E.isLeft(p)) out.push(...p.left);
  }
  return out;
};

/** One webhook's settings in a canonical form (key order does not count). */
export const webhookFingerprint = (w: Webhook): unknown[] => FIELD_LIST.flatMap(([, f]) => f.fingerprint(w));

/** The webhook as its status shows its settings (`GET /api/webhooks`, CONTRACT 4.4–4.6). */
export const webhookShown = (w: Webhook): Record<string, unknown> =>
  Object.fromEntries(FIELD_LIST.flatMap(([k, f]) => (f.status === undefined ? [] : [[k, f.status.show(w)]])));

/** The status's settings fields and their schemas, for the OpenAPI document. */
export const WEBHOOK_SHOWN_SCHEMA: Readonly<Record<string, object>> =
  Object.fromEntries(FIELD_LIST.flatMap(([k, f]) => (f.status === undefined ? [] : [[k, f.status.schema]])));

/** The webhook as the "configuration loaded" line shows it (CONTRACT 6.2, 6.5): no header value, secret or file contents. */
export const webhookForLog = (w: Webhook): Record<string, unknown> => Object.assign({}, ...FIELD_LIST.map(([, f]) => f.log?.(w) ?? {}));

/**
 * CONTRACT 6.7: a webhook `url` or `auth.oauth2.tokenUrl` whose host is a literal address that
 * `Webhooks:AllowedNetworks` (and the blocked ranges) refuses is a configuration error naming the
 * field. A name is checked on what it resolves to, at every connection. Takes the webhooks as
 * decoded or as the file holds them, so that `config validate` lists these problems whatever else
 * in the file fails: a value that is no URL is left to the decoder's message.
 */
export const literalAddressProblems = (webhooks: readonly unknown[], allowed: readonly string[]): string[] =>
  webhooks.flatMap((w, i) => {
    const field = (o: unknown, key: string): unknown => (o !== null && typeof o === 'object' && Object.hasOwn(o, key) ? (o as Record<string, unknown>)[key] : undefined);
    const fields: Array<[string, unknown]> = [['url', field(w, 'url')], ['auth.oauth2.tokenUrl', field(field(field(w, 'auth'), 'oauth2'), 'tokenUrl')]];
    return fields.flatMap(([name, url]) => {
      if (typeof url !== 'string' || !URL.canParse(url)) return [];
      const host = new URL(url).hostname;
      const why = refusalOf(allowed, host);
      return why === undefined ? [] : [`webhooks[${i}].${name}: the connector may not connect to ${host} (${why})`];
    });
  });
