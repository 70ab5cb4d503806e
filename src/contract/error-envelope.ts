// The error envelope: how an `ApiError` (src/domain/errors.ts) is written on the wire, by every route
// and by the writers that store an answer under an Idempotency-Key (the bytes sent are the bytes stored).
import type { ApiError, ErrorCode, ErrorType } from '../domain/errors.ts';

export interface ErrorEnvelope {
  error: {
    type: ErrorType;
    code: ErrorCode;
    message: string;
    request_id: string;
    meta?: Record<string, unknown>;
  };
}

export function envelope(error: ApiError, requestId: string): ErrorEnvelope {
  const body: ErrorEnvelope = {
    error: { type: error.type, code: error.code, message: error.message, request_id: requestId },
  };
  if (error.meta && error.code !== 'internal_error') body.error.meta = error.meta;
  return body;
}
