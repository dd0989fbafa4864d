import * as E from 'fp-ts/Either';
import { format } from 'node:util';
import { datastoreOptions } from '../config/connectionString';
import { runConnector, type ConnectorKind, type Outcome } from '../runtime/connector';
import { buildInbound } from '../runtime/inbound';
import { makeLogger, type Logger } from '../runtime/logger';
import { buildOutbound } from '../runtime/outbound';
import { VERSION } from '../version';
import { startupSettings } from './common';

/** `rest-connector outbound` and `rest-connector inbound`: a connector until it stops. */
export const runConnectorCommand = async (kind: ConnectorKind): Promise<Outcome> => {
  const startup = startupSettings(true);
  const options = E.chain(datastoreOptions)(startup);
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
const routeConsole = (log: Logger): void => {
  const levels = { log: 'info', info: 'info', debug: 'debug', warn: 'warn', error: 'error' } as const;
  for (const [method, level] of Object.entries(levels) as Array<[keyof typeof levels, (typeof levels)[keyof typeof levels]]>) {
    console[method] = (...args: unknown[]) => log[level]({ source: 'library' }, format(...args).slice(0, 4096));
  }
  // Node's own warnings (e.g. NODE_TLS_REJECT_UNAUTHORIZED=0) go to stderr by a default listener
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) => log.warn({ source: 'node', name: w.name, code: w.code }, w.message));
};
