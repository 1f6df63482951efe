import type { SecretCost } from '../../src/auth/secret-hash.ts';

/**
 * The scrypt cost of the applications tests register: the least scrypt takes. At the real cost
 * (SECRET_COST) each registration and each first token costs about 0.2 s of CPU, which was a
 * good part of the suite's. The tests of the cost itself, the CLI and the end-to-end tests
 * (test/helpers/e2e.ts) register at SECRET_COST.
 */
export const TEST_SECRET_COST: SecretCost = Object.freeze({ N: 2, r: 1, p: 1 });
