import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ContractError, isContractError } from '../contract/errors.js';
import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import { MAX_COMMAND_BYTES } from '../command-handler/plain-json.js';
import { peekIdentity } from '../command-handler/envelope.js';
import { refuseUnlessDaemonWasLate } from './connection-limits.js';

/**
 * A refusal as the body of a rejected CommandResponse, so a client reads one shape whether the engine or the
 * transport refused; `command` and `adoptionKey` name what the body carried, when it could be read.
 */
export function rejectionBody(error: ContractError, body?: unknown): Record<string, unknown> {
  return {
    schemaVersion: SCHEMA_VERSION,
    ...peekIdentity(body),
    outcome: 'rejected',
    error: error.toEnvelope(),
  };
}

/** Fastify's own failures (its error codes) as the contract's typed errors; anything else is INTERNAL. */
function typedError(error: FastifyError): ContractError {
  if (isContractError(error)) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ContractError('PAYLOAD_TOO_LARGE', `request body is larger than ${MAX_COMMAND_BYTES} bytes`, {
        limit: MAX_COMMAND_BYTES,
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ContractError('VALIDATION_FAILED', 'request body must be application/json', {
        field: 'content-type',
      });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ContractError('VALIDATION_FAILED', 'request body does not match its Content-Length', {
        field: 'content-length',
      });
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return new ContractError('VALIDATION_FAILED', `bad request: ${error.message}`);
  // The message of an unexpected failure may carry internals: the log keeps it, the caller gets its class.
  return new ContractError('INTERNAL', 'internal error while serving the request');
}

function reply(replyTo: FastifyReply, error: ContractError, body?: unknown): FastifyReply {
  return replyTo
    .code(error.httpStatus)
    .header('content-type', 'application/json; charset=utf-8')
    .send(rejectionBody(error, body));
}

/** The status line of a frozen HTTP status, for the raw responses written before Fastify saw a request. */
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  504: 'Gateway Timeout',
};

/**
 * Writes a typed refusal straight to a connection Fastify never saw a request on, and ends it. A connection
 * whose sender is still sending (a slow body cut off) is destroyed once the refusal is flushed, since ending
 * only our side would let it keep its place.
 */
export function refuseConnection(socket: Socket, typed: ContractError): void {
  const body = JSON.stringify(rejectionBody(typed));
  const still = typed.code === 'DEADLINE_EXCEEDED' || typed.code === 'CONCURRENCY_LIMIT';
  socket.end(
    `HTTP/1.1 ${typed.httpStatus} ${REASONS[typed.httpStatus] ?? 'Bad Request'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    still ? () => socket.destroy() : undefined,
  );
}

/** A refusal of Node's HTTP parser as the contract's typed error. */
function parserRefusal(error: NodeJS.ErrnoException): ContractError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ContractError('PAYLOAD_TOO_LARGE', 'request headers are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      // Headers or body arrived slower than the listener's limits allow; the place goes to another client.
      return new ContractError('DEADLINE_EXCEEDED', 'the request did not arrive within the time this daemon allows', {
        transport: 'http',
      });
    default:
      return new ContractError('VALIDATION_FAILED', `malformed HTTP request (${error.code ?? 'unparseable'})`);
  }
}

/**
 * Every failure answered with the contract's error envelope and its frozen status: Fastify's errors, unknown
 * routes and wrong methods, and requests so malformed Node's HTTP parser refused them (hostile headers).
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, replyTo: FastifyReply) => {
    const typed = typedError(error);
    if (typed.code === 'INTERNAL') request.log.error({ err: error }, 'request failed');
    return reply(replyTo, typed, request.body);
  });
  app.setNotFoundHandler((request: FastifyRequest, replyTo: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].filter(
      (method) => method !== request.method && app.hasRoute({ method, url: path }),
    );
    const message =
      methods.length > 0
        ? `${request.method} is not served at ${path}; use ${methods.join(' or ')}`
        : `no route ${request.method} ${path}`;
    return reply(replyTo, new ContractError('NOT_FOUND', message, { method: request.method, path }));
  });
}

/** Answers a request Node's HTTP parser refused (bad headers, oversized headers) with a typed envelope. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || (error.code === 'ECONNRESET' && socket.destroyed)) {
    socket.destroy();
    return;
  }
  const refuse = () => refuseConnection(socket, parserRefusal(error));
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') refuseUnlessDaemonWasLate(socket, refuse);
  else refuse();
}
