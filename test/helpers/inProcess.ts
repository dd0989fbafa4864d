import * as E from 'fp-ts/Either';
import { Writable } from 'node:stream';
import { parseConnectionString, toRedisOptions } from '../../src/config/connectionString';
import { parseManagedSettings } from '../../src/config/managed';
import { collectRaw, loadStartupSettings } from '../../src/config/startup';
import { makeMetrics } from '../../src/telemetry/metrics';
import { VERSION } from '../../src/version';
import { makeApp, type ConnectorContext, type ConnectorParts, type ConnectorKind } from '../../src/runtime/connector';
import { connectDatastore } from '../../src/runtime/datastore';
import { makeLogger } from '../../src/runtime/logger';
import { watchMemory } from '../../src/runtime/memory';
import { listenAll } from '../../src/runtime/servers';
import type { TestRedis } from './redis';

export interface InProcess {
  readonly url: string;
  readonly ctx: ConnectorContext;
  /** Parsed log lines written so far. */
  logs(): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * One connector's HTTP side in the test process, built by the same functions as the CLI's
 * composition root, listening on a free loopback port, against the test's private Redis.
 */
export const startInProcess = async (
  kind: ConnectorKind,
  build: (ctx: ConnectorContext) => ConnectorParts,
  redis: TestRedis,
  settings: object,
  env: Record<string, string> = {},
): Promise<InProcess> => {
  const startup = loadStartupSettings(
    collectRaw({}, { Id: 'test-connector', ConnectionStrings__Datastore: redis.url, Datastore__ConnectionRetrySeconds: '0.2', ...env }),
    { requireId: true, hostname: 'test-host' },
  );
  if (E.isLeft(startup)) throw new Error(startup.left.join());
  const target = parseConnectionString(startup.right.connectionString);
  if (E.isLeft(target)) throw new Error(target.left);
  const decoded = parseManagedSettings(JSON.stringify(settings));
  if (E.isLeft(decoded)) throw new Error(decoded.left.join());
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter((l) => l !== ''));
      cb();
    },
  });
  const log = makeLogger({ connector: kind }, sink);
  log.level = decoded.right.logLevel;
  const redisOptions = toRedisOptions(target.right);
  const datastore = connectDatastore({ ...redisOptions, commandTimeout: startup.right.datastore.commandTimeoutMilliseconds }, startup.right.datastore.connectionRetrySeconds, log);
  await datastore.ready();
  const metrics = makeMetrics({ kind, id: startup.right.id, version: VERSION });
  const memory = watchMemory({ redis: datastore.client, intervalMs: startup.right.datastore.memoryCheckIntervalMilliseconds, log, metrics });
  const ctx: ConnectorContext = { startup: startup.right, settings: decoded.right, datastore, redisOptions, log, metrics, outOfMemory: memory.outOfMemory, webhookFiles: [] };
  const parts = build(ctx);
  let addresses: readonly string[] = [];
  const listening = await listenAll(makeApp(kind, ctx, parts, () => addresses), [{ url: 'http://127.0.0.1:0', https: false, host: '127.0.0.1', port: 0 }]);
  addresses = listening.addresses;
  const background = parts.start?.();
  return {
    url: listening.addresses[0]!,
    ctx,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    close: async () => {
      await Promise.all([listening.close(2000), background?.stop(Date.now() + 2000)]);
      memory.stop();
      await datastore.close();
    },
  };
};
