import type { FastifyInstance, FastifyReply } from 'fastify';
import { ContractError } from '../contract/errors.js';
import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import type { DaemonContext } from './context.js';
import { callerOf } from './trust.js';

const COMMAND = 'x-coven-automata.run.output.v1';
const WHOLE = /^-?\d{1,16}$/;

/** `offset`, `limit` and `attempt` of the query string as whole numbers; anything else is a typed refusal. */
function windowOf(query: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, field] of [
    ['offset', 'offset'],
    ['limit', 'limit'],
    ['attempt', 'attemptNumber'],
  ] as const) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !WHOLE.test(value))
      throw new ContractError('VALIDATION_FAILED', `${name} must be a whole number`, { field: name });
    out[field] = Number(value);
  }
  return out;
}

async function answer(
  ctx: DaemonContext,
  request: Parameters<typeof callerOf>[0],
  reply: FastifyReply,
  target: Record<string, string>,
): Promise<FastifyReply> {
  const response = await ctx.engine.commands.handle(
    {
      schemaVersion: SCHEMA_VERSION,
      command: COMMAND,
      adoptionKey: `output-${Date.now().toString(36)}`,
      origin: { principal: { principalId: 'daemon:http' }, channel: 'http' },
      intent: { statement: 'read what a session printed' },
      payload: { ...target, ...windowOf(request.query as Record<string, unknown>) },
    },
    callerOf(request, ctx),
  );
  return reply.code(response.outcome === 'rejected' ? (response.error?.httpStatus ?? 500) : 200).send(response);
}

/**
 * `GET /api/v1/runs/:runId/output` and `GET /api/v1/occurrences/:occurrenceId/output` (`?offset=&limit=&attempt=`):
 * the `x-coven-automata.run.output.v1` read over HTTP, judged by the read ACL as the caller; a tokenless TCP
 * caller gets the answer with the output withheld, as every read.
 */
export function registerOutputRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  app.get<{ Params: { runId: string } }>(
    '/api/v1/runs/:runId/output',
    { config: { trust: 'read' } },
    async (request, reply) => answer(ctx, request, reply, { runId: request.params.runId }),
  );
  app.get<{ Params: { occurrenceId: string } }>(
    '/api/v1/occurrences/:occurrenceId/output',
    { config: { trust: 'read' } },
    async (request, reply) => answer(ctx, request, reply, { occurrenceId: request.params.occurrenceId }),
  );
}
