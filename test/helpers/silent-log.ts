import type { FastifyBaseLogger } from 'fastify';

const nothing = () => {};

/** A logger that writes nothing, for the product's parts a test runs on their own. */
export const silentLog: FastifyBaseLogger = {
  level: 'silent',
  info: nothing,
  warn: nothing,
  error: nothing,
  debug: nothing,
  trace: nothing,
  fatal: nothing,
  silent: nothing,
  child: () => silentLog,
};
