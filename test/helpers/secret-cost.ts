import type { SecretCost } from '../../src/auth/secret-hash.ts';

/**
 * The scrypt cost of the applications tests register, and of the dummy hash their token
 * endpoint checks unknown ids against (createTestApp sets ctx.secretCost): the least scrypt
 * takes. At the real cost (SECRET_COST) each registration, each first token and each unknown id
 * costs about 0.2 s of CPU, which was a good part of the suite's. The tests of the cost itself,
 * the CLI and the end-to-end tests (test/helpers/e2e.ts) use SECRET_COST.
 */
export const TEST_SECRET_COST: SecretCost = Object.freeze({ N: 2, r: 1, p: 1 });

/**
 * The scrypt cost of the console passwords tests set (createTestOperator, the operator tests)
 * and of their login checker's dummy hash: at the real cost (PASSWORD_COST, N=2^17) each costs
 * about a second of CPU. Not TEST_SECRET_COST, so a test can still tell a password's hash from a
 * client secret's. test/auth/operators.test.ts checks that production stores PASSWORD_COST.
 */
export const TEST_PASSWORD_COST: SecretCost = Object.freeze({ N: 4, r: 1, p: 1 });
