import { ReplyError, type Redis } from 'ioredis';
import { APPEND_PROBE } from '../../mapping/commands';
import { UPDATES_STREAM } from '../../mapping/keys';

/** What the inbound connector logs about how it appends stream entries. */
export interface AppendLog {
  info(fields: Record<string, unknown>, msg: string): void;
}

/**
 * Whether a connection appends a write's stream entries by script (`APPEND_SCRIPT`) or one `XADD`
 * each (README "How a write reaches Redis"). A script is sent only on a connection where, since it
 * last connected, the probe (`APPEND_PROBE`) answered: the server is Redis 7 or newer (an older
 * one refuses the shebang; only Redis 7's out-of-memory decision, once for the whole `EXEC`, is
 * tested), the user may run `EVAL` on the stream, and the script's `XADD` (CONTRACT 5.1: a script
 * whose `XADD` Redis refuses inside the `EXEC` would leave the `MSET` applied). Until the probe
 * answers, and after the connection closes, the `XADD`s go as they are, so a failover to another
 * server is probed again before a script reaches it.
 */
export interface AppendMode {
  /** True while the last probe on this connection succeeded. */
  scripted(): boolean;
  /** A transaction was refused for its script (`EVAL` revoked since the probe): `XADD`s from now on, until the next connect. */
  refused(error: string): void;
}

/** A Redis error reply (not a connection's failure), as ioredis gives it: the command it answered, and for `EXEC` the queued commands' errors. */
type ReplyFailure = Error & { readonly command?: { readonly name?: string }; readonly previousErrors?: ReadonlyArray<Error & { readonly command?: { readonly name?: string } }> };

/**
 * A transaction aborted for its `EVAL`s alone (nothing of it ran): Redis refused to queue them
 * (permission revoked, the command renamed away) and every other command was queued. Told by the
 * commands the errors answer, not by their text.
 */
export const refusedForScript = (err: unknown): boolean => {
  const e = err as ReplyFailure;
  const refused = e?.previousErrors ?? [];
  return e instanceof ReplyError && e.command?.name === 'exec' && refused.length > 0 && refused.every((p) => p.command?.name === 'eval');
};

export const appendMode = (redis: Redis, log: AppendLog): AppendMode => {
  let scripted = false;
  /** What the log last said: a line only when it changes. */
  let told: boolean | undefined;
  const tell = (now: boolean, reason?: string) => {
    if (now === told) return;
    told = now;
    const connection = redis.options.connectionName;
    if (now) log.info({ connection }, 'stream entries are appended by one script a write (Redis 7, EVAL and the script\'s XADD allowed)');
    else log.info({ connection, reason }, 'stream entries are appended one XADD each: the data store does not run the append script (grant +eval on Redis 7 for faster array writes)');
  };
  // A probe answers on the connection it was sent on, before that connection's 'close'; one sent
  // on a connection that closes fails with it, after the 'close', and says nothing about the server.
  const probe = () =>
    redis.eval(APPEND_PROBE, 1, UPDATES_STREAM).then(
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
