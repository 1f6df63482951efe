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
