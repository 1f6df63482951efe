/**
 * Secrets never reach the logs, whatever a line carries: pino's redaction, the same for the
 * HTTP app's logger (http/app.ts) and a worker-only process's (main.ts).
 */
export const LOG_REDACT = {
  paths: [
    'req.headers.authorization',
    'headers.authorization',
    '*.password',
    '*.client_secret',
    '*.access_token',
    '*.secret',
    'password',
    'client_secret',
    'access_token',
  ],
  censor: '[redacted]',
};
