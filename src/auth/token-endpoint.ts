import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { parseRequestedScopes } from '../domain/scopes.ts';
import { guardAttempt } from './attempt-guard.ts';
import { createClientAuthenticator, type SecretVerifier } from './client-authenticator.ts';
import type { ClientCredential } from './client-lookup.ts';
import type { ClientStateCache } from './client-state.ts';
import { createFailureThrottle, type FailureThrottle } from './failure-throttle.ts';
import type { SecretCost } from './secret-hash.ts';
import { AttemptRefused, createSlowCheckGate, type SlowCheckGate } from './slow-check-gate.ts';
import type { TokenSigner } from './tokens.ts';

/** What the token endpoint answers: an RFC 6749 body, its status and headers. */
export interface TokenResponse {
  readonly status: number;
  readonly body: Record<string, string | number>;
  readonly headers: Record<string, string>;
}

export interface TokenRequest {
  readonly authorization: string | undefined;
  readonly body: Record<string, unknown>;
  readonly ip: string;
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function oauthError(
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): TokenResponse {
  return { status, body: { error, error_description: description }, headers: { ...NO_STORE, ...headers } };
}

function field(body: Record<string, unknown>, name: string): string | undefined | null {
  const v = body[name];
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : null; // null: repeated or not a string
}

export interface TokenEndpoint {
  handle(req: TokenRequest): Promise<TokenResponse>;
}

/**
 * The token endpoint's bound on secret hashes at once (SECRET_COST: 32 MiB and ~0.1 s of CPU
 * each): two in the process, one per source address; up to 64 wait in all, 16 per address.
 */
export const TOKEN_HASH_LIMITS = Object.freeze({ total: 2, perKey: 1, queue: 64, perKeyQueue: 16 });

/**
 * What the endpoint needs of the process (the app's context has all of it): its own list, so
 * that auth/ does not import the context, which is built from auth/.
 */
export interface TokenEndpointDeps {
  /** Where clients are looked up: the store, through the process's short-lived cache. */
  readonly clientStates: Pick<ClientStateCache, 'credential'>;
  readonly clock: Clock;
  readonly config: Pick<Config, 'tokenTtl'>;
  readonly signer: TokenSigner;
  readonly secretCost: SecretCost;
}

export interface TokenEndpointOptions {
  readonly throttle?: FailureThrottle;
  /** Bounds the secret hashes running at once (TOKEN_HASH_LIMITS unless given). */
  readonly gate?: SlowCheckGate;
  /** Checks a secret against a stored hash; tests pass one that counts the scrypt work. */
  readonly verifySecret?: SecretVerifier;
}

/**
 * OAuth 2.0 client credentials grant (RFC 6749 section 4.4) with guessing resistance: failures
 * are counted per source address, never per client id, so that nobody can lock an application
 * out by guessing at its secret; its correct secret from its own address always gets a token
 * (unless the process is swamped: then 503 with Retry-After). Each attempt that needs a hash is
 * counted before it, so attempts sent at once cannot all pass, and the hashes running at once are
 * bounded (TOKEN_HASH_LIMITS), so a burst costs no more memory than a few hashes.
 */
export function createTokenEndpoint(
  ctx: TokenEndpointDeps,
  options: TokenEndpointOptions = {},
): TokenEndpoint {
  const throttle = options.throttle ?? createFailureThrottle();
  const gate = options.gate ?? createSlowCheckGate(TOKEN_HASH_LIMITS);
  const clients = createClientAuthenticator(
    (id, fresh) => ctx.clientStates.credential(id, Date.now(), fresh),
    options.verifySecret,
    ctx.secretCost,
  );

  return {
    async handle({ authorization, body, ip }) {
      // A locked-out address is refused before anything it sent is looked at. Lock-outs run on
      // the server's clock, as token expiry does, so that a test can step through them.
      const wait = throttle.retryAfter(ip, ctx.clock.now());
      if (wait > 0) {
        return oauthError(429, 'temporarily_unavailable', `Too many failed attempts; retry in ${wait} s`, {
          'retry-after': String(wait),
        });
      }
      let clientId: string | undefined;
      let secret: string | undefined;
      let usedBasic = false;
      if (authorization !== undefined) {
        const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(authorization);
        if (!m)
          return oauthError(
            401,
            'invalid_client',
            'Unsupported Authorization header; use Basic',
            basicChallenge(),
          );
        const [, credentials = ''] = m;
        const decoded = Buffer.from(credentials, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon < 0)
          return oauthError(401, 'invalid_client', 'Malformed Basic credentials', basicChallenge());
        try {
          // RFC 6749 section 2.3.1: both parts are form-urlencoded before Basic encoding.
          clientId = decodeURIComponent(decoded.slice(0, colon).replaceAll('+', ' '));
          secret = decodeURIComponent(decoded.slice(colon + 1).replaceAll('+', ' '));
        } catch {
          return oauthError(401, 'invalid_client', 'Malformed Basic credentials', basicChallenge());
        }
        usedBasic = true;
      }
      const bodyId = field(body, 'client_id');
      const bodySecret = field(body, 'client_secret');
      const grantType = field(body, 'grant_type');
      const scope = field(body, 'scope');
      for (const [name, v] of Object.entries({
        client_id: bodyId,
        client_secret: bodySecret,
        grant_type: grantType,
        scope,
      })) {
        if (v === null) return oauthError(400, 'invalid_request', `${name} must be given once, as a string`);
      }
      if (usedBasic && bodySecret !== undefined) {
        return oauthError(
          400,
          'invalid_request',
          'Use one client authentication method, not Basic and client_secret both',
        );
      }
      if (usedBasic && bodyId !== undefined && bodyId !== clientId) {
        return oauthError(400, 'invalid_request', 'client_id in the body differs from the Basic credentials');
      }
      if (!usedBasic) {
        clientId = bodyId ?? undefined;
        secret = bodySecret ?? undefined;
      }
      if (!grantType) return oauthError(400, 'invalid_request', 'grant_type is required');
      if (!clientId || secret === undefined) {
        return oauthError(401, 'invalid_client', 'Client authentication is required', basicChallenge());
      }

      // The attempt is counted before its hash and settled after it (attempt-guard.ts).
      const attempt = guardAttempt(throttle, gate, ip, () => ctx.clock.now());
      let client: ClientCredential | undefined;
      try {
        client = await clients.authenticate(clientId, secret, attempt.slowCheck);
      } catch (err) {
        attempt.release();
        if (!(err instanceof AttemptRefused)) throw err;
        const description =
          err.reason === 'locked_out'
            ? `Too many failed attempts; retry in ${err.retryAfter} s`
            : err.reason === 'address_busy'
              ? `Too many attempts at once from this address; retry in ${err.retryAfter} s`
              : `Too many client authentications at once; retry in ${err.retryAfter} s`;
        return oauthError(err.status, 'temporarily_unavailable', description, {
          'retry-after': String(err.retryAfter),
        });
      }
      if (!client) {
        attempt.fail(ctx.clock.now());
        return oauthError(
          401,
          'invalid_client',
          'Client authentication failed',
          usedBasic ? basicChallenge() : {},
        );
      }
      if (!client.enabled) {
        attempt.release();
        return oauthError(
          401,
          'invalid_client',
          client.kind === 'operator' ? 'This operator is disabled' : 'This application is disabled',
          usedBasic ? basicChallenge() : {},
        );
      }
      attempt.succeed();

      if (grantType !== 'client_credentials') {
        return oauthError(400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported');
      }
      // One rule for both kinds of client: the scopes asked for must be ones it may hold. An
      // application may never hold `operator`, an operator client holds nothing else.
      let scopes = client.scopes;
      if (typeof scope === 'string') {
        const asked = parseRequestedScopes(scope);
        if (!asked || asked.length === 0 || !asked.every((s) => client.scopes.includes(s))) {
          return oauthError(
            400,
            'invalid_scope',
            `scope must be a space-separated subset of: ${client.scopes.join(' ')}`,
          );
        }
        scopes = asked;
      }
      const ttl = ctx.config.tokenTtl;
      const token = ctx.signer.issue({
        clientId: client.id,
        resellerId: client.resellerId,
        scopes,
        version: client.tokenVersion,
        exp: Math.floor(ctx.clock.now() / 1000) + ttl,
      });
      return {
        status: 200,
        body: { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: scopes.join(' ') },
        headers: NO_STORE,
      };
    },
  };
}

function basicChallenge(): Record<string, string> {
  return { 'www-authenticate': 'Basic realm="vps_reseller_provider", charset="UTF-8"' };
}
