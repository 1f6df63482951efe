import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { type Bindings, type ChildLoggerOptions, levels } from 'pino';

/** A level's number (pino's); `silent`, or a level pino does not know, is above every line. */
function levelValue(level: string): number {
  return levels.values[level] ?? Number.POSITIVE_INFINITY;
}

/**
 * The logger of access lines: a child of the app's logger made once per logger, without the
 * redaction of secrets that every other line goes through. An access line is made only of what
 * the server builds itself (the request id, the request's method, its URL with its secrets
 * already taken out, host, address and port, the status and the time), which holds none of the
 * paths the redaction looks for, and redacting it cost more than the rest of the line
 * (bench/FINDINGS.md, "The access line"). A line with an error keeps the redaction. At `trace`:
 * whether the line is written is the request's level's decision (RequestLog.access).
 */
const accessLoggers = new WeakMap<FastifyBaseLogger, FastifyBaseLogger>();
function accessLogger(parent: FastifyBaseLogger): FastifyBaseLogger {
  let log = accessLoggers.get(parent);
  if (!log) {
    log = parent.child({}, { level: 'trace', redact: { paths: [] } });
    accessLoggers.set(parent, log);
  }
  return log;
}

/**
 * A request's logger (`request.log`): its lines carry the request's bindings (`reqId`, and the
 * route's own level, a probe's `warn`; no route has log serializers of its own) as those of
 * Fastify's child logger per request do, but the child is made the first time the request
 * writes a line of its own, not for every request (pino's child costs ~0.5 µs): most write none,
 * and their access line (AccessLog below) goes through the parent with the bindings beside it,
 * which is the same line.
 */
export class RequestLog implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #log(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  /**
   * Whether a line at `level` is written: pino's own check, made here before anything is built
   * for the line (a child whose bindings go through the redaction costs more than the line pino
   * would then drop; bench/FINDINGS.md, "Where a service's bytes are allocated").
   */
  #enabled(level: string): boolean {
    return levelValue(level) >= levelValue(this.level);
  }

  /** A line at `level` through the request's child logger, made on the first line written. */
  #write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
    if (!this.#enabled(level)) return;
    const log = this.#log();
    Reflect.apply(log[level], log, args);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.#write('error', args);
  }

  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }

  info(...args: unknown[]): void {
    this.#write('info', args);
  }

  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#log().child(bindings, options);
  }

  /**
   * The request's access line: at `info` (`error` when the answer could not be sent), with what
   * Fastify's two lines per request had, the request (method, URL without secrets, host,
   * address) and the answer (status, time in ms).
   */
  access(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const level = error ? 'error' : 'info';
    if (!this.#enabled(level)) return;
    if (!error) {
      accessLogger(this.#parent).info(
        { ...this.#bindings, req: request, res: reply, responseTime: reply.elapsedTime },
        'request completed',
      );
      return;
    }
    const line = { req: request, res: reply, responseTime: reply.elapsedTime, err: error };
    // The child's lines carry the bindings already; the parent's get them beside the line's.
    if (this.#child) this.#child.error(line, 'request errored');
    else this.#parent.error({ ...this.#bindings, ...line }, 'request errored');
  }
}

/**
 * One access line per request (Fastify writes two: one as the request comes in, one when it
 * is answered), written once the answer has gone out. Every other line of Fastify's is its own.
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const log = request.log;
    if (log instanceof RequestLog) log.access(error, request, reply);
    else super.requestCompleted(error, request, reply);
  }
}

/**
 * Fastify's options for the request logs: `request.log` a RequestLog, one access line per
 * request (docs/deploy.md, "Logs").
 */
export const requestLogging = {
  childLoggerFactory: (parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) =>
    new RequestLog(parent, bindings, options),
  logController: new AccessLog(),
};
