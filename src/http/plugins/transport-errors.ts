// Errors raised below our routes — by Node's HTTP parser (malformed request line or header, headers
// over the size limit, a client too slow to send its request, an `Expect` we do not support, a
// missing Host, CONNECT) or by Fastify's router (a malformed percent-encoding, a path parameter over
// the length limit) — are answered in the same error envelope as every other error, with stable
// codes of their own.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../../domain/errors.ts';
import { envelope } from '../../contract/error-envelope.ts';

function newRequestId(): string {
  return `req_${randomUUID().replace(/-/g, '')}`;
}

/** What Node's parser reported, as our code and a message an integrator can act on. */
function clientErrorOf(code: string | undefined): ApiError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'The request was not received in time; send it again.');
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers_too_large', 'The request line and headers are larger than 16 KiB.');
    default:
      return new ApiError('malformed_request', 'The request is not valid HTTP/1.1 (malformed request line or header).');
  }
}

function rawResponse(error: ApiError): string {
  const requestId = newRequestId();
  const body = JSON.stringify(envelope(error, requestId));
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/** Fastify's `clientErrorHandler`: the socket carries no parsed request, so the answer is written raw. */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) socket.write(rawResponse(clientErrorOf(error.code)));
  socket.destroy(error);
}

/** Fastify's `frameworkErrors`: router errors, before any route or hook of ours has run. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const codes: Record<string, [ErrorCode, string]> = {
    FST_ERR_BAD_URL: ['malformed_request', 'The URL is malformed (an invalid percent-encoding).'],
    FST_ERR_MAX_PARAM_LENGTH: ['uri_too_long', 'A path parameter is longer than 100 characters.'],
  };
  const [code, message] = codes[error.code] ?? ['malformed_request', 'The request could not be routed.'];
  void reply
    .code(new ApiError(code, message).status)
    .header('x-request-id', request.id)
    .send(envelope(new ApiError(code, message), request.id));
}

/** An `Expect` other than 100-continue (which Node answers itself): 417 in the envelope. */
function answerUnsupportedExpectation(server: Server): void {
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const requestId = newRequestId();
    const body = JSON.stringify(
      envelope(
        new ApiError(
          'expectation_failed',
          'Only `Expect: 100-continue` is supported; send the request without this Expect header.',
        ),
        requestId,
      ),
    );
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': requestId,
      connection: 'close',
    });
    response.end(body);
  });
}

/**
 * Node's own answers to three edge cases of the transport, replaced by ours, in the envelope with an
 * x-request-id:
 *
 *  - `Expect: 100-continue`: Node answers `100 Continue` as soon as the headers arrive, inviting a
 *    body it has not looked at. Here the request goes through the usual hooks first, and `100
 *    Continue` is sent only once the key has authenticated (onRequest) and the declared
 *    Content-Length is within the body limit (preParsing, just before the body is read); otherwise
 *    the answer (401, 413, 429, …) goes at once, with `connection: close`, so a refused upload is
 *    never read.
 *  - a request without `Host` (HTTP/1.1 requires one): Node's bare 400 is replaced by 400
 *    `malformed_request`. The server must be created with `requireHostHeader: false`.
 *  - `CONNECT`: this is not a proxy. Node would close the connection without a word; the answer is 400
 *    `malformed_request` (an origin server has no resource at an authority-form target).
 */
export function registerTransportAnswers(app: FastifyInstance, bodyLimitBytes: number): void {
  const server = app.server;
  answerUnsupportedExpectation(server);
  // Listening to checkContinue stops Node's automatic 100 Continue: the request proceeds as any other.
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) =>
    server.emit('request', request, response),
  );
  server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    socket.on('error', () => undefined);
    socket.end(
      rawResponse(new ApiError('malformed_request', 'CONNECT is not served: this is an HTTP API, not a proxy.')),
      () => socket.destroy(),
    );
  });

  const continued = new WeakSet<FastifyRequest>();
  app.addHook('onRequest', async (request) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      throw new ApiError('malformed_request', 'The request has no Host header, which HTTP/1.1 requires.');
    }
  });
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!expectsContinue(request) || request.is404) return payload;
    // A route may take more than the default (a rail statement): its own limit applies.
    const limit = request.routeOptions.bodyLimit ?? bodyLimitBytes;
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > limit)
      throw new ApiError('payload_too_large', `The request body is larger than ${limit / 1024} KiB.`);
    reply.raw.writeContinue();
    continued.add(request);
    return payload;
  });
  app.addHook('onSend', async (request, reply) => {
    // A client told to wait for 100 Continue that gets a final answer instead may send its body anyway.
    if (expectsContinue(request) && !continued.has(request)) reply.header('connection', 'close');
  });
}

function expectsContinue(request: FastifyRequest): boolean {
  return request.headers.expect?.toLowerCase() === '100-continue';
}
