import { timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { ContractError } from '../contract/errors.js';
import type { DaemonContext } from './context.js';
import { ANONYMOUS_CALLER, OPERATOR_CALLER, type ReadCaller } from '../domain/read-acl.js';

/**
 * Commands loopback TCP may send without the token: upstream's read list (the contract's reads and its
 * read-only diagnostics). `events.subscribe.v1` is the changefeed, which needs the token like the stream.
 */
export const READ_COMMANDS: ReadonlySet<string> = new Set([
  'definition.list.v1',
  'definition.get.v1',
  'definition.health.v1',
  'run.history.v1',
  'events.read.v1',
  'receipt.get.v1',
  'scheduler.status.v1',
  'occurrence.list.v1',
  'occurrence.get.v1',
  'run.get.v1',
  'occurrence.history.v1',
]);

/**
 * How a route is guarded over TCP (its Fastify `config.trust`): `read` is open on loopback, `token` needs the
 * daemon's token, `command` decides by the command the body names. Routes that name none: GET and HEAD are
 * reads, every other method needs the token.
 */
export type RouteTrust = 'read' | 'token' | 'command';

/** Sockets accepted by the TCP listener; everything else reached the daemon over its owner-only Unix socket. */
const tcpSockets = new WeakSet<Socket>();

/** Marks a connection as TCP, so {@link isTrusted} asks it for the token. */
export function markTcp(socket: Socket): void {
  tcpSockets.add(socket);
}

/** Whether a request came over loopback TCP (any local user, and any web page through a rebound name). */
export const overTcp = (request: FastifyRequest): boolean => tcpSockets.has(request.raw.socket);

/** The token a request carries: `Authorization: Bearer <token>` or `?token=<token>`. */
function tokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match !== null) return match[1];
  }
  const query = request.query as Record<string, unknown> | undefined;
  return typeof query?.token === 'string' ? query.token : undefined;
}

/** Equal secrets, compared in constant time so response timing reveals nothing of the token. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Route-level trust: true for the Unix socket (mode 0600, so only the owner reaches it), or TCP carrying the
 * daemon's token in an `Authorization: Bearer` header or a `?token=` query.
 *
 * @example
 * ```ts
 * app.post('/api/v1/pause-all', async (request) => {
 *   if (!isTrusted(request, ctx)) throw authorityRequired('pause-all');
 *   ...
 * });
 * ```
 */
export function isTrusted(request: FastifyRequest, ctx: DaemonContext): boolean {
  if (!overTcp(request)) return true;
  const token = tokenOf(request);
  return token !== undefined && sameSecret(token, ctx.token);
}

/** The refusal of an untrusted request, decided before anything is read or written. */
export function authorityRequired(what: string): ContractError {
  return new ContractError(
    'AUTHORITY_REQUIRED',
    `${what} needs the daemon's token over TCP (Authorization: Bearer <token> or ?token=<token>); ` +
      'loopback TCP without it is read-only',
    { transport: 'tcp' },
  );
}

/** The trust a route asked for, or its method's default. */
export function routeTrust(request: FastifyRequest): RouteTrust {
  const configured = (request.routeOptions.config as { trust?: RouteTrust } | undefined)?.trust;
  if (configured !== undefined) return configured;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'token';
}

/** Whether an untrusted request may send this command body: only the read list. */
export function isReadCommand(body: unknown): boolean {
  const command = typeof body === 'object' && body !== null ? (body as { command?: unknown }).command : undefined;
  return typeof command === 'string' && READ_COMMANDS.has(command);
}

/**
 * Who a request reads as: the owner (the socket, or TCP with the token) is the operator; loopback TCP without the
 * token authenticated nobody, so the principal its envelope names is a claim the read ACL does not believe.
 */
export const callerOf = (request: FastifyRequest, ctx: DaemonContext): ReadCaller =>
  isTrusted(request, ctx) ? OPERATOR_CALLER : ANONYMOUS_CALLER;
