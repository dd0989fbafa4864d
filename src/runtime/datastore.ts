import { Redis, type RedisOptions } from 'ioredis';
import { BehaviorSubject, distinctUntilChanged, filter, firstValueFrom, type Observable } from 'rxjs';

/** What a connection logs through: the connector's logger, or a thread's messages to it (`imageThread.ts`). */
export interface DatastoreLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/** A Redis connection and its state as an observable (true while commands can be sent). */
export interface Datastore {
  readonly client: Redis;
  readonly connected$: Observable<boolean>;
  isConnected(): boolean;
  /** True while a health PING has gone unanswered for longer than the command timeout (CONTRACT 6.5). */
  stalled(): boolean;
  /** Resolves once connected; until then every failed attempt is logged as a warning. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A connection error as an operator needs it: the message, with the code or the address when the
 * message alone does not say (`ECONNREFUSED 127.0.0.1:6390`, `self-signed certificate in
 * certificate chain (SELF_SIGNED_CERT_IN_CHAIN)`).
 */
export const describeConnectionError = (err: Error): string => {
  const e = err as Error & { code?: string; address?: string; port?: number };
  let text = err.message || String(err);
  if (e.code !== undefined && !text.includes(e.code)) text += ` (${e.code})`;
  if (e.address !== undefined && !text.includes(e.address)) text += ` ${e.address}${e.port !== undefined ? `:${e.port}` : ''}`;
  return text;
};

/** Authentication, authorisation and certificate failures: retrying does not help, an operator must act. */
export const needsOperator = (err: Error): boolean =>
  /WRONGPASS|NOAUTH|NOPERM|invalid (username|password)|certificate|self[- ]signed|unable to (verify|get)|CERT_|ERR_TLS|ERR_SSL|handshake|alert|IP: .* is not in the cert|Hostname\/IP does not match/i.test(
    `${err.message} ${(err as { code?: string }).code ?? ''}`,
  );

/**
 * Connects at once and retries every `retrySeconds`, forever. Commands fail fast while
 * disconnected (no offline queue, no resend of unanswered commands), so callers answer 503
 * instead of hanging, and a MULTI that may not have run is never sent twice.
 */
export const connectDatastore = (options: RedisOptions, retrySeconds: number, log: DatastoreLog, role = 'main'): Datastore => {
  const state = new BehaviorSubject(false);
  const client = new Redis({
    ...options,
    retryStrategy: () => Math.round(retrySeconds * 1000),
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectionName: `rest-connectors:${role}`,
    // a node demoted by a failover answers writes with READONLY: the write is refused (503, never
    // a 200) and the connection is made again, to whatever the sentinels now name the master
    reconnectOnError: (err: Error) => (/^READONLY/.test(err.message) ? 1 : false),
  });
  let lastError = '';
  let closing = false;
  client.on('ready', () => {
    if (!state.value) log.info({ role }, 'data store connected');
    lastError = '';
    state.next(true);
  });
  client.on('error', (err: Error) => {
    // ioredis reports each failed attempt; one line per failure, as the contract asks. A refused
    // password or certificate will not heal by itself: an error, naming the cause, every time.
    lastError = describeConnectionError(err);
    const fields = { role, err: lastError, retryInSeconds: retrySeconds };
    if (needsOperator(err)) log.error(fields, 'data store refused the connection: check the password, user or TLS settings');
    else log.warn(fields, 'data store connection failed');
  });
  client.on('close', () => {
    if (state.value && !closing) log.warn({ role, err: lastError || undefined }, 'data store connection lost');
    state.next(false);
  });
  // ioredis gives a client up for good ('end') when a Sentinel failover disconnects it while it is
  // still asking the sentinels for the master (its connector then rejects "Connection is closed."):
  // a CI run under load saw the stream reader stay closed after a failover. Only our close() ends a
  // client on purpose; any other end is connected again after the retry interval.
  client.on('end', () => {
    if (closing) return;
    log.warn({ role }, 'data store client ended unexpectedly; connecting again');
    setTimeout(() => {
      if (!closing && client.status === 'end') client.connect().catch(() => undefined);
    }, Math.round(retrySeconds * 1000)).unref();
  });
  const connected$ = state.pipe(distinctUntilChanged());
  // A stalled store (e.g. CLIENT PAUSE, a blocked server) keeps its connection: a PING a second
  // tells, so that requests get 503 at once and readiness says why, instead of hanging.
  let pingSentAt: number | undefined;
  /** The last PING timed out; cleared by the next one answered. */
  let unanswered = false;
  const limit = options.commandTimeout;
  const pinger =
    limit === undefined
      ? undefined
      : setInterval(() => {
          if (!state.value || pingSentAt !== undefined) return;
          pingSentAt = Date.now();
          client.ping().then(
            () => {
              pingSentAt = undefined;
              unanswered = false;
            },
            (err: Error) => {
              pingSentAt = undefined;
              unanswered = /timed out/i.test(err.message);
            },
          );
        }, 1000);
  pinger?.unref();
  const stalled = () =>
    limit !== undefined && state.value && (unanswered || (pingSentAt !== undefined && Date.now() - pingSentAt > Math.min(limit, 2000)));
  return {
    client,
    connected$,
    isConnected: () => state.value && !stalled(),
    stalled,
    ready: () => firstValueFrom(connected$.pipe(filter(Boolean))).then(() => undefined),
    close: async () => {
      closing = true;
      if (pinger !== undefined) clearInterval(pinger);
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
