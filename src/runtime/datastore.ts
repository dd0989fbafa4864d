import { Redis, type RedisOptions } from 'ioredis';
import { BehaviorSubject, distinctUntilChanged, filter, firstValueFrom, type Observable } from 'rxjs';
import type { Logger } from './logger';

/** A Redis connection and its state as an observable (true while commands can be sent). */
export interface Datastore {
  readonly client: Redis;
  readonly connected$: Observable<boolean>;
  isConnected(): boolean;
  /** Resolves once connected; until then every failed attempt is logged as a warning. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Connects at once and retries every `retrySeconds`, forever. Commands fail fast while
 * disconnected (no offline queue, no resend of unanswered commands), so callers answer 503
 * instead of hanging, and a MULTI that may not have run is never sent twice.
 */
export const connectDatastore = (options: RedisOptions, retrySeconds: number, log: Logger, role = 'main'): Datastore => {
  const state = new BehaviorSubject(false);
  const client = new Redis({
    ...options,
    retryStrategy: () => Math.round(retrySeconds * 1000),
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectionName: `rest-connectors:${role}`,
  });
  let lastError = '';
  let closing = false;
  client.on('ready', () => {
    if (!state.value) log.info({ role }, 'data store connected');
    lastError = '';
    state.next(true);
  });
  client.on('error', (err: Error) => {
    // ioredis reports each failed attempt; one warning per failure, as the contract asks.
    lastError = err.message;
    log.warn({ role, err: err.message, retryInSeconds: retrySeconds }, 'data store connection failed');
  });
  client.on('close', () => {
    if (state.value && !closing) log.warn({ role, err: lastError || undefined }, 'data store connection lost');
    state.next(false);
  });
  const connected$ = state.pipe(distinctUntilChanged());
  return {
    client,
    connected$,
    isConnected: () => state.value,
    ready: () => firstValueFrom(connected$.pipe(filter(Boolean))).then(() => undefined),
    close: async () => {
      closing = true;
      try {
        if (client.status === 'ready') await client.quit();
        else client.disconnect();
      } catch {
        client.disconnect();
      }
      state.complete();
    },
  };
};
