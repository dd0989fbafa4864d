import type { Redis } from 'ioredis';

/** What the inbound connector logs about how it appends stream entries. */
export interface AppendLog {
  info(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Whether a connection appends a write's stream entries by script (`APPEND_SCRIPT`) or one `XADD`
 * each (README "How a write reaches Redis"). A script is sent only on a connection where, since it
 * last connected, a probe `EVAL` of a `#!lua` script answered: the server is Redis 7 or newer (an
 * older one refuses the shebang, and decides out-of-memory inside a script differently) and the
 * user may run `EVAL`. Until the probe answers, and after the connection closes, the `XADD`s go
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
  /** What the log last said (a line only when it changes). */
  let told: string | undefined;
  let probes = 0;
  const tell = (by: 'script' | 'commands', reason?: string) => {
    const now = `${by}:${reason ?? ''}`;
    if (now === told) return;
    told = now;
    if (by === 'script') log.info({ connection: redis.options.connectionName }, 'stream entries are appended by one script a write (Redis 7, EVAL allowed)');
    else log.info({ connection: redis.options.connectionName, reason }, 'stream entries are appended one XADD each: the data store does not run the append script (grant +eval on Redis 7 for faster array writes)');
  };
  const probe = () => {
    const mine = ++probes;
    redis.eval(PROBE, 0).then(
      (answer) => {
        // a probe of an earlier connection answers for nothing
        if (mine !== probes || redis.status !== 'ready') return;
        scripted = answer === 1;
        tell(scripted ? 'script' : 'commands', scripted ? undefined : `the probe answered ${String(answer)}`);
      },
      (err: Error) => {
        if (mine !== probes) return;
        scripted = false;
        // a lost connection says nothing about the server; the next connect probes again
        if (redis.status === 'ready') tell('commands', err.message);
      },
    );
  };
  redis.on('ready', probe);
  redis.on('close', () => {
    probes++;
    scripted = false;
  });
  if (redis.status === 'ready') probe();
  return {
    scripted: () => scripted,
    refused: (error) => {
      scripted = false;
      tell('commands', error);
    },
  };
};
