import type { IncomingHttpHeaders } from 'node:http';
import type { AppContext } from '../context.ts';
import { isVariant, type Variant } from './envelope.ts';
import type { Caller } from './plugins/authenticate.ts';
import { bearerToken } from './plugins/authenticate.ts';

/** Decides the envelope of an answer from what the request names or implies. */
export type VariantResolver = (headers: IncomingHttpHeaders, caller: Caller | null) => Promise<Variant>;

/**
 * One rule for every answer, whatever its status: a valid `X-Envelope-Variant` header, else
 * the default variant of the application whose token the request carries, else B. The token
 * need not be valid now: an expired or revoked token of a variant-A application still gets
 * variant A, or its strict client could not read why it was refused.
 *
 * A request that passed authentication has its caller, so success answers cost nothing here;
 * only errors met before (or instead of) authentication verify the token's signature and read
 * the application's variant from the client-state cache.
 */
export function createVariantResolver(ctx: AppContext): VariantResolver {
  return async (headers, caller) => {
    const header = headers['x-envelope-variant'];
    if (isVariant(header)) return header;
    if (caller) return caller.state.variant;
    const token = bearerToken(headers.authorization);
    if (token === undefined) return 'B';
    // Verified as at time 0: the signature must hold, expiry does not matter for whose token it is.
    const claims = ctx.signer.verify(token, 0);
    if (!claims) return 'B';
    try {
      const state = await ctx.clientStates.get(claims.clientId, Date.now());
      return state?.variant ?? 'B';
    } catch {
      // The store is down: the error being answered matters more than its envelope.
      return 'B';
    }
  };
}
