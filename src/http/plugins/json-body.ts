import fp from 'fastify-plugin';
import { ApiError } from '../../domain/errors.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../json-depth.ts';

/**
 * The API reads JSON and nothing else (docs/design/contract.md#status-codes-and-error-codes). An
 * empty body of any type is no body (billing modules send `Content-Type: application/json` or a
 * form type on POSTs without one), and no body is validated as an empty object; any other body is
 * 415, rather than text Fastify would hand to validation as a string. The token endpoint and the
 * console add a form parser (@fastify/formbody) in their own scopes.
 */
export const jsonBody = fp(
  (app, _options, done) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (_req, body, parsed) => {
      const text = body.trim();
      if (text === '') return parsed(null, undefined);
      if (jsonDepthExceeds(text)) {
        return parsed(
          new ApiError('validation_failed', `The body is nested deeper than ${MAX_JSON_DEPTH} levels`),
          undefined,
        );
      }
      try {
        parsed(null, JSON.parse(text));
      } catch {
        parsed(new ApiError('validation_failed', 'The body is not valid JSON'), undefined);
      }
    });
    app.addContentTypeParser<Buffer>('*', { parseAs: 'buffer' }, (_req, body, parsed) => {
      if (body.length === 0) return parsed(null, undefined);
      parsed(new ApiError('unsupported_media_type', 'Send the body as application/json'), undefined);
    });
    app.addHook('preValidation', (request, _reply, next) => {
      if (request.body === undefined || request.body === null) request.body = {};
      next();
    });
    done();
  },
  { name: 'vrp-json-body' },
);
