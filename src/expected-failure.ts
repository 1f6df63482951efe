import { ConfigError } from './config.ts';
import { StoreOpenError } from './store/open-failure.ts';

/**
 * A failure the operator fixes from its message alone (a bad setting, a store out of reach):
 * processes print it as one line without a stack and exit with `exitCode`. Anything else is
 * unexpected and keeps its stack.
 */
export function expectedFailure(
  err: unknown,
): { readonly message: string; readonly exitCode: number } | undefined {
  if (err instanceof ConfigError) return { message: err.message, exitCode: 2 };
  if (err instanceof StoreOpenError) return { message: err.message, exitCode: 1 };
  return undefined;
}
