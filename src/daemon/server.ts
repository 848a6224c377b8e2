import { chmodSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { ContractError } from '../contract/errors.js';
import { MAX_COMMAND_BYTES, toPlainJson } from '../command-handler/plain-json.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';
import type { Daemon, DaemonContext, DaemonOptions } from './context.js';
import {
  daemonRecordPath,
  issueToken,
  removeDaemonFiles,
  removeStaleSocket,
  socketPathFor,
  writePrivateFile,
  type DaemonRecord,
} from './files.js';
import { answerClientError, installErrorHandling, refuseConnection } from './http-errors.js';
import { registerCoreRoutes } from './routes.js';
import { SubscriberRegistry } from './subscribers.js';
import { authorityRequired, isReadCommand, isTrusted, markTcp, overTcp, routeTrust } from './trust.js';
import { createLimitedServer, resolveLimits, type ConnectionLimits } from './connection-limits.js';
import { foreignRequest, loopbackHosts } from './host-guard.js';
import { tokenlessView } from './tokenless-view.js';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** Hosts `--listen` accepts: loopback only, since TCP is reachable by every local user. */
const LOOPBACK = new Set(['127.0.0.1', '::1']);
/** How long close() lets in-flight requests finish before it drops their connections. */
const DRAIN_MS = 5_000;

/** Refuses a non-loopback or malformed listen address, before anything is opened. */
export function checkListen(listen: { host: string; port: number }): void {
  if (!LOOPBACK.has(listen.host))
    throw new ContractError(
      'VALIDATION_FAILED',
      `--listen: ${listen.host} is not a loopback address; the daemon listens on 127.0.0.1 or ::1 only`,
      { field: 'listen', host: listen.host },
    );
  if (!Number.isInteger(listen.port) || listen.port < 0 || listen.port > 65_535)
    throw new ContractError('VALIDATION_FAILED', `--listen: port ${listen.port} is not a TCP port`, {
      field: 'listen',
    });
}

/** What the TCP guards need of the listener: the Host values it answers to, known once it is bound. */
interface TcpGuard {
  hosts: ReadonlySet<string>;
  publicReads: boolean;
}

/**
 * Guards every request by its trust (see {@link routeTrust}); unknown routes fall through to NOT_FOUND. Over
 * TCP, first of all, a foreign Host or Origin is refused, before any body is read or route matched.
 */
function installTrust(app: FastifyInstance, ctx: DaemonContext, tcp: TcpGuard): void {
  app.addHook('onRequest', async (request) => {
    if (!overTcp(request)) return;
    const foreign = foreignRequest(request.headers, tcp.hosts);
    if (foreign !== undefined) throw foreign;
  });
  // Last, on every JSON answer (reads, refusals, health): a tokenless TCP caller gets the redacted view.
  app.addHook('preSerialization', async (request, _reply, payload) =>
    tcp.publicReads || !overTcp(request) || isTrusted(request, ctx) ? payload : tokenlessView(payload),
  );
  // Token routes are refused before their body is even read; command routes once the body names its command.
  app.addHook('onRequest', async (request) => {
    if (request.is404 || routeTrust(request) !== 'token') return;
    if (!isTrusted(request, ctx)) throw authorityRequired(`${request.method} ${request.routeOptions.url ?? ''}`);
  });
  app.addHook('preHandler', async (request) => {
    if (request.is404 || routeTrust(request) !== 'command') return;
    if (!isReadCommand(request.body) && !isTrusted(request, ctx)) {
      const command = (request.body as { command?: unknown } | undefined)?.command;
      throw authorityRequired(typeof command === 'string' ? command.slice(0, 64) : 'a command');
    }
  });
}

/** The app: bodies parsed as the engine parses commands, typed errors everywhere, trust, routes, plugins. */
async function buildApp(
  ctx: DaemonContext,
  options: DaemonOptions,
  tcp: TcpGuard,
  factory: (handler: Handler) => Server,
) {
  const app = Fastify({
    serverFactory: factory,
    bodyLimit: MAX_COMMAND_BYTES,
    clientErrorHandler: answerClientError,
    logger: false,
    return503OnClosing: true,
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, toPlainJson(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  installErrorHandling(app);
  installTrust(app, ctx, tcp);
  await registerCoreRoutes(app, ctx);
  for (const plugin of options.plugins ?? []) await plugin(app, ctx);
  await app.ready();
  return app;
}

function listen(server: Server, target: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if (typeof target === 'string') server.listen(target, done);
    else server.listen(target.port, target.host, done);
  });
}

/** The Unix socket, created 0600 (the umask is narrowed while it binds, so it is never briefly wider). */
async function listenOnSocket(server: Server, socketPath: string): Promise<void> {
  removeStaleSocket(socketPath);
  const umask = process.umask(0o177);
  try {
    await listen(server, socketPath);
  } finally {
    process.umask(umask);
  }
  chmodSync(socketPath, PRIVATE_FILE_MODE);
}

/** Stops accepting, lets in-flight requests finish for a moment, then drops what is left. */
async function closeServer(server: Server): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
  await closed;
  clearTimeout(timer);
}

/**
 * Serves the engine's commands on a Unix socket beside the store (mode 0600) and, with `listen`, on loopback
 * TCP; writes `<store>.token` and `<store>.daemon.json` (both 0600) so clients find it. The caller owns the
 * store (its lock) and starts the engine; `close()` undoes only what this started.
 */
export async function startServer(options: DaemonOptions): Promise<Daemon> {
  if (options.listen !== undefined) checkListen(options.listen);
  const socketPath = socketPathFor(options.storeFile);
  const token = issueToken(options.storeFile);
  const stopping = new AbortController();
  const ctx: DaemonContext = {
    engine: options.engine,
    store: options.store,
    storeFile: options.storeFile,
    token,
    startedAt: new Date(),
    stopping: stopping.signal,
    lastPassAt: options.lastPassAt ?? (() => undefined),
    subscribers: new SubscriberRegistry(),
  };
  const limits: ConnectionLimits = resolveLimits(options.limits);
  const guard: TcpGuard = { hosts: new Set(), publicReads: options.publicReads === true };
  const servers: Server[] = [];
  const app = await buildApp(ctx, options, guard, (handler) => {
    // One server per listener, each with its own connection count, so a TCP flood never starves the socket.
    const unix = createLimitedServer(handler, limits, refuseConnection);
    servers.push(unix);
    if (options.listen !== undefined) {
      const tcp = createLimitedServer(handler, limits, refuseConnection);
      tcp.prependListener('connection', markTcp);
      tcp.on('clientError', answerClientError);
      servers.push(tcp);
    }
    return unix;
  });
  let url: string | undefined;
  try {
    await listenOnSocket(servers[0]!, socketPath);
    if (options.listen !== undefined) {
      await listen(servers[1]!, options.listen);
      const { port } = servers[1]!.address() as { port: number };
      guard.hosts = loopbackHosts(port);
      url = `http://${options.listen.host === '::1' ? '[::1]' : options.listen.host}:${port}`;
    }
    const record: DaemonRecord = { pid: process.pid, socketPath, startedAt: ctx.startedAt.toISOString() };
    if (url !== undefined) record.url = url;
    writePrivateFile(daemonRecordPath(options.storeFile), `${JSON.stringify(record, null, 2)}\n`);
  } catch (error) {
    await Promise.all(servers.map(closeServer));
    await app.close();
    removeDaemonFiles(options.storeFile, socketPath);
    throw error;
  }
  let closing: Promise<void> | undefined;
  const close = async () => {
    stopping.abort();
    await Promise.all(servers.map(closeServer));
    await app.close();
    removeDaemonFiles(options.storeFile, socketPath);
  };
  return { socketPath, url, token, close: () => (closing ??= close()) };
}
