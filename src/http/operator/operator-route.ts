import { OPERATOR_SCOPE } from '../../domain/scopes.ts';
import { type ApiSchema, apiRoute } from '../api-route.ts';

/**
 * Options of an operator API route: scope `operator` (which only operator clients hold, so a
 * reseller's token gets 403), always the variant B envelope (CONTRACT.md section 11; an
 * `X-Envelope-Variant` header is ignored), and for a route that changes state its audit action.
 * The handler gets its operator from operatorCaller(request) and passes auditContext(request)
 * into the domain operation it calls.
 */
export function operatorRoute<const S extends ApiSchema>(schema: S, audit?: string) {
  const options = apiRoute(OPERATOR_SCOPE, schema, audit);
  return { ...options, config: { ...options.config, variant: 'B' as const } };
}
