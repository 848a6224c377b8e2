import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CAPABILITY_PROFILE } from '../contract/capabilities.js';
import { ContractError } from '../contract/errors.js';
import type { StreamRef } from '../changefeed/event-envelope.js';
import type { DaemonContext } from './context.js';
import { streamRefOf } from '../changefeed/event-envelope.js';
import { follow, GLOBAL_FEED } from './follow.js';
import { latestAttempt } from './run-reads.js';
import { rejectionBody } from './http-errors.js';
import { registerOutputRoutes } from './output-route.js';
import { registerConsoleReads } from './console-read-routes.js';
import { callerOf } from './trust.js';
import { NONCE, PROOF_PATH, proofOf } from './daemon-proof.js';

/** A pass this long ago or longer means the engine loop is stuck (upstream's scheduler.stale-pass threshold). */
export const STALE_PASS_MS = 120_000;

/** `GET /healthz`: `ok` while passes keep coming, `degraded` once the last one is older than two minutes. */
function health(ctx: DaemonContext): Record<string, unknown> {
  const lastPassAt = ctx.lastPassAt();
  const since = (lastPassAt ?? ctx.startedAt).getTime();
  return {
    status: Date.now() - since >= STALE_PASS_MS ? 'degraded' : 'ok',
    storeFile: ctx.storeFile,
    pid: process.pid,
    startedAt: ctx.startedAt.toISOString(),
    lastPassAt: lastPassAt?.toISOString() ?? null,
  };
}

/** The cursor of a stream request: `Last-Event-ID` (an EventSource reconnecting) wins over `?after=`. */
function streamRequest(request: FastifyRequest): { stream: StreamRef; after: number } {
  const query = request.query as Record<string, unknown>;
  const lastEventId = request.headers['last-event-id'];
  const text = typeof lastEventId === 'string' ? lastEventId : typeof query.after === 'string' ? query.after : '-1';
  if (!/^-?\d{1,15}$/.test(text) || Number(text) < -1)
    throw new ContractError('VALIDATION_FAILED', `after must be an integer cursor ≥ -1, got ${JSON.stringify(text)}`, {
      field: 'after',
    });
  const stream = typeof query.stream === 'string' ? streamRefOf(query.stream) : GLOBAL_FEED;
  return { stream, after: Number(text) };
}

/** Until a full socket drains or closes; both listeners go, so a subscriber that often stalls leaks none. */
function drained(raw: FastifyReply['raw']): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done).off('close', done);
      resolve();
    };
    raw.once('drain', done).once('close', done);
  });
}

/**
 * `GET /api/v1/events`: one server-sent event per changefeed entry (`id:` its cursor, `event:` its kind,
 * `data:` the EventEnvelope) until the client leaves or the daemon stops. The cursor is checked before the
 * stream opens, so a bad or expired one is an ordinary typed refusal with its status.
 */
async function eventStream(ctx: DaemonContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { stream, after } = streamRequest(request);
  await ctx.engine.commands.changefeed.read(stream, { after, limit: 1 });
  const controller = new AbortController();
  const leave = () => controller.abort();
  reply.raw.once('close', leave);
  ctx.stopping.addEventListener('abort', leave, { once: true });
  reply.hijack();
  const raw = reply.raw;
  // A followed stream may be quiet for long; the listener's idle deadline is for connections that say nothing.
  request.raw.socket.setTimeout(0);
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.write(': following\n\n');
  const subscriber = ctx.subscribers.open(stream, after);
  try {
    for await (const { position, feedPosition, event } of follow(ctx.engine.commands.changefeed, ctx.store, stream, {
      after,
      signal: controller.signal,
    })) {
      // Delivered once the socket took it: a client that stops reading stalls here and shows as lagging.
      const message = `id: ${position}\nevent: ${event.kind}\ndata: ${JSON.stringify(event)}\n\n`;
      const more = raw.write(message, (error) => {
        if (error === undefined || error === null) subscriber.delivered(feedPosition, position);
      });
      if (!more) await drained(raw);
    }
  } catch (error) {
    const typed = error instanceof ContractError ? error : new ContractError('INTERNAL', 'the changefeed stopped');
    if (!raw.destroyed) raw.write(`event: error\ndata: ${JSON.stringify(rejectionBody(typed))}\n\n`);
  } finally {
    subscriber.close();
    ctx.stopping.removeEventListener('abort', leave);
    raw.end();
  }
}

/**
 * `GET /api/v1/daemon-proof?nonce=<64 hex>`: this daemon's proof that it holds the store's token, which the CLI
 * checks before it sends anything (see daemon-proof.ts). The socket's owner, or TCP with the token, only: over
 * tokenless TCP it would be an oracle a listener squatting a dead daemon's socket path could relay to.
 */
function daemonProof(ctx: DaemonContext, request: FastifyRequest): Record<string, unknown> {
  const nonce = (request.query as Record<string, unknown>).nonce;
  if (typeof nonce !== 'string' || !NONCE.test(nonce))
    throw new ContractError('VALIDATION_FAILED', 'nonce must be 64 lowercase hex digits', { field: 'nonce' });
  return { storeFile: ctx.storeFile, pid: process.pid, proof: proofOf(ctx.token, ctx.storeFile, nonce) };
}

/** The daemon's own routes: the command API, the capability profile, health and the changefeed stream. */
export async function registerCoreRoutes(app: FastifyInstance, ctx: DaemonContext): Promise<void> {
  app.post('/api/v1/actions', { config: { trust: 'command' } }, async (request, reply) => {
    const response = await ctx.engine.commands.handle(request.body, callerOf(request, ctx));
    return reply.code(response.outcome === 'rejected' ? (response.error?.httpStatus ?? 500) : 200).send(response);
  });
  app.get('/api/v1/capabilities', { config: { trust: 'read' } }, async () => CAPABILITY_PROFILE);
  app.get('/healthz', { config: { trust: 'read' } }, async () => health(ctx));
  app.get(PROOF_PATH, { config: { trust: 'token' } }, async (request) => daemonProof(ctx, request));
  app.get('/api/v1/events', { config: { trust: 'token' } }, (request, reply) => eventStream(ctx, request, reply));
  app.get<{ Params: { runId: string } }>(
    '/api/v1/runs/:runId/latest-attempt',
    { config: { trust: 'read' } },
    async (request) => ctx.store.read((reader) => latestAttempt(reader, request.params.runId, callerOf(request, ctx))),
  );
  registerOutputRoutes(app, ctx);
  registerConsoleReads(app, ctx);
}
