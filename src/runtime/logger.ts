import pino from 'pino';

/**
 * Header values, API keys, passwords and webhook secrets are redacted in every logged object
 * (CONTRACT 6.2). The paths are the shapes we log (a webhook, a list of webhooks, headers);
 * leading and intermediate wildcards are avoided because pino runs redaction on every line,
 * including the one per request, and they cost several times more than fixed paths.
 */
export const REDACT_PATHS = [
  'headers.*', 'secret', 'password', 'apiKey', 'apiKeys', 'authorization',
  'webhook.headers.*', 'webhook.secret', 'webhooks[*].headers.*', 'webhooks[*].secret',
];

export type Logger = pino.Logger;

export const makeLogger = (bindings: Record<string, unknown>, destination?: pino.DestinationStream): Logger =>
  pino(
    {
      level: 'info',
      base: bindings,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // pino's own epoch milliseconds: formatting an ISO date on every line costs ~1 % of a request
      timestamp: pino.stdTimeFunctions.epochTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ sync: false }),
  );
