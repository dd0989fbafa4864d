import * as E from 'fp-ts/Either';
import { groupName } from '../mapping/keys';
import { makeLogger } from '../runtime/logger';
import { startTracing, tracingProtocol } from '../runtime/tracing';
import type { ClientTracing } from '../streams/webhook/client';
import type { Outcome } from './common';

/**
 * CONTRACT 9 for the operator commands that send to webhooks: traced as the connector's requests
 * are when tracing is on; the spans are sent (5 s at most) before the command ends.
 */
export const withCliTracing = async (command: string, id: string, run: (tracing: ClientTracing | undefined) => Promise<Outcome>): Promise<Outcome> => {
  const protocol = tracingProtocol(process.env);
  if (E.isLeft(protocol)) return { code: 2, message: protocol.left };
  const traceLog = makeLogger({ command, id }, process.stderr);
  traceLog.level = 'warn';
  const traces = protocol.right === undefined ? undefined : await startTracing('outbound', process.env, traceLog);
  try {
    return await run(traces === undefined ? undefined : { tracing: traces.tracing, group: groupName(id) });
  } finally {
    await traces?.shutdown(TRACE_FLUSH_MS);
  }
};

/** At most this long is spent at the end of a command sending its spans. */
const TRACE_FLUSH_MS = 5000;
