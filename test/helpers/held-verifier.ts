import type { SecretVerifier } from '../../src/auth/client-authenticator.ts';
import { verifySecret } from '../../src/auth/secret-hash.ts';
import { until } from './job-worker.ts';

/**
 * A secret verifier whose checks start and then wait until the test ends them, counting how many
 * run at once: what a bound on slow hashes is about, observed without any timing. Each check,
 * once ended, answers as verifySecret does.
 */
export function heldVerifier() {
  const held: (() => void)[] = [];
  let inFlight = 0;
  let peak = 0;
  let started = 0;
  const verify: SecretVerifier = async (secret, stored) => {
    started += 1;
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    await new Promise<void>((end) => held.push(end));
    inFlight -= 1;
    return verifySecret(secret, stored);
  };
  return {
    verify,
    /** Checks running now (started, not ended). */
    get inFlight() {
      return inFlight;
    },
    /** The most checks that ever ran at once. */
    get peak() {
      return peak;
    },
    /** Checks started in all. */
    get started() {
      return started;
    },
    /** Ends the checks one at a time, oldest first, as they start, until `done` holds. */
    async drain(done: () => boolean): Promise<void> {
      for (;;) {
        await until(() => held.length > 0 || done(), 'a check to end, or the answers');
        const end = held.shift();
        if (!end) return;
        end();
      }
    },
  };
}
