#!/usr/bin/env node
// First: a connector catches stop signals from here on, while the rest loads (see runtime/signals).
import './runtime/signals';
import * as E from 'fp-ts/Either';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { format } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import { parseConnectionString, toRedisOptions, type TlsFiles } from './config/connectionString';
import { parseManagedSettings, type ManagedSettings } from './config/managed';
import { collectRaw, loadStartupSettings, PARAMETERS, type StartupSettings } from './config/startup';
import { parseTime, runDeadletter } from './deadletterCommands';
import { runResend } from './resendCommand';
import type { ClientTracing } from './streams/webhookClient';
import { deliveryDefaults } from './streams/subscription';
import { addressFileSetting, healthcheck } from './healthcheck';
import { applyMappings } from './mapping/apply';
import { byTopic } from './mapping/commands';
import { failureBody } from './mapping/responses';
import { buildInbound } from './runtime/inbound';
import { makeLogger } from './runtime/logger';
import { buildOutbound } from './runtime/outbound';
import { loadWebhookFiles } from './config/webhookFiles';
import { configKey, groupName } from './mapping/keys';
import { startTracing, tracingProtocol } from './runtime/tracing';
import { runConnector, type ConnectorKind, type Outcome } from './runtime/connector';
import { describeConnectionError } from './runtime/datastore';
import { VERSION } from './version';

const HELP: Record<string, string> = {
  main: `rest-connector ${VERSION}

Usage:
  rest-connector outbound                 run the outbound connector (GET /api/datapoints, webhooks)
  rest-connector inbound                  run the inbound connector (POST /api/datapoints?topic=T)
  rest-connector config validate FILE     check a managed-settings file; exit 0, or 2 with every problem
  rest-connector config get --id ID       print connectors:{ID}:config; exit 1 when absent
  rest-connector config set --id ID FILE  validate FILE, then store it as connectors:{ID}:config
  rest-connector mappings test FILE --topic T PAYLOAD.json
                                          apply a topic's mappings to a payload; writes nothing
  rest-connector deadletter list --id ID [--webhook N] [--since T] [--json]
  rest-connector deadletter replay --id ID [--webhook N] [--since T]
  rest-connector deadletter purge --id ID [--webhook N] [--before T]
                                          the webhooks' backlogs (T: ISO 8601 or Unix seconds)
  rest-connector webhooks resend --id ID --webhook N --since T [--until T]
                                          send a past time range of process:updates again
  rest-connector healthcheck              probe /health/live where the running connector listens
                                          (Http:AddressFile); exit 0 healthy, 1 not
  rest-connector --version | --help       (each command also takes --help)

Startup parameters come from ./appsettings.json and environment variables (see README).`,
  outbound: `Usage: rest-connector outbound

Runs the outbound connector: serves GET /api/datapoints and pushes every entry of
process:updates to the configured webhooks. Requires the startup parameter Id (env Id).
Exit status: 0 after SIGTERM/SIGINT or a valid configuration change, 2 on a startup error.`,
  inbound: `Usage: rest-connector inbound

Runs the inbound connector: POST /api/datapoints?topic=T applies the topic's mappings and
writes the data points atomically. Requires the startup parameter Id (env Id).
Exit status: 0 after SIGTERM/SIGINT or a valid configuration change, 2 on a startup error.`,
  'config validate': `Usage: rest-connector config validate FILE

Decodes FILE as managed settings (connectors:{ID}:config). Exit 0 when valid; otherwise
exit 2 and one line per problem, each naming its field (e.g. mappings[3].valuePath).`,
  'config get': `Usage: rest-connector config get --id ID

Prints the stored managed settings of connector ID. Exit 1 when the key is absent.
Connects with ConnectionStrings:Datastore (appsettings.json or ConnectionStrings__Datastore).`,
  'config set': `Usage: rest-connector config set --id ID FILE

Validates FILE, then writes it to connectors:{ID}:config (running connectors with that Id
restart on the change). Exit 2 when FILE is invalid; nothing is written then.`,
  'deadletter list': `Usage: rest-connector deadletter list --id ID [--webhook N] [--since T] [--json]

Lists the entries of connectors:{ID}:deadletter (the webhooks' backlogs), oldest first: ID,
webhook index, reason, attempts, webhook-id, points, URL, error. --json prints one JSON object per
line (every field and the entry's ID). T is ISO 8601 or Unix seconds.`,
  'deadletter replay': `Usage: rest-connector deadletter replay --id ID [--webhook N] [--since T]

Sends each selected entry once, now, to its webhook's current URL (from connectors:{ID}:config),
whatever its reason and the webhook's circuit, with its original webhook-id and a fresh signature;
deletes what was delivered. Prints "delivered N, failed M"; exit 1 when any failed.`,
  'deadletter purge': `Usage: rest-connector deadletter purge --id ID [--webhook N] [--before T]

Deletes the selected entries (all of them without --webhook and --before). Prints "purged N".`,
  'webhooks resend': `Usage: rest-connector webhooks resend --id ID --webhook N --since T [--until T]

Sends the entries of process:updates appended from --since to --until (default: now; T is ISO 8601
or Unix seconds) that match webhook N's filter again, in stream order, to its current URL with its
headers, signature, TLS and auth: at most Webhooks:BatchMaxSize points a request, body
{"datapoints":[…],"cause":"resend"}, webhook-id r-{first}_{last}, each request tried up to
Webhooks:MaxAttempts times. Prints "sent N points in M requests, failed K"; exit 1 when any request
failed, 2 on bad arguments. It does not coordinate with a running connector.`,
  healthcheck: `Usage: rest-connector healthcheck

Reads the address file (startup parameter Http:AddressFile) that a running connector writes once it
listens, and asks /health/live there (2 s at most). Exit 0 when it answers 200; 1 when there is no
record, the process that wrote it is gone, or /health/live does not answer 200 (the reason on
stderr); 2 when Http:AddressFile is not set. The image's HEALTHCHECK runs the same check.`,
  'mappings test': `Usage: rest-connector mappings test FILE --topic T PAYLOAD.json

Applies the mappings of topic T in the settings FILE to the JSON object in PAYLOAD.json and
prints the data points that would be written (exit 0) or the 422 body (exit 1). Writes nothing.`,
};

type Io = { out: (s: string) => void; err: (s: string) => void };

const usage = (io: Io, msg: string, help: string): Outcome => {
  io.err(`${msg}\n\n${help}`);
  return { code: 2 };
};

/** A settings file read and decoded; on failure the outcome to return (every problem on stderr). */
const readSettingsFile = (file: string, io: Io): E.Either<Outcome, { text: string; settings: ManagedSettings }> => {
  const text = readText(file);
  if (E.isLeft(text)) return E.left({ code: 2, message: text.left });
  const decoded = parseManagedSettings(text.right);
  if (E.isLeft(decoded)) {
    io.err(decoded.left.join('\n'));
    return E.left({ code: 2 });
  }
  return E.right({ text: text.right, settings: decoded.right });
};

const readText = (file: string): E.Either<string, string> => {
  try {
    return E.right(readFileSync(file, 'utf8'));
  } catch (err) {
    return E.left(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
};

/** `appsettings.json` in the working directory (optional) and the environment. */
const startupSettings = (requireId: boolean): E.Either<string[], StartupSettings> => {
  let appsettings: unknown = {};
  if (existsSync('appsettings.json')) {
    try {
      appsettings = JSON.parse(readFileSync('appsettings.json', 'utf8'));
    } catch (err) {
      return E.left([`appsettings.json: not valid JSON: ${(err as Error).message}`]);
    }
  }
  return loadStartupSettings(collectRaw(appsettings, process.env), { requireId, hostname: hostname() });
};

/** The connection string and the TLS files, read at start-up: a file that cannot be read is a startup error (exit 2). */
const redisOptionsOf = (s: StartupSettings): E.Either<string[], RedisOptions> => {
  const target = parseConnectionString(s.connectionString);
  if (E.isLeft(target)) return E.left([`${PARAMETERS.connectionString}: ${target.left}`]);
  const errors: string[] = [];
  const files: { -readonly [K in keyof TlsFiles]: TlsFiles[K] } = {};
  const read = (param: string, path: string | undefined, key: keyof TlsFiles) => {
    if (path === undefined) return;
    const text = readText(path);
    if (E.isLeft(text)) errors.push(`${param}: ${text.left}`);
    else if (!text.right.includes('-----BEGIN ')) errors.push(`${param}: ${path} is not a PEM file`);
    else files[key] = text.right;
  };
  read(PARAMETERS.tlsCaFile, s.datastore.tlsCaFile, 'ca');
  read(PARAMETERS.tlsCertFile, s.datastore.tlsCertFile, 'cert');
  read(PARAMETERS.tlsKeyFile, s.datastore.tlsKeyFile, 'key');
  if ((files.cert === undefined) !== (files.key === undefined) && errors.length === 0) {
    errors.push(`${PARAMETERS.tlsCertFile} and ${PARAMETERS.tlsKeyFile} go together (mutual TLS needs both)`);
  }
  if (!target.right.tls && (s.datastore.tlsCaFile ?? s.datastore.tlsCertFile ?? s.datastore.tlsKeyFile) !== undefined) {
    errors.push(`${PARAMETERS.connectionString}: TLS files are set but the connection string does not ask for TLS (add ssl=true, or use rediss://)`);
  }
  return errors.length > 0 ? E.left(errors) : E.right(toRedisOptions(target.right, files));
};

const takeOption = (args: string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0 || i + 1 >= args.length) return undefined;
  const [value] = args.splice(i, 2).slice(1);
  return value;
};

const runConnectorCommand = async (kind: ConnectorKind): Promise<Outcome> => {
  const startup = startupSettings(true);
  const options = E.chain(redisOptionsOf)(startup);
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  if (E.isLeft(options)) return { code: 2, message: options.left.join('; ') };
  const log = makeLogger({ connector: kind, id: startup.right.id, version: VERSION });
  routeConsole(log);
  const outcome = await runConnector(kind, startup.right, options.right, log, kind === 'outbound' ? buildOutbound : buildInbound);
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  return outcome;
};

/**
 * A running connector writes nothing but pino JSON lines: what a library prints with `console`
 * (ioredis reports an error of a connection it made itself, e.g. to a sentinel, that way) and
 * Node's process warnings become log lines of their own.
 */
const routeConsole = (log: ReturnType<typeof makeLogger>): void => {
  const levels = { log: 'info', info: 'info', debug: 'debug', warn: 'warn', error: 'error' } as const;
  for (const [method, level] of Object.entries(levels) as Array<[keyof typeof levels, (typeof levels)[keyof typeof levels]]>) {
    console[method] = (...args: unknown[]) => log[level]({ source: 'library' }, format(...args).slice(0, 4096));
  }
  // Node's own warnings (e.g. NODE_TLS_REJECT_UNAUTHORIZED=0) go to stderr by a default listener
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) => log.warn({ source: 'node', name: w.name, code: w.code }, w.message));
};

/** A short-lived connection for the operator commands: one attempt, no retries. */
const withRedis = async <A>(fn: (r: Redis) => Promise<A>): Promise<E.Either<string, A>> => {
  const startup = startupSettings(false);
  const options = E.chain(redisOptionsOf)(startup);
  if (E.isLeft(options)) return E.left(options.left.join('; '));
  const redis = new Redis({
    ...options.right, lazyConnect: true, retryStrategy: () => null, sentinelRetryStrategy: () => null, maxRetriesPerRequest: 0,
    connectTimeout: options.right.connectTimeout ?? 5000,
  });
  // the cause (WRONGPASS …, a certificate error, ECONNREFUSED host:port) comes as an error event;
  // the rejected promise often says only "Connection is closed."
  let cause: string | undefined;
  redis.on('error', (err: Error) => {
    cause ??= describeConnectionError(err);
  });
  try {
    await redis.connect();
    return E.right(await fn(redis));
  } catch (err) {
    const message = describeConnectionError(err as Error);
    return E.left(`data store: ${cause !== undefined && !message.includes(cause) ? `${cause} (${message})` : message}`);
  } finally {
    redis.disconnect();
  }
};

const configCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const sub = args.shift();
  const help = HELP[`config ${sub}`];
  if (help === undefined) return usage(io, `unknown config command '${sub ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  if (sub === 'validate') {
    if (args.length !== 1) return usage(io, 'config validate takes one FILE', help);
    const file = readSettingsFile(args[0]!, io);
    if (E.isLeft(file)) return file.left;
    // the files its webhooks name (TLS, OAuth 2.0 secrets), as this machine sees them
    const files = loadWebhookFiles(file.right.settings.webhooks);
    if (E.isLeft(files)) {
      io.err(files.left.join('\n'));
      return { code: 2 };
    }
    io.out(`${args[0]}: valid (${file.right.settings.webhooks.length} webhooks, ${file.right.settings.mappings.length} mappings)`);
    return { code: 0 };
  }
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  if (sub === 'get') {
    if (args.length !== 0) return usage(io, `unexpected argument '${args[0]}'`, help);
    const got = await withRedis((r) => r.get(configKey(id)));
    if (E.isLeft(got)) return { code: 1, message: got.left };
    if (got.right === null) return { code: 1, message: `${configKey(id)} is not set` };
    io.out(got.right);
    return { code: 0 };
  }
  if (args.length !== 1) return usage(io, 'config set takes one FILE', help);
  const file = readSettingsFile(args[0]!, io);
  if (E.isLeft(file)) return file.left;
  // Stored as the file's JSON, compacted: unknown fields a newer backend added are kept.
  const stored = JSON.stringify(JSON.parse(file.right.text));
  const set = await withRedis((r) => r.set(configKey(id), stored));
  if (E.isLeft(set)) return { code: 1, message: set.left };
  io.out(`${configKey(id)} written`);
  return { code: 0 };
};

const takeFlag = (args: string[], name: string): boolean => {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};

/**
 * CONTRACT 9 for the operator commands that send to webhooks: traced as the connector's requests
 * are when tracing is on; the spans are sent (5 s at most) before the command ends.
 */
const withCliTracing = async (command: string, id: string, run: (tracing: ClientTracing | undefined) => Promise<Outcome>): Promise<Outcome> => {
  const protocol = tracingProtocol(process.env);
  if (E.isLeft(protocol)) return { code: 2, message: protocol.left };
  const traceLog = makeLogger({ command, id }, process.stderr);
  traceLog.level = 'warn';
  const traces = protocol.right === undefined ? undefined : await startTracing('outbound', process.env, traceLog);
  try {
    return await run(traces === undefined ? undefined : { tracing: traces.tracing, group: groupName(id) });
  } finally {
    await traces?.shutdown(TRACE_FLUSH_MS);
  }
};

/** At most this long is spent at the end of a command sending its spans. */
const TRACE_FLUSH_MS = 5000;

/** The startup parameters' delivery settings (a request's time limit, attempts, batch size), or the defaults. */
const operatorStartup = () => E.orElse(() => loadStartupSettings(collectRaw({}, {}), { requireId: false, hostname: hostname() }))(startupSettings(false));

/** A command of one subcommand (`webhooks resend`, `mappings test`): its help, or the outcome of a wrong one or of --help. */
const onlySubcommand = (args: string[], io: Io, command: string, sub: string): { help: string } | Outcome => {
  const given = args.shift();
  const help = HELP[`${command} ${sub}`]!;
  if (given !== sub) return usage(io, `unknown ${command} command '${given ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  return { help };
};

const webhooksCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const head = onlySubcommand(args, io, 'webhooks', 'resend');
  if (!('help' in head)) return head;
  const { help } = head;
  // every argument is checked before Redis is asked anything (exit 2)
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  const webhookRaw = takeOption(args, '--webhook');
  if (webhookRaw === undefined || !/^[0-9]+$/.test(webhookRaw)) return usage(io, webhookRaw === undefined ? '--webhook N is required' : `--webhook takes a webhook index, got '${webhookRaw}'`, help);
  const sinceRaw = takeOption(args, '--since');
  if (sinceRaw === undefined) return usage(io, '--since T is required', help);
  const since = parseTime(sinceRaw);
  if (since === undefined) return usage(io, `--since takes ISO 8601 or Unix seconds, got '${sinceRaw}'`, help);
  const untilRaw = takeOption(args, '--until');
  const until = untilRaw === undefined ? Date.now() : parseTime(untilRaw);
  if (until === undefined) return usage(io, `--until takes ISO 8601 or Unix seconds, got '${untilRaw}'`, help);
  if (until < since) return usage(io, untilRaw === undefined ? `--since (${sinceRaw}) is in the future` : `--until (${untilRaw}) is before --since (${sinceRaw})`, help);
  if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, help);
  const startup = operatorStartup();
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  const w = startup.right.webhooks;
  return withCliTracing('webhooks resend', id, (tracing) =>
    runResend(
      { id, webhook: Number(webhookRaw), since, until },
      { out: io.out, withRedis, delivery: deliveryDefaults(w), batchMaxSize: w.batchMaxSize, ...(tracing !== undefined ? { tracing } : {}) },
    ),
  );
};

const deadletterCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const sub = args.shift();
  const help = HELP[`deadletter ${sub}`];
  if (help === undefined || (sub !== 'list' && sub !== 'replay' && sub !== 'purge')) return usage(io, `unknown deadletter command '${sub ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  const id = takeOption(args, '--id');
  if (id === undefined || id.trim() === '') return usage(io, '--id ID is required', help);
  const webhookRaw = takeOption(args, '--webhook');
  if (webhookRaw !== undefined && !/^[0-9]+$/.test(webhookRaw)) return usage(io, `--webhook takes a webhook index, got '${webhookRaw}'`, help);
  const times: Partial<Record<'since' | 'before', number>> = {};
  for (const name of sub === 'purge' ? (['before'] as const) : (['since'] as const)) {
    const raw = takeOption(args, `--${name}`);
    if (raw === undefined) continue;
    const t = parseTime(raw);
    if (t === undefined) return usage(io, `--${name} takes ISO 8601 or Unix seconds, got '${raw}'`, help);
    times[name] = t;
  }
  const json = sub === 'list' && takeFlag(args, '--json');
  if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, help);
  const startup = operatorStartup();
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  const run = (tracing: ClientTracing | undefined) =>
    runDeadletter(
      { sub, id, json, ...(webhookRaw !== undefined ? { webhook: Number(webhookRaw) } : {}), ...times },
      { out: io.out, withRedis, delivery: deliveryDefaults(startup.right.webhooks), now: Date.now, ...(tracing !== undefined ? { tracing } : {}) },
    );
  // CONTRACT 9: a replayed request is traced as a redriven one is, when tracing is on
  return sub === 'replay' ? withCliTracing('deadletter replay', id, run) : run(undefined);
};

const mappingsCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const head = onlySubcommand(args, io, 'mappings', 'test');
  if (!('help' in head)) return head;
  const { help } = head;
  const topic = takeOption(args, '--topic');
  if (topic === undefined || topic === '') return usage(io, '--topic T is required', help);
  if (args.length !== 2) return usage(io, 'mappings test takes FILE and PAYLOAD.json', help);
  const [settingsFile, payloadFile] = args as [string, string];
  const decoded = readSettingsFile(settingsFile, io);
  if (E.isLeft(decoded)) return decoded.left;
  const payloadText = readText(payloadFile);
  if (E.isLeft(payloadText)) return { code: 2, message: payloadText.left };
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText.right);
  } catch (err) {
    return { code: 2, message: `${payloadFile}: not valid JSON: ${(err as Error).message}` };
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return { code: 2, message: `${payloadFile}: the payload must be a JSON object` };
  const mappings = byTopic(decoded.right.settings.mappings).get(topic);
  if (mappings === undefined) return { code: 2, message: `No mappings are configured for topic '${topic}'` };
  const source = process.env.Id ?? process.env.ID ?? 'mappings-test';
  const result = applyMappings(mappings, payload, new Date().toISOString(), source);
  if (E.isLeft(result)) {
    io.out(JSON.stringify(failureBody(topic, result.left), null, 2));
    return { code: 1 };
  }
  io.out(JSON.stringify({ topic, succeeded: result.right.map((p) => p.mapping.name), datapoints: result.right.map((p) => p.point) }, null, 2));
  return { code: 0 };
};

export const main = async (argv: string[], io: Io): Promise<Outcome> => {
  const args = [...argv];
  const command = args.shift();
  switch (command) {
    case undefined:
    case '--help':
    case '-h':
      io.out(HELP.main!);
      return { code: command === undefined ? 2 : 0 };
    case '--version':
    case '-v':
      io.out(VERSION);
      return { code: 0 };
    case 'outbound':
    case 'inbound':
      if (args.includes('--help')) {
        io.out(HELP[command]!);
        return { code: 0 };
      }
      if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, HELP[command]!);
      return runConnectorCommand(command);
    case 'config':
      return configCommand(args, io);
    case 'mappings':
      return mappingsCommand(args, io);
    case 'deadletter':
      return deadletterCommand(args, io);
    case 'webhooks':
      return webhooksCommand(args, io);
    case 'healthcheck': {
      if (args.includes('--help')) {
        io.out(HELP.healthcheck!);
        return { code: 0 };
      }
      if (args.length > 0) return usage(io, `unexpected argument '${args[0]}'`, HELP.healthcheck!);
      const result = await healthcheck(addressFileSetting());
      if (result.code !== 0) return result;
      io.out(result.message);
      return { code: 0 };
    }
    default:
      return usage(io, `unknown command '${command}'`, HELP.main!);
  }
};

if (require.main === module) {
  const io: Io = { out: (s) => process.stdout.write(`${s}\n`), err: (s) => process.stderr.write(`${s}\n`) };
  main(process.argv.slice(2), io).then(
    ({ code, message }) => {
      if (message !== undefined) process.stderr.write(`rest-connector: ${message}\n`);
      // The one place that ends the process: open handles (keep-alive sockets, timers) cannot keep it alive.
      process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`rest-connector: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
