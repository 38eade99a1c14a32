import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Secrets and personal data are never passed to the logger in the first
 * place; the redaction list is a second line of defence for request headers.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'payment-notification-receiver' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["opensvc-signature"]',
          'req.headers["x-opensvc-signature"]',
          '*.password',
          '*.secondKey',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
