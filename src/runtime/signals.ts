/**
 * SIGTERM and SIGINT, caught from the first line the CLI runs (it imports this module first), so
 * that a stop requested while the process is still loading or connecting ends it with exit 0 once
 * it can (CONTRACT 1), instead of killing it by the signal. Only Node's own start-up, before any of
 * our code runs, is left to the default action.
 */
export type StopSignal = 'SIGTERM' | 'SIGINT';

let received: StopSignal | undefined;
const listeners = new Set<(signal: StopSignal) => void>();
const handler = (signal: StopSignal) => () => {
  received ??= signal;
  for (const l of listeners) l(signal);
};
const handlers = { SIGTERM: handler('SIGTERM'), SIGINT: handler('SIGINT') };

process.on('SIGTERM', handlers.SIGTERM);
process.on('SIGINT', handlers.SIGINT);

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

/**
 * For the commands that do not run a connector: the default behaviour back, and the signal that
 * came meanwhile, if any (the caller then exits with 128 + its number, as the default would).
 */
export const releaseStopSignals = (): StopSignal | undefined => {
  process.off('SIGTERM', handlers.SIGTERM);
  process.off('SIGINT', handlers.SIGINT);
  return received;
};
