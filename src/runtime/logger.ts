import pino from 'pino';

/**
 * Header values, API keys, passwords and webhook secrets are redacted wherever they appear in a
 * logged object (CONTRACT 6.2). Keys are matched at any of the depths we log at.
 */
export const REDACT_PATHS = [
  'headers.*', '*.headers.*', '*.*.headers.*', '*.*[*].headers.*',
  'secret', '*.secret', '*.*[*].secret', '*.*.secret',
  'password', '*.password', 'apiKey', 'apiKeys', '*.apiKeys', 'authorization', '*.authorization',
];

export type Logger = pino.Logger;

export const makeLogger = (bindings: Record<string, unknown>, destination?: pino.DestinationStream): Logger =>
  pino(
    {
      level: 'info',
      base: bindings,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ sync: false }),
  );
