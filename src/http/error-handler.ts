import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../domain/errors.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { OPS } from './base-path.ts';
import { errorEnvelope } from './envelope.ts';
import { targetPath } from './target-path.ts';
import type { VariantResolver } from './variant.ts';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/** "cpu must be integer", "body must have required property 'ram'": names the field. */
function describeValidation(err: FastifyError): string {
  const issue = (err.validation?.[0] ?? {}) as ValidationIssue;
  const where = err.validationContext ?? 'body';
  const field = (issue.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  if (issue.keyword === 'required' && typeof issue.params?.['missingProperty'] === 'string') {
    const missing = issue.params['missingProperty'];
    return `${field ? `${field}.` : ''}${missing} is required`;
  }
  if (issue.keyword === 'additionalProperties' && typeof issue.params?.['additionalProperty'] === 'string') {
    const name = issue.params['additionalProperty'];
    return where === 'querystring' && !field
      ? `query parameter ${name} is not one this route takes`
      : `${name} is not a known field`;
  }
  return `${field || where} ${issue.message ?? 'is invalid'}`;
}

/** Maps any error to one answer: ApiError as it says, framework 4xx to our codes, the rest to a bare 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as FastifyError;
  if (e?.validation) return new ApiError('validation_failed', describeValidation(e), { cause: err });
  const map: Record<string, ErrorCode> = {
    FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
    FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation_failed',
    FST_ERR_CTP_EMPTY_JSON_BODY: 'validation_failed',
    FST_ERR_CTP_INVALID_JSON_BODY: 'validation_failed',
    FST_ERR_BAD_URL: 'validation_failed',
    // An id of more than 200 characters is no id of ours, as any other id that is not one.
    FST_ERR_MAX_PARAM_LENGTH: 'not_found',
  };
  const code = e?.code ? map[e.code] : undefined;
  if (code === 'payload_too_large')
    return new ApiError(code, 'The request body is larger than 1 MiB', { cause: err });
  if (code === 'unsupported_media_type') {
    return new ApiError(code, 'Send the body as application/json', { cause: err });
  }
  if (e.code === 'FST_ERR_BAD_URL') {
    return new ApiError('validation_failed', 'The path is not valid percent-encoded UTF-8', { cause: err });
  }
  if (code === 'not_found') return new ApiError(code, 'No route for this path', { cause: err });
  if (code) return new ApiError(code, e.message, { cause: err });
  if (isStoreUnavailable(err)) {
    return new ApiError('store_unavailable', 'The service is temporarily unavailable; try again shortly', {
      cause: err,
      headers: { 'retry-after': '5' },
    });
  }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError('validation_failed', e.message, { cause: err });
  }
  return new ApiError('internal_error', 'Internal error', { cause: err });
}

/** Answers an error: the envelope of the request's variant, or an RFC 6749 body on the token endpoint. */
export type ErrorAnswer = (
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
) => Promise<FastifyReply>;

/**
 * The one place an error becomes a response, for the error handler, the not-found handler and
 * the errors Fastify meets before routing (`frameworkErrors`), so that every answer has the
 * envelope, an error_code and X-Request-Id.
 */
export function createErrorAnswer(resolveVariant: VariantResolver): ErrorAnswer {
  return async (err, request, reply) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500) {
      request.log.error({ err, reqId: request.id }, 'request failed');
    }
    const message = apiError.expose ? apiError.message : `Internal error (request ${request.id})`;
    reply.code(apiError.status).headers(apiError.headers).header('x-request-id', request.id);
    // Requests Fastify refuses before routing have no route options and none of our decorations.
    if (request.routeOptions?.config?.oauth) {
      const error = apiError.status < 500 ? 'invalid_request' : 'server_error';
      return reply.header('cache-control', 'no-store').send({ error, error_description: message });
    }
    // The operator API answers variant B, also on paths under it that name no route (in a
    // target of any form: `http://host/...` too).
    const variant =
      request.routeOptions?.config?.variant ??
      (targetPath(request.url).startsWith(`${OPS}/`)
        ? 'B'
        : await resolveVariant(request.headers, request.caller ?? null));
    return reply.send(errorEnvelope(variant, message, apiError.code, apiError.expose ? apiError.fields : {}));
  };
}
