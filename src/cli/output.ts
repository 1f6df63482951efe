/** How commands speak: JSON for scripts (--json), plain lines for people. Errors go to stderr. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export class CommandError extends Error {
  override name = 'CommandError';
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
