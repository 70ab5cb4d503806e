import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTransientDatabaseError } from '../../db/database.ts';
import { ApiError, validationFailed } from '../../domain/errors.ts';
import { envelope } from '../../contract/error-envelope.ts';
import { RETRY_AFTER_S } from '../errors.ts';
import { toFieldErrors } from '../validation.ts';

/** Maps the framework's own errors to our codes, so every error has the envelope. */
function fromFrameworkError(error: FastifyError): ApiError | undefined {
  if (error.validation) {
    const part = error.validationContext ?? 'body';
    return validationFailed(toFieldErrors(error.validation as never, part));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is larger than 64 KiB.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with `content-type: application/json`.');
    case 'FST_ERR_RATE_LIMIT':
      return undefined;
  }
  if (error instanceof SyntaxError) return new ApiError('invalid_json', 'The request body is not valid JSON.');
  return undefined;
}

/** `notFoundHint` ends a 404 `route_not_found` message: where the routes of this listener are listed. */
export function registerErrorHandling(app: FastifyInstance, notFoundHint = 'See GET /v1/openapi.json.'): void {
  app.setErrorHandler((error: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = error instanceof ApiError ? error : fromFrameworkError(error as FastifyError);
    if (apiError) {
      if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
      if (apiError.status === 503 || apiError.code === 'payout_batches_in_progress')
        reply.header('retry-after', String(RETRY_AFTER_S));
      return reply.code(apiError.status).send(envelope(apiError, request.id));
    }
    if (isTransientDatabaseError(error)) {
      // Only the code and message: a driver error's detail may quote parameters.
      request.log.warn(
        { code: (error as { code?: string }).code, message: (error as Error).message },
        'database unavailable',
      );
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_S))
        .send(
          envelope(
            new ApiError(
              'service_unavailable',
              'The database is not reachable right now; nothing was lost. Retry in a moment (with the same Idempotency-Key).',
            ),
            request.id,
          ),
        );
    }
    const status = (error as FastifyError).statusCode;
    if (status === 404 || status === 403) {
      // A plugin's own refusal (the reference's static files: a missing or forbidden file name).
      return reply
        .code(404)
        .send(
          envelope(
            new ApiError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`),
            request.id,
          ),
        );
    }
    if (status !== undefined && status >= 400 && status < 500) {
      // A client error the framework raised that we have no specific code for.
      return reply.code(400).send(envelope(new ApiError('malformed_request', 'The request is malformed.'), request.id));
    }
    request.log.error({ err: error }, 'unexpected error');
    return reply
      .code(500)
      .send(
        envelope(
          new ApiError(
            'internal_error',
            'Something went wrong on our side. Quote the request_id when contacting support.',
          ),
          request.id,
        ),
      );
  });

  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .send(
        envelope(
          new ApiError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}. ${notFoundHint}`),
          request.id,
        ),
      );
  });
}
