import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { parseRequestedScopes } from '../domain/scopes.ts';
import type { Store } from '../store/database.ts';
import { createClientAuthenticator, type SecretVerifier } from './client-authenticator.ts';
import { createFailureThrottle, type FailureThrottle } from './failure-throttle.ts';
import type { SecretCost } from './secret-hash.ts';
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
 * What the endpoint needs of the process (the app's context has all of it): its own list, so
 * that auth/ does not import the context, which is built from auth/.
 */
export interface TokenEndpointDeps {
  readonly store: Pick<Store, 'db'>;
  readonly clock: Clock;
  readonly config: Pick<Config, 'tokenTtl'>;
  readonly signer: TokenSigner;
  readonly secretCost: SecretCost;
}

export interface TokenEndpointOptions {
  readonly throttle?: FailureThrottle;
  /** Checks a secret against a stored hash; tests pass one that counts the scrypt work. */
  readonly verifySecret?: SecretVerifier;
}

/**
 * OAuth 2.0 client credentials grant (RFC 6749 section 4.4) with guessing resistance: failures
 * are counted per source address, never per client id, so that nobody can lock an application
 * out by guessing at its secret; its correct secret from its own address always gets a token.
 */
export function createTokenEndpoint(
  ctx: TokenEndpointDeps,
  options: TokenEndpointOptions = {},
): TokenEndpoint {
  const throttle = options.throttle ?? createFailureThrottle();
  const clients = createClientAuthenticator(ctx.store.db, options.verifySecret, ctx.secretCost);

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
        const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
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

      const client = await clients.authenticate(clientId, secret);
      if (!client) {
        throttle.fail(ip, ctx.clock.now());
        return oauthError(
          401,
          'invalid_client',
          'Client authentication failed',
          usedBasic ? basicChallenge() : {},
        );
      }
      if (!client.enabled) {
        return oauthError(
          401,
          'invalid_client',
          client.kind === 'operator' ? 'This operator is disabled' : 'This application is disabled',
          usedBasic ? basicChallenge() : {},
        );
      }
      throttle.succeed(ip);

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
