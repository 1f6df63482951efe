import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { consoleSessionProof } from '../../auth/console-session-proof.ts';
import { LruMap } from '../../auth/lru-map.ts';
import type { TokenSigner } from '../../auth/tokens.ts';
import type { Clock } from '../../domain/clock.ts';
import { OPERATOR_SCOPE } from '../../domain/scopes.ts';
import {
  type ConsoleSession,
  deleteConsoleSession,
  findConsoleSession,
  insertConsoleSession,
  touchConsoleSession,
} from '../../store/repos/console-sessions.ts';
import type { ConsoleSessionStage, Database } from '../../store/schema.ts';

/** A session secret: 32 random bytes, base64url (the cookie's value). */
const SECRET = /^[A-Za-z0-9_-]{43}$/;
/** A use is written at most this often: the idle timeout is exact to within it. */
const TOUCH_EVERY_MS = 60_000;
/** The operator API tokens the console calls with live this long, and are reused until a minute is left. */
const TOKEN_TTL_S = 300;
/** A login waiting for its second factor lasts this long: the code is typed within minutes. */
const CODE_STAGE_MS = 5 * 60_000;

export interface ConsoleSessionsOptions {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly signer: TokenSigner;
  /** The key of the session header's HMAC, which the operator API's authentication checks. */
  readonly proofKey: Buffer;
  /** Absolute lifetime of a login. */
  readonly sessionMs: number;
  /** A login unused this long ends. */
  readonly idleMs: number;
}

/**
 * The console's logins. The browser holds the secret (an HttpOnly cookie), the store its SHA-256;
 * the CSRF token of a session is an HMAC of the secret, so it needs no storage and no page can
 * compute it without the cookie, which no script can read. The console acts through the operator
 * API with short-lived access tokens of the operator's own client (scope `operator`), issued here
 * for the session: what the operator does in the console is checked, refused and audited exactly
 * as through the API.
 */
export interface ConsoleSessions {
  /** The id of the session a cookie's secret opens (its hash: what the audit log names). */
  idOf(secret: string): string;
  /**
   * Starts a login for the operator (`ok`, or half done: `code` awaits the second factor and
   * lasts five minutes, `enrol` opens only the enrolment page); returns the cookie's secret.
   */
  start(operatorId: string, stage?: ConsoleSessionStage): Promise<string>;
  /**
   * The live session of a cookie's secret, or undefined (unknown, expired, idle, operator
   * disabled). Its `stage` says whether the login is complete: callers check it.
   */
  find(secret: string): Promise<ConsoleSession | undefined>;
  end(secret: string): Promise<void>;
  csrfToken(secret: string): string;
  /** An operator API access token acting as the session's operator. */
  accessToken(session: ConsoleSession): string;
  /** The header that names the session on the operator API requests it makes (auth/console-session-proof.ts). */
  proof(session: ConsoleSession): string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function createConsoleSessions(o: ConsoleSessionsOptions): ConsoleSessions {
  const tokens = new LruMap<string, { token: string; exp: number }>(1000);
  return {
    idOf: sha256,
    async start(operatorId, stage = 'ok') {
      const secret = randomBytes(32).toString('base64url');
      const now = o.clock.now();
      const expiresAt = now + (stage === 'code' ? Math.min(CODE_STAGE_MS, o.sessionMs) : o.sessionMs);
      await insertConsoleSession(o.db, { id: sha256(secret), operatorId, now, expiresAt, stage });
      return secret;
    },
    async find(secret) {
      if (!SECRET.test(secret)) return undefined;
      const now = o.clock.now();
      const session = await findConsoleSession(o.db, sha256(secret), now, o.idleMs);
      if (session && now - session.lastSeenAt >= TOUCH_EVERY_MS)
        await touchConsoleSession(o.db, session.id, now);
      return session;
    },
    async end(secret) {
      if (SECRET.test(secret)) await deleteConsoleSession(o.db, sha256(secret));
    },
    csrfToken(secret) {
      return createHmac('sha256', secret).update('vrp-console-csrf').digest('base64url');
    },
    proof(session) {
      return consoleSessionProof(o.proofKey, session.id, session.clientId);
    },
    accessToken(session) {
      // The token version is part of the key: a rotation of the client's secret revokes tokens.
      const key = `${session.id}:${session.tokenVersion}`;
      const nowS = Math.floor(o.clock.now() / 1000);
      const cached = tokens.get(key);
      if (cached && cached.exp - nowS > 60) return cached.token;
      const exp = nowS + TOKEN_TTL_S;
      const token = o.signer.issue({
        clientId: session.clientId,
        resellerId: '',
        scopes: [OPERATOR_SCOPE],
        version: session.tokenVersion,
        exp,
      });
      tokens.set(key, { token, exp });
      return token;
    },
  };
}
