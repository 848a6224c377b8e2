import { ContractError } from '../contract/errors.js';
import { DEFINITION_KIND } from '../domain/definition-records.js';
import { READ_ACL_KIND, type ReadAcl } from '../domain/read-acl.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { principalOf } from './definition-commands.js';

type AclCommand = (ctx: CommandContext) => Promise<CommandOutcome>;

async function requireDefinition(ctx: CommandContext, automationId: string): Promise<void> {
  if ((await ctx.tx.get(DEFINITION_KIND, automationId)) === undefined)
    throw new ContractError('NOT_FOUND', `no definition with id ${automationId}`, { automationId });
}

const answer = (acl: ReadAcl | undefined, automationId: string): CommandOutcome => ({
  automationId,
  result: { automationId, restricted: acl !== undefined, readers: acl?.readers ?? [] },
});

/**
 * Grants one principal read of an automation's definition, occurrences, runs, attempts, receipts and events. The
 * first grant restricts the automation: from that commit on, only its readers, the principal its authority binding
 * runs as and the operator read it. Granting a reader again changes nothing.
 */
async function grantRead(ctx: CommandContext): Promise<CommandOutcome> {
  const { automationId, principalId } = ctx.envelope.payload as { automationId: string; principalId: string };
  await requireDefinition(ctx, automationId);
  const before = await ctx.tx.get<ReadAcl>(READ_ACL_KIND, automationId);
  const readers = [...new Set([...(before?.data.readers ?? []), principalId])].sort();
  const acl: ReadAcl = {
    automationId,
    readers,
    restrictedAt: before?.data.restrictedAt ?? ctx.now,
    updatedAt: ctx.now,
    updatedBy: principalOf(ctx),
  };
  await ctx.tx.put(READ_ACL_KIND, automationId, acl, { expectedVersion: before?.version ?? null });
  return answer(acl, automationId);
}

/** Withdraws one principal's read grant; the automation stays restricted, even with no reader left. */
async function revokeRead(ctx: CommandContext): Promise<CommandOutcome> {
  const { automationId, principalId } = ctx.envelope.payload as { automationId: string; principalId: string };
  const before = await ctx.tx.get<ReadAcl>(READ_ACL_KIND, automationId);
  if (before === undefined || !before.data.readers.includes(principalId))
    throw new ContractError('NOT_FOUND', `principal ${principalId} holds no read grant on automation ${automationId}`, {
      automationId,
      principalId,
    });
  const acl: ReadAcl = {
    ...before.data,
    readers: before.data.readers.filter((r) => r !== principalId),
    updatedAt: ctx.now,
    updatedBy: principalOf(ctx),
  };
  await ctx.tx.put(READ_ACL_KIND, automationId, acl, { expectedVersion: before.version });
  return answer(acl, automationId);
}

/** Lifts an automation's restriction: it is readable by every caller again, as it was before its first grant. */
async function liftRestriction(ctx: CommandContext): Promise<CommandOutcome> {
  const { automationId } = ctx.envelope.payload as { automationId: string };
  const before = await ctx.tx.get<ReadAcl>(READ_ACL_KIND, automationId);
  if (before === undefined)
    throw new ContractError('NOT_FOUND', `automation ${automationId} has no read restriction`, { automationId });
  await ctx.tx.delete(READ_ACL_KIND, automationId, before.version);
  return answer(undefined, automationId);
}

/** The read ACL's commands (engine extensions); each commits its record and adoption in one transaction. */
export const READ_ACL_COMMANDS: Readonly<Record<string, AclCommand>> = {
  'x-coven-automata.acl.grant.v1': grantRead,
  'x-coven-automata.acl.revoke.v1': revokeRead,
  'x-coven-automata.acl.lift.v1': liftRestriction,
};
