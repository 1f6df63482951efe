/**
 * Operators: the provider's people and scripts on the operator API
 * (docs/design/contract.md#operator-api) and the console (docs/design/contract.md#operator-console).
 * Each has one OAuth client (scope `operator`) and, for the console, an optional password. The `vrp operator` commands call
 * these; each change is one transaction with its audit entry.
 */
import type { Kysely } from 'kysely';
import { isRole, ROLES, type Role } from '../domain/roles.ts';
import { isStorableText } from '../domain/storable-text.ts';
import { isUniqueViolation } from '../store/errors.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import { deleteOperatorConsoleSessions } from '../store/repos/console-sessions.ts';
import {
  findOperatorByName,
  findOperatorClientId,
  findOperatorLogin,
  insertOperator,
  newOperatorClientId,
  type Operator,
  rotateOperatorClientSecret,
  setOperatorEnabled,
  setOperatorPasswordHash,
  setOperatorRole,
} from '../store/repos/operators.ts';
import type { Database } from '../store/schema.ts';
import { type SlowCheck, unguarded } from './attempt-guard.ts';
import type { SecretVerifier } from './client-authenticator.ts';
import {
  generateSecret,
  hashPassword,
  hashSecret,
  PASSWORD_COST,
  type SecretCost,
  verifySecret,
} from './secret-hash.ts';

/** A refusal to show the operator as it is (an unknown name, a weak password...). */
export class OperatorError extends Error {
  override name = 'OperatorError';
}

/** Names: as resellers' (docs/cli.md), 1-100 letters, digits, spaces, `.`, `_`, `-`. */
const OPERATOR_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

/** Console passwords: long enough to resist guessing through a throttled login, short enough to hash. */
const PASSWORD_MIN_LENGTH = 12;
const PASSWORD_MAX_LENGTH = 1024;

/** Why `password` cannot be a console password, or undefined if it can. */
function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    return `a console password is ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long, got ${length}`;
  }
  // Control characters cannot be typed into a login form; U+0000 cannot even be stored.
  if (/\p{Cc}/u.test(password) || !isStorableText(password)) {
    return 'a console password must not contain control characters';
  }
  return undefined;
}

/** What creating an operator prints, once: the secret is stored only as a hash. */
export interface CreatedOperator {
  readonly operator: string;
  readonly role: Role;
  readonly client_id: string;
  readonly client_secret: string;
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new OperatorError(problem);
}

async function operatorNamed(db: Kysely<Database>, name: string): Promise<Operator> {
  const operator = await findOperatorByName(db, name);
  if (!operator) throw new OperatorError(`no operator named "${name}"`);
  return operator;
}

/** `role` as a Role, or a refusal that lists the roles there are. */
function roleNamed(role: string): Role {
  if (!isRole(role)) throw new OperatorError(`no role named "${role}": the roles are ${ROLES.join(', ')}`);
  return role;
}

const targetOf = (operator: Operator) => ({ target: { type: 'operator', id: operator.id } });

/**
 * Creates an operator with its client and, if given, its console password. The client secret is
 * hashed at `secretCost` (SECRET_COST) and the password at `passwordCost` (PASSWORD_COST) unless
 * given: only tests give lower ones.
 */
export async function createOperator(
  db: Kysely<Database>,
  options: {
    readonly name: string;
    /** `admin` unless given; a name that is no role is refused before anything changes. */
    readonly role?: string;
    readonly password?: string;
    readonly secretCost?: SecretCost;
    readonly passwordCost?: SecretCost;
  },
  now: number,
  audit?: AuditContext,
): Promise<CreatedOperator> {
  const { name, password } = options;
  if (!OPERATOR_NAME.test(name)) {
    throw new OperatorError(
      'an operator name is 1-100 letters, digits, spaces, dots, underscores or hyphens, starting with a letter or digit',
    );
  }
  const role = roleNamed(options.role ?? 'admin');
  if (password !== undefined) checkPassword(password);
  const secret = generateSecret();
  const clientId = newOperatorClientId();
  // The slow hashes before the transaction: SQLite holds its write lock for the whole of one.
  const [secretHash, passwordHash] = await Promise.all([
    hashSecret(secret, options.secretCost),
    password === undefined ? null : hashPassword(password, options.passwordCost),
  ]);
  const exists = () => new OperatorError(`an operator named "${name}" exists already`);
  try {
    await db.transaction().execute(async (tx) => {
      if (await findOperatorByName(tx, name)) throw exists();
      const operator = await insertOperator(tx, { name, role, passwordHash, clientId, secretHash }, now);
      if (audit) await recordAudit(tx, audit, targetOf(operator), now);
    });
  } catch (err) {
    // Another `vrp operator create` of the same name won the race.
    if (isUniqueViolation(err)) throw exists();
    throw err;
  }
  return { operator: name, role, client_id: clientId, client_secret: secret };
}

/**
 * A new secret for the operator's client; the old secret and every token issued before stop
 * working. `secretCost` as for createOperator.
 */
export async function rotateOperatorSecret(
  db: Kysely<Database>,
  name: string,
  now: number,
  audit?: AuditContext,
  options: { readonly secretCost?: SecretCost } = {},
): Promise<CreatedOperator> {
  const secret = generateSecret();
  const secretHash = await hashSecret(secret, options.secretCost);
  const { clientId, role } = await db.transaction().execute(async (tx) => {
    const operator = await operatorNamed(tx, name);
    await rotateOperatorClientSecret(tx, operator.id, secretHash, now);
    if (audit) await recordAudit(tx, audit, targetOf(operator), now);
    return { clientId: await findOperatorClientId(tx, operator.id), role: operator.role };
  });
  if (!clientId) throw new OperatorError(`operator "${name}" has no client`);
  return { operator: name, role, client_id: clientId, client_secret: secret };
}

/**
 * Enables or disables an operator. A disabled operator gets no token and its tokens fail within
 * 2 s, and its console sessions end; enabling it again revives neither (it logs in again).
 */
export async function setOperatorEnabledByName(
  db: Kysely<Database>,
  name: string,
  enabled: boolean,
  now: number,
  audit?: AuditContext,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const operator = await operatorNamed(tx, name);
    await setOperatorEnabled(tx, operator.id, enabled, now);
    // Enabling it again must not revive the console logins it had.
    if (!enabled) await deleteOperatorConsoleSessions(tx, operator.id);
    if (audit) await recordAudit(tx, audit, targetOf(operator), now);
  });
}

/**
 * Gives the operator another role. Tokens carry no role: every request is checked against the
 * role read with the client's state (at most a couple of seconds old), so the change reaches the
 * operator's tokens and console sessions without revoking them.
 */
export async function setOperatorRoleByName(
  db: Kysely<Database>,
  name: string,
  role: string,
  now: number,
  audit?: AuditContext,
): Promise<void> {
  const newRole = roleNamed(role);
  await db.transaction().execute(async (tx) => {
    const operator = await operatorNamed(tx, name);
    await setOperatorRole(tx, operator.id, newRole, now);
    if (audit) await recordAudit(tx, audit, targetOf(operator), now);
  });
}

/**
 * Sets (or replaces) the operator's console password, stored as a slow salted hash (at
 * `passwordCost`, as for createOperator); its console sessions end.
 */
export async function setOperatorPassword(
  db: Kysely<Database>,
  name: string,
  password: string,
  now: number,
  audit?: AuditContext,
  options: { readonly passwordCost?: SecretCost } = {},
): Promise<void> {
  checkPassword(password);
  // Unknown names are refused before the slow hash, and again in the transaction (a race).
  await operatorNamed(db, name);
  const passwordHash = await hashPassword(password, options.passwordCost);
  await db.transaction().execute(async (tx) => {
    const operator = await operatorNamed(tx, name);
    await setOperatorPasswordHash(tx, operator.id, passwordHash, now);
    // Whoever logged in with the old password is logged out.
    await deleteOperatorConsoleSessions(tx, operator.id);
    if (audit) await recordAudit(tx, audit, targetOf(operator), now);
  });
}

/** Checks console logins. */
export interface OperatorLogin {
  /**
   * The operator if `name` is an enabled operator whose password is `password`; undefined
   * otherwise. The password hash runs through `slowCheck` (which may wait, or refuse by throwing).
   */
  verify(name: string, password: string, slowCheck?: SlowCheck): Promise<Operator | undefined>;
}

/**
 * Console logins checked so that every answer costs one password hash: an unknown name, an
 * operator without a password and a wrong password all run scrypt once at the password cost
 * (against a dummy hash made at the first such login, or the operator's own), so how long a refusal takes does
 * not tell which names exist. The comparison itself is constant time (verifySecret). Login
 * attempts are throttled by the console, not here: it passes the `slowCheck` that counts the
 * attempt and bounds the hashes at once. `passwordCost` is the cost of the dummy hash,
 * the operators' own (PASSWORD_COST; tests that set passwords at a lower cost give theirs).
 */
export function createOperatorLogin(
  db: Kysely<Database>,
  verify: SecretVerifier = verifySecret,
  passwordCost: SecretCost = PASSWORD_COST,
): OperatorLogin {
  // Made at the first login, not at start: every process builds the console, few log in. Only
  // the process's very first unknown name waits for it, once.
  let dummyHash: Promise<string> | undefined;
  return {
    async verify(name, password, slowCheck = unguarded) {
      // What no operator can have is not looked up (PostgreSQL refuses U+0000 in a query), nor
      // hashed whole: the dummy check still runs, on at most the longest password there can be.
      const candidate = password.slice(0, PASSWORD_MAX_LENGTH * 2);
      const operator = OPERATOR_NAME.test(name) ? await findOperatorLogin(db, name) : undefined;
      const stored = operator?.passwordHash;
      if (!stored) {
        await slowCheck(async () => {
          // Made in the check's place, so that it too counts against the bound on hashes at once.
          dummyHash ??= hashPassword(generateSecret(), passwordCost);
          return verify(candidate, await dummyHash);
        });
        return undefined;
      }
      const ok = await slowCheck(() => verify(candidate, stored));
      if (!ok || !operator.enabled) return undefined;
      const { passwordHash: _, ...found } = operator;
      return found;
    },
  };
}
