import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { BASE } from './base-path.ts';

/**
 * {base_url}: the configured public URL (VRP_BASE_URL), or the one this request reached us at.
 * What the token endpoint's issuer and the console links are built on.
 */
export function baseUrl(ctx: AppContext, request: FastifyRequest): string {
  if (ctx.config.baseUrl) return ctx.config.baseUrl;
  return `${request.protocol}://${request.host}${BASE}`;
}
