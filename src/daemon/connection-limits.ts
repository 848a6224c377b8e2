import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ContractError } from '../contract/errors.js';

/**
 * What one listener (the Unix socket, loopback TCP) holds at most and for how long. Each listener counts its own
 * connections, so a flood on TCP never takes the owner's socket down with it.
 */
export interface ConnectionLimits {
  /**
   * Connections one listener holds. A newcomer beyond it sheds the oldest connection that is not being served
   * (idle between requests, or still sending its request); when every one is being served, the newcomer is
   * answered CONCURRENCY_LIMIT (429, retryable) and closed.
   */
  maxConnections: number;
  /** How long a request's headers may take to arrive (Node's `headersTimeout`). */
  headersTimeoutMs: number;
  /** How long a whole request, headers and body, may take to arrive (Node's `requestTimeout`). */
  requestTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request (Node's `keepAliveTimeout`). */
  keepAliveTimeoutMs: number;
  /** A connection silent this long (nothing sent, nothing answered) is closed (Fastify's `connectionTimeout`). */
  idleTimeoutMs: number;
}

/** The daemon's defaults: far above what the CLI and a few dashboard tabs use, far below the process's fd limit. */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = {
  maxConnections: 256,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
};

/** The limits with the defaults filled in, refused before anything listens when one is not a usable number. */
export function resolveLimits(given: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...given };
  for (const [field, value] of Object.entries(limits))
    if (!Number.isInteger(value) || value < 1)
      throw new ContractError('VALIDATION_FAILED', `connection limit ${field} must be a positive integer`, {
        field: `limits.${field}`,
      });
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new ContractError('VALIDATION_FAILED', 'limits.headersTimeoutMs must not exceed limits.requestTimeoutMs', {
      field: 'limits.headersTimeoutMs',
    });
  return limits;
}

/** Node checks its header and request deadlines on a timer; a quarter of the shorter one keeps the cut close. */
const checkingInterval = (limits: ConnectionLimits) =>
  Math.max(25, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)));

/**
 * The request a connection is being served for: its body has fully arrived and its answer is not finished.
 * Such a connection is never shed; one still sending its request is, so a slow sender cannot hold a place.
 */
function beingServed(request: IncomingMessage | undefined): boolean {
  return request !== undefined && request.complete;
}

/** What a limited listener knows of each of its connections, for {@link refuseUnlessDaemonWasLate}. */
interface ConnectionState {
  readonly requestTimeoutMs: number;
  /** Requests the connection has begun. */
  requests: number;
  reprieved: boolean;
}

const connections = new WeakMap<Socket, ConnectionState>();

/**
 * Refuses a connection Node timed out, unless the daemon was the late one. Node checks its header and request
 * deadlines on a timer, and a loop turn runs its timers before it reads its sockets: after the loop was held (a
 * launch's fork on a loaded machine, a long synchronous step), a connection accepted before, whose request already
 * waited unread in the socket, is judged late. So for a connection that had sent nothing when it timed out, the
 * verdict waits one turn, past the reads: bytes arrived, the connection is reprieved, once. A request that begins
 * then is under Node's deadlines afresh; bytes that begin none (blank lines) are refused after one request window.
 * A connection that had sent anything is refused at once: a sender trickling its request gains nothing.
 */
export function refuseUnlessDaemonWasLate(socket: Socket, refuse: () => void): void {
  const state = connections.get(socket);
  if (state === undefined || state.reprieved || socket.bytesRead !== 0) return refuse();
  setImmediate(() => {
    if (socket.destroyed) return;
    if (socket.bytesRead === 0) return refuse();
    state.reprieved = true;
    const fallback = setTimeout(() => {
      if (!socket.destroyed && state.requests === 0) refuse();
    }, state.requestTimeoutMs).unref();
    socket.once('close', () => clearTimeout(fallback));
  });
}

function oldestNotServed(open: Set<Socket>, current: WeakMap<Socket, IncomingMessage>): Socket | undefined {
  for (const held of open) if (!beingServed(current.get(held))) return held;
  return undefined;
}

/**
 * An HTTP server for one listener with the limits applied: Node's header, request and keep-alive deadlines,
 * Fastify's idle (`connectionTimeout`) deadline as the socket timeout, and the connection cap with shedding.
 * `refuse` answers a newcomer that found every place taken by a connection being served.
 */
export function createLimitedServer(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  limits: ConnectionLimits,
  refuse: (socket: Socket, error: ContractError) => void,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits),
      // A request without Host reaches the Host guard, which refuses it with a typed envelope over TCP.
      requireHostHeader: false,
    },
    handler,
  );
  server.setTimeout(limits.idleTimeoutMs);
  // Oldest first: a Set iterates in insertion order.
  const open = new Set<Socket>();
  const current = new WeakMap<Socket, IncomingMessage>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    current.set(request.socket, request);
    const state = connections.get(request.socket);
    if (state !== undefined) state.requests++;
    response.once('close', () => {
      if (current.get(request.socket) === request) current.delete(request.socket);
    });
  });
  server.on('connection', (socket: Socket) => {
    if (open.size >= limits.maxConnections) {
      const oldest = oldestNotServed(open, current);
      if (oldest === undefined) {
        refuse(
          socket,
          new ContractError(
            'CONCURRENCY_LIMIT',
            `every one of this listener's ${limits.maxConnections} connections is being served; retry shortly`,
            { limit: limits.maxConnections },
            { retryable: true },
          ),
        );
        return;
      }
      open.delete(oldest);
      oldest.destroy();
    }
    open.add(socket);
    connections.set(socket, { requestTimeoutMs: limits.requestTimeoutMs, requests: 0, reprieved: false });
    socket.once('close', () => open.delete(socket));
  });
  return server;
}
