/**
 * SIGTERM and SIGINT of a running connector (`rest-connector outbound|inbound`), caught from the
 * first module the CLI loads (cli.ts imports this one first), so that a stop requested while the
 * process is still loading or connecting ends it with exit 0 once it can (CONTRACT 1), instead of
 * killing it by the signal.
 *
 * Before this module runs — Node's own start-up, about 50–60 ms after the process is spawned on
 * an idle machine, 90–160 ms when `NODE_EXTRA_CA_CERTS` makes Node read a CA bundle first — a stop
 * signal has its default effect: the process dies of it, before any of our code ran, so nothing is
 * left half-started.
 *
 * Every other command (the operator commands, `--help`, `--version`) keeps Node's default from
 * the start: a signal ends it at once, whenever it comes. (Catching it and letting go later would
 * lose a signal that arrives while the modules load: Node delivers it only on the first turn of
 * the event loop, after the handler is gone.)
 */
export type StopSignal = 'SIGTERM' | 'SIGINT';

/** The commands that run a connector, and so catch stop signals. */
const CATCHING = new Set(['outbound', 'inbound']);

let received: StopSignal | undefined;
const listeners = new Set<(signal: StopSignal) => void>();
const handler = (signal: StopSignal) => () => {
  received ??= signal;
  for (const l of listeners) l(signal);
};

if (require.main !== undefined && require.main.filename.endsWith('cli.js') && CATCHING.has(process.argv[2] ?? '')) {
  process.on('SIGTERM', handler('SIGTERM'));
  process.on('SIGINT', handler('SIGINT'));
}

/**
 * Calls `listener` on every stop signal — at once if one came already. The handlers stay
 * installed: a second signal during the graceful stop must not kill the process with a non-zero
 * status (an orchestrator or an impatient Ctrl-C may send two). Returns the unsubscription.
 */
export const onStopSignal = (listener: (signal: StopSignal) => void): (() => void) => {
  listeners.add(listener);
  if (received !== undefined) listener(received);
  return () => listeners.delete(listener);
};
