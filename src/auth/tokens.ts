import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { isTokenScope, type TokenScope } from '../domain/scopes.ts';
import { randomPoolBytes } from '../random-pool.ts';

/** What a verified access token says. */
export interface TokenClaims {
  readonly clientId: string;
  /** The tenant the token acts in; '' for an operator's token, which acts in none. */
  readonly resellerId: string;
  readonly scopes: readonly TokenScope[];
  /** The client's token version at issue time; a rotation or revocation bumps it. */
  readonly version: number;
  /** Expiry, epoch seconds. */
  readonly exp: number;
}

interface Payload {
  c: string;
  r: string;
  s: string;
  v: number;
  e: number;
  j: string;
}

const PREFIX = 'vrp1.';
const PAYLOAD_KEYS = ['c', 'r', 's', 'v', 'e', 'j'];

/**
 * The bytes `text` spells, if it is their one base64url spelling. Node's decoder skips
 * padding, stray characters and the unused low bits of the last character, so several
 * texts decode alike; a token is accepted in exactly the form it was issued in.
 */
function decodeCanonical(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

/**
 * The claims of a signed payload, if it has exactly the fields issue() writes, each of its
 * type: a payload signed with our key but of another shape (an older or damaged issuer)
 * is an invalid token, not a crash further on.
 */
function claimsOf(value: unknown): TokenClaims | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const p: Record<string, unknown> = { ...value };
  const keys = Object.keys(p);
  if (keys.length !== PAYLOAD_KEYS.length || !PAYLOAD_KEYS.every((k) => Object.hasOwn(p, k)))
    return undefined;
  const { c, r, s, v, e, j } = p;
  if (typeof c !== 'string' || typeof r !== 'string' || typeof s !== 'string' || typeof j !== 'string') {
    return undefined;
  }
  if (
    typeof v !== 'number' ||
    !Number.isSafeInteger(v) ||
    typeof e !== 'number' ||
    !Number.isSafeInteger(e)
  ) {
    return undefined;
  }
  const scopes = s.split(' ').filter(Boolean);
  if (!scopes.every(isTokenScope)) return undefined;
  return Object.freeze({ clientId: c, resellerId: r, scopes: Object.freeze(scopes), version: v, exp: e });
}

/**
 * Self-contained access tokens: `vrp1.<payload>.<HMAC-SHA256>`. Verifying one is a hash and a
 * map look-up (auth/client-state.ts), with no store round trip on the request path.
 */
export interface TokenSigner {
  issue(claims: TokenClaims): string;
  /** The claims if the signature holds and the token has not expired at `nowMs`; undefined otherwise. */
  verify(token: string, nowMs: number): TokenClaims | undefined;
}

/** Verified tokens remembered per process, so a client's repeated token costs a map look-up. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * The key a verified token is remembered by: its last 43 characters (a signature's length), not
 * the whole token, whose hash V8 computes afresh for each request's copy of it, ~300 characters
 * (bench/FINDINGS.md, "The request histogram's series bound once, and a token's look-up key").
 * Only the key is short: a hit counts only if the whole token is the one remembered.
 */
const cacheKey = (token: string) => token.slice(-43);

interface Verified {
  readonly token: string;
  readonly claims: TokenClaims;
}

export function createTokenSigner(key: Buffer): TokenSigner {
  // One KeyObject: building it from raw bytes on every HMAC was the hot path's largest cost.
  const keyObject = createSecretKey(key);
  const mac = (data: string) => createHmac('sha256', keyObject).update(data).digest();
  const verified = new Map<string, Verified>();
  return {
    issue(claims) {
      const payload: Payload = {
        c: claims.clientId,
        r: claims.resellerId,
        s: claims.scopes.join(' '),
        v: claims.version,
        e: claims.exp,
        // From the process's pool of random bytes: a call of its own into the system's
        // generator was a seventh of a token issue's CPU (bench/FINDINGS.md).
        j: randomPoolBytes(9).toString('base64url'),
      };
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${PREFIX}${body}.${mac(body).toString('base64url')}`;
    },
    verify(token, nowMs) {
      const known = verified.get(cacheKey(token));
      if (known?.token === token) return known.claims.exp * 1000 > nowMs ? known.claims : undefined;
      if (!token.startsWith(PREFIX) || token.length > 2048) return undefined;
      const [body, signature, ...rest] = token.slice(PREFIX.length).split('.');
      if (body === undefined || signature === undefined || rest.length > 0) return undefined;
      const given = decodeCanonical(signature);
      const expected = mac(body);
      if (!given || given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      const json = decodeCanonical(body);
      if (!json) return undefined;
      let claims: TokenClaims | undefined;
      try {
        claims = claimsOf(JSON.parse(json.toString('utf8')));
      } catch {
        return undefined;
      }
      if (!claims || claims.exp * 1000 <= nowMs) return undefined;
      if (verified.size >= VERIFIED_CACHE_SIZE) verified.clear();
      verified.set(cacheKey(token), { token, claims });
      return claims;
    },
  };
}
