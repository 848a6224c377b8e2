import type { StreamRef } from '../changefeed/event-envelope.js';
import { ContractError } from '../contract/errors.js';
import { automationOfEntity, automationOfReceipt, hiddenAutomations, type ReadCaller } from '../domain/read-acl.js';
import type { StoreReader } from '../store/store.js';
import type { CommandEnvelope } from './envelope.js';

/** What one read names: one automation's records (with how the caller named them), the global feed, or a list. */
type ReadTarget = { automationId: string | undefined; named: string } | { feed: true } | { list: true };

/** The caller a command reads as: the one its transport vouched for, else its envelope's origin principal. */
export function readerOf(envelope: CommandEnvelope, caller: ReadCaller | undefined): ReadCaller {
  return caller ?? { as: 'principal', principalId: envelope.origin.principal.principalId };
}

async function streamTarget(reader: StoreReader, stream: StreamRef): Promise<ReadTarget> {
  const named = `stream ${stream.kind}/${stream.id}`;
  if (stream.kind === 'feed') return { feed: true };
  if (stream.kind === 'automation') return { automationId: stream.id, named };
  return { automationId: await automationOfEntity(reader, stream.kind, stream.id), named };
}

async function receiptTarget(reader: StoreReader, p: { receiptId?: string; runId?: string }): Promise<ReadTarget> {
  if (p.receiptId !== undefined)
    return { automationId: await automationOfReceipt(reader, p.receiptId), named: `receipt ${p.receiptId}` };
  return { automationId: await automationOfEntity(reader, 'run', p.runId!), named: `run ${p.runId!}` };
}

/** The records a read command names (the envelope schema already checked its payload's shape). */
async function targetOf(reader: StoreReader, command: string, payload: Record<string, unknown>): Promise<ReadTarget> {
  const p = payload as {
    automationId?: string;
    occurrenceId?: string;
    runId?: string;
    receiptId?: string;
    stream?: StreamRef;
  };
  switch (command) {
    case 'definition.get.v1':
    case 'definition.health.v1':
    case 'run.history.v1':
      return { automationId: p.automationId, named: `automation ${p.automationId!}` };
    case 'occurrence.list.v1':
      return p.automationId === undefined
        ? { list: true }
        : { automationId: p.automationId, named: `automation ${p.automationId}` };
    case 'occurrence.get.v1':
    case 'occurrence.history.v1':
      return {
        automationId: await automationOfEntity(reader, 'occurrence', p.occurrenceId!),
        named: `occurrence ${p.occurrenceId!}`,
      };
    case 'run.get.v1':
      return { automationId: await automationOfEntity(reader, 'run', p.runId!), named: `run ${p.runId!}` };
    case 'x-coven-automata.run.output.v1':
      return p.runId !== undefined
        ? { automationId: await automationOfEntity(reader, 'run', p.runId), named: `run ${p.runId}` }
        : {
            automationId: await automationOfEntity(reader, 'occurrence', p.occurrenceId!),
            named: `occurrence ${p.occurrenceId!}`,
          };
    case 'receipt.get.v1':
      return receiptTarget(reader, p);
    case 'events.read.v1':
    case 'events.subscribe.v1':
      return streamTarget(reader, p.stream!);
    default:
      return { list: true };
  }
}

/**
 * The refusal of a read the ACL does not allow. It names only what the caller named (never the automation an
 * occurrence, run or receipt belongs to), and is the same whatever the records hold.
 */
function notAuthorized(caller: ReadCaller, what: string, command: string): ContractError {
  const who = caller.as === 'principal' ? `principal ${caller.principalId}` : 'an unauthenticated caller';
  return new ContractError('AUTHORITY_REQUIRED', `${who} is not authorized to read ${what}`, {
    command,
    ...(caller.as === 'principal' ? { principalId: caller.principalId } : {}),
  });
}

/**
 * The read boundary, decided once per read command from one store snapshot: refuses a read of an automation the
 * caller may not read (AUTHORITY_REQUIRED), and of the global feed while it carries any such automation, since the
 * feed interleaves every automation's events. Returns the automations a list read must leave out.
 * Records the store does not hold pass through, so the read itself answers NOT_FOUND as it always has. A read
 * served outside the command handler is judged as the read command it is part of.
 *
 * @example
 * ```ts
 * const ana = { as: 'principal', principalId: 'ana' } as const;
 * const hidden = await store.read((r) => guardRead(r, 'definition.list.v1', payload, ana));
 * const page = await store.read((r) => listDefinitions(r, payload, hidden));
 * ```
 */
export async function guardRead(
  reader: StoreReader,
  command: string,
  payload: Record<string, unknown>,
  caller: ReadCaller,
): Promise<ReadonlySet<string>> {
  const hidden = await hiddenAutomations(reader, caller);
  if (hidden.size === 0) return hidden;
  const target = await targetOf(reader, command, payload);
  if ('feed' in target) throw notAuthorized(caller, 'the global feed (read one automation stream instead)', command);
  if ('named' in target && target.automationId !== undefined && hidden.has(target.automationId))
    throw notAuthorized(caller, target.named, command);
  return hidden;
}
