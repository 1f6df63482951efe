import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Scope } from './scopes.ts';

/** What a verified access token says. */
export interface TokenClaims {
  readonly clientId: string;
  readonly resellerId: string;
  readonly scopes: readonly Scope[];
  /** The application's token version at issue time; a rotation or revocation bumps it. */
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

export function createTokenSigner(key: Buffer): TokenSigner {
  // One KeyObject: building it from raw bytes on every HMAC was the hot path's largest cost.
  const keyObject = createSecretKey(key);
  const mac = (data: string) => createHmac('sha256', keyObject).update(data).digest();
  const verified = new Map<string, TokenClaims>();
  return {
    issue(claims) {
      const payload: Payload = {
        c: claims.clientId,
        r: claims.resellerId,
        s: claims.scopes.join(' '),
        v: claims.version,
        e: claims.exp,
        j: randomBytes(9).toString('base64url'),
      };
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${PREFIX}${body}.${mac(body).toString('base64url')}`;
    },
    verify(token, nowMs) {
      const known = verified.get(token);
      if (known) return known.exp * 1000 > nowMs ? known : undefined;
      if (!token.startsWith(PREFIX) || token.length > 2048) return undefined;
      const dot = token.indexOf('.', PREFIX.length);
      if (dot < 0) return undefined;
      const body = token.slice(PREFIX.length, dot);
      const given = Buffer.from(token.slice(dot + 1), 'base64url');
      const expected = mac(body);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      let p: Payload;
      try {
        p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
      } catch {
        return undefined;
      }
      if (typeof p.e !== 'number' || p.e * 1000 <= nowMs) return undefined;
      const claims: TokenClaims = Object.freeze({
        clientId: p.c,
        resellerId: p.r,
        scopes: Object.freeze(p.s.split(' ').filter(Boolean) as Scope[]),
        version: p.v,
        exp: p.e,
      });
      if (verified.size >= VERIFIED_CACHE_SIZE) verified.clear();
      verified.set(token, claims);
      return claims;
    },
  };
}
