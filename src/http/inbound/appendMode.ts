import type { Redis } from 'ioredis';

/** What the inbound connector logs about how it appends stream entries. */
export interface AppendLog {
  info(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Whether a connection appends a write's stream entries by script (`APPEND_SCRIPT`) or one `XADD`
 * each (README "How a write reaches Redis"). A script is sent only on a connection where, since it
 * last connected, a probe `EVAL` of a `#!lua` script answered: the server is Redis 7 or newer (an
 * older one refuses the shebang; only Redis 7's out-of-memory decision, once for the whole `EXEC`,
 * is tested) and the user may run `EVAL`. Until the probe answers, and after the connection closes, the `XADD`s go
 * as they are, so a failover to another server is probed again before a script reaches it.
 */
export interface AppendMode {
  /** True while the last probe on this connection succeeded. */
  scripted(): boolean;
  /** A transaction was refused for its script (`EVAL` revoked since the probe): `XADD`s from now on, until the next connect. */
  refused(error: string): void;
}

/**
 * `no-writes`: the probe itself is refused neither by a replica (a `READONLY` answer would make the
 * connection reconnect, again and again) nor by a Redis out of memory or short of replicas.
 */
export const PROBE = '#!lua flags=no-writes\nreturn 1';

/** A transaction aborted for its `EVAL` alone (nothing of it ran): permission revoked, or the command renamed away. */
export const refusedForScript = (error: string): boolean =>
  /EXECABORT/.test(error) && /(NOPERM[^;]*'eval'|unknown command [`']eval[`'])/i.test(error);

export const appendMode = (redis: Redis, log: AppendLog): AppendMode => {
  let scripted = false;
  /** What the log last said: a line only when it changes. */
  let told: boolean | undefined;
  const tell = (now: boolean, reason?: string) => {
    if (now === told) return;
    told = now;
    const connection = redis.options.connectionName;
    if (now) log.info({ connection }, 'stream entries are appended by one script a write (Redis 7, EVAL allowed)');
    else log.info({ connection, reason }, 'stream entries are appended one XADD each: the data store does not run the append script (grant +eval on Redis 7 for faster array writes)');
  };
  // A probe answers on the connection it was sent on, before that connection's 'close'; one sent
  // on a connection that closes fails with it, after the 'close', and says nothing about the server.
  const probe = () =>
    redis.eval(PROBE, 0).then(
      () => {
        scripted = true;
        tell(true);
      },
      (err: Error) => {
        scripted = false;
        if (redis.status === 'ready') tell(false, err.message);
      },
    );
  redis.on('ready', probe);
  redis.on('close', () => {
    scripted = false;
  });
  // Stryker disable next-line ConditionalExpression: a probe sent before the connection is ready fails without a word (above), and 'ready' probes again
  if (redis.status === 'ready') void probe();
  return {
    scripted: () => scripted,
    refused: (error) => {
      scripted = false;
      tell(false, error);
    },
  };
};
