import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import * as t from 'io-ts';
import type { Mapping } from '../mapping/types';
import { tooDeep } from '../mapping/render';
import { describe, refine } from './codecs';
import { mappingFingerprint, MappingCodec, mappingProblems, mappingWithDefaults } from './mappingSettings';
import { formatErrors } from './report';
import { callerProblems, CallersCodec, callersView, type Callers } from './callerSettings';
import type { StartupSettings } from './startup';
import { literalAddressProblems, webhookFingerprint, webhookForLog, webhookProblems, WebhookCodec, webhookWithDefaults, type Webhook } from './webhookSettings';

/**
 * CONTRACT 2: the managed settings under `connectors:{ID}:config`, after defaults. A webhook's
 * fields are declared in `webhookSettings.ts`, a mapping's in `mappingSettings.ts`; the connector's
 * own here.
 */
export interface ManagedSettings {
  readonly displayName: string;
  readonly description: string;
  readonly logLevel: PinoLevel;
  readonly isActive: boolean;
  readonly hostUrls: readonly HostUrl[];
  readonly webhooks: readonly Webhook[];
  readonly mappings: readonly Mapping[];
  /** CONTRACT 7.2: what each named caller may do; undefined (absent) lets every authenticated caller do everything. */
  readonly callers?: Callers;
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

const LOG_LEVELS: Record<string, PinoLevel> = {
  trace: 'trace', debug: 'debug', information: 'info', warning: 'warn',
  error: 'error', critical: 'fatal', none: 'silent',
};

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

const SettingsCodec = t.partial({
  displayName: t.string,
  description: t.string,
  logLevel,
  isActive: t.boolean,
  hostUrls: t.array(hostUrl),
  webhooks: t.array(WebhookCodec),
  mappings: t.array(MappingCodec),
  callers: CallersCodec,
});

export const DEFAULT_HOST_URL = 'http://0.0.0.0:8080';

const withDefaults = (s: t.TypeOf<typeof SettingsCodec>): ManagedSettings => ({
  displayName: s.displayName ?? '',
  description: s.description ?? '',
  logLevel: s.logLevel ?? 'info',
  isActive: s.isActive ?? true,
  hostUrls: s.hostUrls ?? [{ url: DEFAULT_HOST_URL, https: false, host: '0.0.0.0', port: 8080 }],
  webhooks: (s.webhooks ?? []).map((w) => webhookWithDefaults(w as Record<string, unknown>)),
  mappings: (s.mappings ?? []).map((m) => mappingWithDefaults(m as Record<string, unknown>)),
  ...(s.callers !== undefined ? { callers: s.callers } : {}),
});

/** Decodes an already-parsed JSON value; every problem is reported with its field path. */
export const decodeManagedSettings = (u: unknown): E.Either<string[], ManagedSettings> => {
  if (u === null || typeof u !== 'object' || Array.isArray(u)) return E.left([`(root): must be a JSON object, got ${describe(u)}`]);
  return pipe(
    SettingsCodec.decode(u),
    E.mapLeft(formatErrors),
    E.map(withDefaults),
    E.chain((s) => {
      const problems = [...mappingProblems(s.mappings), ...s.webhooks.flatMap(webhookProblems)];
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
  webhooks: s.webhooks.map(webhookForLog),
  mappings: s.mappings.length,
  ...(s.callers !== undefined ? { callers: [...s.callers.keys()] } : {}),
});

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
        ? s.mappings.map(mappingFingerprint)
        : [],
    // both connectors act on the callers (CONTRACT 7.2: a change of them is a configuration change)
    callers: s.callers === undefined ? null : callersView(s.callers),
  });

/**
 * What is wrong with settings that decode, given the startup parameters: a webhook URL that is a
 * literal address the network rule refuses (CONTRACT 6.7; the outbound's, and `config validate`'s),
 * callers without authentication (7.2). Checked at start, on a change, and by the config commands.
 */
export const startupProblems = (kind: 'outbound' | 'inbound' | 'both', s: ManagedSettings, startup: StartupSettings): string[] => [
  ...(kind !== 'inbound' ? literalAddressProblems(s.webhooks, startup.webhooks.allowedNetworks) : []),
  ...callerProblems(s.callers, startup),
];
