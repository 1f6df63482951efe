/** How commands speak: JSON for scripts (--json), plain lines for people. Errors go to stderr. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command ran and failed (exit 1); `details` go into the `--json` error object. */
export class CommandError extends Error {
  override name = 'CommandError';
  readonly details: Readonly<Record<string, unknown>> | undefined;
  constructor(message: string, details?: Record<string, unknown>) {
    super(message);
    this.details = details;
  }
}

export interface Output {
  readonly json: boolean;
  /** Prints `value` as JSON with --json, else `human(value)`. */
  result<T>(value: T, human: (value: T) => string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, human) {
      process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human(value)}\n`);
    },
  };
}

/**
 * The positional arguments of a command that takes no options; an option is a usage error
 * rather than a name (`vrp reseller create --force` must not create a reseller "--force").
 */
export function positionals(args: readonly string[], command: string): string[] {
  const option = args.find((a) => a.startsWith('-') && a !== '-');
  if (option !== undefined) throw new UsageError(`${command}: unknown option ${option}`);
  return [...args];
}

/** Whether `err` is node:util parseArgs refusing the arguments (an unknown option, a missing value). */
export function isParseArgsError(err: unknown): err is Error {
  return (
    err instanceof TypeError &&
    'code' in err &&
    typeof err.code === 'string' &&
    err.code.startsWith('ERR_PARSE_ARGS')
  );
}

/** Runs a parseArgs call; its refusal of the arguments becomes a UsageError (exit code 2). */
export function parseArguments<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (isParseArgsError(err)) throw new UsageError(err.message);
    throw err;
  }
}

/** The one positional argument of `command` (`what` names it in the refusal). */
export function one(positionals: readonly string[], command: string, what: string): string {
  const [value, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`${command}: unexpected arguments: ${extra.join(' ')}`);
  if (!value) throw new UsageError(`${command}: a ${what} is required`);
  return value;
}
