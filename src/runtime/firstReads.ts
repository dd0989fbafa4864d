import type { StartupSettings } from '../config/startup';
import { PARAMETERS } from '../config/startup';
import type { Datastore } from './datastore';
import { refusedRateCommands } from '../http/app/rateWindow';
import type { Logger } from './logger';
import type { MemoryReading } from './memory';

/**
 * What a connector reads before it serves (CONTRACT 1, 2, 6.6): its configuration and Redis's
 * memory settings, each tried again while the connection comes and goes — a connector started
 * before its Redis waits for it — and what in them stops the start.
 */

/** The config key holds something that is not a string: a startup error (exit 2), not a retry. */
export class WrongType {
  constructor(readonly message: string) {}
}

/** Reads the config key once connected, trying again while the connection comes and goes. */
export const loadConfigText = async (ds: Datastore, key: string, log: Logger): Promise<string | null | WrongType> => {
  for (;;) {
    await ds.ready();
    try {
      return await ds.client.get(key);
    } catch (err) {
      const message = (err as Error).message;
      if (/WRONGTYPE/.test(message)) return new WrongType(`${key} is not a string (${await ds.client.type(key).catch(() => 'another type')}): ${message}`);
      log.warn({ err: message }, 'reading the configuration failed; trying again');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
};

/** The first memory reading, tried again while the connection comes and goes. */
export const firstReading = async (ds: Datastore, read: () => Promise<MemoryReading>): Promise<MemoryReading> => {
  for (;;) {
    await ds.ready();
    try {
      return await read();
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
};

/** CONTRACT 7.2: the rate count's commands Redis's ACL refuses (named), or undefined; tried again while the connection comes and goes. */
export const rateCountRefusal = async (ds: Datastore, connectorId: string): Promise<string | undefined> => {
  for (;;) {
    await ds.ready();
    try {
      return await refusedRateCommands(ds.client, connectorId);
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
};

/** CONTRACT 6.6: with `Datastore:RequireNoEviction`, anything but a readable `noeviction` stops the start (exit 2). */
export const noEvictionRequired = (startup: StartupSettings, r: MemoryReading): string | undefined => {
  if (!startup.datastore.requireNoEviction || r.policy === 'noeviction') return undefined;
  return r.policy === null
    ? `${PARAMETERS.datastore.requireNoEviction} is true, but Redis's maxmemory_policy cannot be read (${r.unknownWhy ?? 'unknown'}); allow INFO, or set it to false`
    : `${PARAMETERS.datastore.requireNoEviction} is true, but Redis's maxmemory_policy is ${r.policy}: Redis may evict connector data (set maxmemory-policy noeviction)`;
};
