import * as E from 'fp-ts/Either';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { readStartupParameters } from '../config/appsettings';
import { datastoreOptions } from '../config/connectionString';
import { CONFIG_MAX_BYTES, parseManagedSettings, startupProblems, type ManagedSettings } from '../config/managed';
import { literalAddressProblems } from '../config/webhookSettings';
import { collectRaw, loadStartupSettings, UNKNOWN_PARAMETER, type StartupSettings } from '../config/startup';
import { describeConnectionError } from '../runtime/datastore';
import type { Outcome } from '../runtime/connector';
import { HELP } from './help';

/** What every command of the CLI shares: its output, arguments, the startup parameters and a short-lived Redis connection. */

export type Io = { readonly out: (s: string) => void; readonly err: (s: string) => void };

/** How a command ends: its exit status, and a line for stderr. */
export type { Outcome } from '../runtime/connector';

export const usage = (io: Io, msg: string, help: string): Outcome => {
  io.err(`${msg}\n\n${help}`);
  return { code: 2 };
};

export const readText = (file: string): E.Either<string, string> => {
  try {
    return E.right(readFileSync(file, 'utf8'));
  } catch (err) {
    return E.left(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
};

/** A settings file read and decoded; on failure the outcome to return (every problem on stderr). */
export const readSettingsFile = (file: string, io: Io): E.Either<Outcome, { text: string; settings: ManagedSettings }> => {
  const text = readText(file);
  if (E.isLeft(text)) return E.left({ code: 2, message: text.left });
  const decoded = parseManagedSettings(text.right);
  if (E.isLeft(decoded)) {
    io.err(decoded.left.join('\n'));
    return E.left({ code: 2 });
  }
  return E.right({ text: text.right, settings: decoded.right });
};

/** The `webhooks` of a settings file as it holds them (none when it is no JSON object, or too large). */
const rawWebhooks = (text: string): readonly unknown[] => {
  if (text.length > CONFIG_MAX_BYTES) return [];
  try {
    const json = JSON.parse(text) as { webhooks?: unknown } | null;
    return json !== null && typeof json === 'object' && Array.isArray(json.webhooks) ? json.webhooks : [];
  } catch {
    return [];
  }
};

/** The startup parameters of this process: `appsettings.json` in the working directory (optional) and the environment. */
export const startupSettings = (requireId: boolean): E.Either<string[], StartupSettings> =>
  E.chain((raw: Parameters<typeof loadStartupSettings>[0]) => loadStartupSettings(raw, { requireId, hostname: hostname() }))(
    E.mapLeft((e: string) => [e])(readStartupParameters(process.env)),
  );

/**
 * The startup parameters' delivery settings (a request's time limit, attempts, batch size), or the
 * defaults. Never the defaults in place of a `Webhooks:AllowedNetworks` that does not parse: a
 * mistyped rule must stop a command that sends, not widen where it sends (CONTRACT 6.7).
 */
export const operatorStartup = (): E.Either<string[], StartupSettings> =>
  E.orElse((errors: string[]) => {
    // nor a misspelt name (CONTRACT 1): the parameter it meant would be ignored
    const stopping = errors.filter((e) => e.startsWith('Webhooks:AllowedNetworks:') || e.includes(UNKNOWN_PARAMETER));
    return stopping.length > 0 ? E.left(stopping) : loadStartupSettings(collectRaw({}, {}), { requireId: false, hostname: hostname() });
  })(startupSettings(false));

/**
 * A settings file as `config validate` and `config set` take it: decoded, no webhook URL or token
 * URL a literal address that `Webhooks:AllowedNetworks` (and the blocked ranges) refuses, and no
 * `callers` without authentication — both judged by this process's startup parameters.
 */
export const readConfigFile = (file: string, io: Io): E.Either<Outcome, { text: string; settings: ManagedSettings }> => {
  const text = readText(file);
  if (E.isLeft(text)) return E.left({ code: 2, message: text.left });
  const startup = operatorStartup();
  if (E.isLeft(startup)) return E.left({ code: 2, message: startup.left.join('; ') });
  const decoded = parseManagedSettings(text.right);
  if (E.isLeft(decoded)) {
    // CONTRACT 6.7: the refused literal addresses too, whatever else in the file fails
    io.err([...decoded.left, ...literalAddressProblems(rawWebhooks(text.right), startup.right.webhooks.allowedNetworks)].join('\n'));
    return E.left({ code: 2 });
  }
  const read = { text: text.right, settings: decoded.right };
  // callers are judged by this process's authentication parameters: not by the defaults that
  // stand in for parameters that do not parse (they have no API keys)
  const own = read.settings.callers !== undefined ? startupSettings(false) : undefined;
  if (own !== undefined && E.isLeft(own)) return E.left({ code: 2, message: `callers cannot be checked: ${own.left.join('; ')}` });
  const refused = startupProblems('both', read.settings, startup.right);
  if (refused.length === 0) return E.right(read);
  io.err(refused.join('\n'));
  return E.left({ code: 2 });
};

export const takeOption = (args: string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0 || i + 1 >= args.length) return undefined;
  const [value] = args.splice(i, 2).slice(1);
  return value;
};

export const takeFlag = (args: string[], name: string): boolean => {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};

/** A command of one subcommand (`webhooks resend`, `mappings test`): its help, or the outcome of a wrong one or of --help. */
export const onlySubcommand = (args: string[], io: Io, command: string, sub: string): { help: string } | Outcome => {
  const given = args.shift();
  const help = HELP[`${command} ${sub}`]!;
  if (given !== sub) return usage(io, `unknown ${command} command '${given ?? ''}'`, HELP.main!);
  if (args.includes('--help')) {
    io.out(help);
    return { code: 0 };
  }
  return { help };
};

/** A short-lived connection for the operator commands: one attempt, no retries. */
export const withRedis = async <A>(fn: (r: Redis) => Promise<A>): Promise<E.Either<string, A>> => {
  const options = E.chain(datastoreOptions)(startupSettings(false));
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
