import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../domain/errors.ts';
import type { Permission } from '../../domain/roles.ts';
import { OPERATOR_SCOPE } from '../../domain/scopes.ts';
import { type ApiSchema, apiRoute } from '../api-route.ts';
import { isFields } from '../fields.ts';

/** A route without query parameters takes none: any one given is refused as unknown. */
const NoQuery = Type.Object({}, { additionalProperties: false });

async function refuseRepeatedQueryAndBody(request: FastifyRequest): Promise<void> {
  await refuseRepeatedQuery(request);
  refuseBody(request);
}

/**
 * An object body schema with no key but its own: a key the route does not know (a typo such as
 * `{"gpu":1}` for a quota) is 400 `validation_failed` naming it, never ignored. The reseller
 * API shares some of these schemas and keeps its own leniency: the copy is the operator route's.
 */
function strictObject(given: unknown): object | undefined {
  if (typeof given !== 'object' || given === null || !('type' in given) || given.type !== 'object')
    return undefined;
  return { ...given, additionalProperties: false };
}

/** A route without a body schema takes none: a body with a key (or that is no object) is refused, as an unknown key. */
function refuseBody(request: FastifyRequest): void {
  const body: unknown = request.body;
  if (body === undefined) return;
  if (!isFields(body)) throw new ApiError('validation_failed', 'this operation takes no body');
  const [key] = Object.keys(body);
  if (key !== undefined) throw new ApiError('validation_failed', `${key} is not a known field`);
}

/** A query parameter given more than once (`status=a&status=b`) is a filter the route cannot read as one value. */
async function refuseRepeatedQuery(request: FastifyRequest): Promise<void> {
  const query = isFields(request.query) ? request.query : {};
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value))
      throw new ApiError('validation_failed', `query parameter ${name} is given more than once`);
  }
}

/**
 * Options of an operator API route: scope `operator` (which only operator clients hold, so a
 * reseller's token gets 403), always the variant B envelope (docs/design/contract.md#operator-api;
 * an `X-Envelope-Variant` header is ignored), and for a route that changes state its audit action.
 * Its body keys are exactly those its schema names: an unknown one is 400 `validation_failed` naming it.
 * Its query parameters are exactly those its schema names, each once: an unknown one (a filter
 * misspelt, or PHP's array form `reseller_id[]=`) or a repeated one is 400 `validation_failed`
 * naming it, never ignored, so a filter that is not applied never looks applied.
 * `permission` is what the operator's role must allow (domain/roles.ts); without it a GET is a
 * `read` and anything else `manage` (plugins/authenticate.ts checks it, 403 `insufficient_role`).
 * The handler gets its operator from operatorCaller(request) and passes auditContext(request)
 * into the domain operation it calls.
 */
export function operatorRoute<const S extends ApiSchema>(schema: S, audit?: string, permission?: Permission) {
  const given = schema.querystring;
  const querystring =
    typeof given === 'object' && given !== null ? { ...given, additionalProperties: false } : NoQuery;
  const body = strictObject(schema.body);
  const options = apiRoute(OPERATOR_SCOPE, { ...schema, querystring, ...(body && { body }) } as S, audit);
  return {
    ...options,
    config: { ...options.config, variant: 'B' as const, ...(permission ? { permission } : {}) },
    preValidation: body || schema.body ? refuseRepeatedQuery : refuseRepeatedQueryAndBody,
  };
}
