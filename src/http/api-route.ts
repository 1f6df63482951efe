import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { TSchema } from 'typebox';
import type { TokenScope } from '../domain/scopes.ts';
import { successEnvelope } from './envelope.ts';

/** The schemas of an API route: its 200 answer is its payload, what variant B puts in `data`. */
export interface ApiSchema extends FastifySchema {
  readonly response: { readonly 200: TSchema };
}

// Few answers carry a message; a weak map spares every reply a field for them.
const messages = new WeakMap<FastifyReply, string>();

/** The message of this request's success answer (empty unless set): a no-op says why nothing was done. */
export function answerMessage(reply: FastifyReply, message: string): void {
  messages.set(reply, message);
}

/**
 * Fastify has serialized the handler's payload with the route's 200 schema (fast-json-stringify:
 * once, and only declared fields); the envelope of the request's variant goes around that text.
 * Errors come enveloped from the error handler and pass as they are.
 */
function wrapInEnvelope(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: Error | null, value?: unknown) => void,
): void {
  if (reply.statusCode >= 300 || typeof payload !== 'string') done(null, payload);
  else done(null, successEnvelope(request.variant, payload, messages.get(reply)));
}

/**
 * Options of an API route: the scope its token needs (app.ts authenticates it), its schemas,
 * whose 200 response is the payload its handler returns, typed by the TypeBox type provider,
 * and, for a route that changes state, its audit action (plugins/audit.ts).
 */
export function apiRoute<const S extends ApiSchema>(scope: TokenScope, schema: S, audit?: string) {
  return { config: { scope, audit }, schema, onSend: wrapInEnvelope };
}

/**
 * The handler of a route with schemas `S`, typed by them as an inline handler is: for a handler
 * that is written once and registered on more than one path.
 */
export type ApiHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
>;
