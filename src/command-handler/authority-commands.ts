import { ContractError } from '../contract/errors.js';
import {
  AUTHORITY_KINDS,
  AUTHORITY_SERVICE_ID,
  type ApprovalEntry,
  type AuthorityService,
  type FamiliarEntry,
  type RuntimeCapabilities,
} from '../domain/authority.js';
import type { StoreTransaction } from '../store/store.js';
import type { CommandContext, CommandOutcome } from './context.js';

type AuthorityCommand = (ctx: CommandContext) => Promise<CommandOutcome>;

async function current<T>(tx: StoreTransaction, kind: string, id: string) {
  return tx.get<T>(kind, id);
}

/** Registers a familiar, or a new revision of one: every older revision is stale from this commit on. */
async function registerFamiliar(ctx: CommandContext): Promise<CommandOutcome> {
  const { familiarId, reason } = ctx.envelope.payload as { familiarId: string; reason?: string };
  const before = await current<FamiliarEntry>(ctx.tx, AUTHORITY_KINDS.familiar, familiarId);
  const entry: FamiliarEntry = {
    familiarId,
    revision: (before?.data.revision ?? 0) + 1,
    revoked: false,
    registeredAt: ctx.now,
    ...(reason === undefined ? {} : { reason }),
  };
  await ctx.tx.put(AUTHORITY_KINDS.familiar, familiarId, entry, { expectedVersion: before?.version ?? null });
  return { result: { familiarId, revision: entry.revision, revoked: false } };
}

/** Revokes a familiar's current revision: no binding of it dispatches until it is registered again. */
async function revokeFamiliar(ctx: CommandContext): Promise<CommandOutcome> {
  const { familiarId, reason } = ctx.envelope.payload as { familiarId: string; reason?: string };
  const before = await current<FamiliarEntry>(ctx.tx, AUTHORITY_KINDS.familiar, familiarId);
  if (before === undefined)
    throw new ContractError('NOT_FOUND', `no familiar ${familiarId} is registered`, {
      kind: 'familiar',
      id: familiarId,
    });
  if (before.data.revoked)
    throw new ContractError('ILLEGAL_TRANSITION', `familiar ${familiarId}@${before.data.revision} is already revoked`, {
      familiarId,
      revision: before.data.revision,
    });
  const entry: FamiliarEntry = {
    ...before.data,
    revoked: true,
    revokedAt: ctx.now,
    ...(reason === undefined ? {} : { reason }),
  };
  await ctx.tx.put(AUTHORITY_KINDS.familiar, familiarId, entry, { expectedVersion: before.version });
  return { result: { familiarId, revision: entry.revision, revoked: true, revokedAt: ctx.now } };
}

/** Sets what a runtime holds now; a binding requiring more is refused at its next dispatch. */
async function setCapabilities(ctx: CommandContext): Promise<CommandOutcome> {
  const { runtimeId, capabilities } = ctx.envelope.payload as { runtimeId: string; capabilities: string[] };
  const before = await current<RuntimeCapabilities>(ctx.tx, AUTHORITY_KINDS.runtime, runtimeId);
  const entry: RuntimeCapabilities = { runtimeId, capabilities: [...new Set(capabilities)].sort(), setAt: ctx.now };
  await ctx.tx.put(AUTHORITY_KINDS.runtime, runtimeId, entry, { expectedVersion: before?.version ?? null });
  return { result: { runtimeId, capabilities: entry.capabilities } };
}

/** Marks the authority service (un)available; while unavailable every bound dispatch fails closed. */
async function setAvailability(ctx: CommandContext): Promise<CommandOutcome> {
  const { available, reason } = ctx.envelope.payload as { available: boolean; reason?: string };
  const before = await current<AuthorityService>(ctx.tx, AUTHORITY_KINDS.service, AUTHORITY_SERVICE_ID);
  const entry: AuthorityService = { available, since: ctx.now, ...(reason === undefined ? {} : { reason }) };
  await ctx.tx.put(AUTHORITY_KINDS.service, AUTHORITY_SERVICE_ID, entry, { expectedVersion: before?.version ?? null });
  return { result: { available, since: ctx.now } };
}

/**
 * Grants one single-use approval scoped to one automation, expiring after `ttlMinutes`. A nonce is granted once
 * ever: granting it again is ILLEGAL_TRANSITION, so a consumed approval can never be revived.
 */
async function grantApproval(ctx: CommandContext): Promise<CommandOutcome> {
  const { automationId, nonce, ttlMinutes } = ctx.envelope.payload as {
    automationId: string;
    nonce: string;
    ttlMinutes: number;
  };
  const before = await current<ApprovalEntry>(ctx.tx, AUTHORITY_KINDS.approval, nonce);
  if (before !== undefined)
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `approval nonce ${nonce} was already granted; nonces are single-use`,
      {
        nonce,
        automationId: before.data.automationId,
      },
    );
  const entry: ApprovalEntry = {
    nonce,
    automationId,
    grantedAt: ctx.now,
    expiresAt: new Date(Date.parse(ctx.now) + ttlMinutes * 60_000).toISOString(),
    grantedBy: ctx.envelope.origin.principal.principalId,
  };
  await ctx.tx.put(AUTHORITY_KINDS.approval, nonce, entry, { expectedVersion: null });
  return { automationId, result: { automationId, nonce, grantedAt: entry.grantedAt, expiresAt: entry.expiresAt } };
}

/**
 * Ends open approvals now (every one, or those of one automation or one nonce): each stops authorising from this
 * commit on and is sealed, so it is never consumed and its nonce is never granted again. Consumed approvals and
 * approvals already past their expiry are left as they are.
 */
async function expireApprovals(ctx: CommandContext): Promise<CommandOutcome> {
  const { automationId, nonce, reason } = ctx.envelope.payload as {
    automationId?: string;
    nonce?: string;
    reason?: string;
  };
  const open = (await ctx.tx.list<ApprovalEntry>(AUTHORITY_KINDS.approval)).filter(
    (r) =>
      !r.terminal &&
      r.data.consumed === undefined &&
      Date.parse(r.data.expiresAt) > Date.parse(ctx.now) &&
      (automationId === undefined || r.data.automationId === automationId) &&
      (nonce === undefined || r.data.nonce === nonce),
  );
  const by = ctx.envelope.origin.principal.principalId;
  for (const record of open) {
    const entry: ApprovalEntry = {
      ...record.data,
      expiresAt: ctx.now,
      expired: { at: ctx.now, by, ...(reason === undefined ? {} : { reason }) },
    };
    await ctx.tx.put(AUTHORITY_KINDS.approval, record.id, entry, { expectedVersion: record.version, terminal: true });
  }
  const expired = open.map((r) => r.data.nonce).sort();
  return {
    ...(automationId === undefined ? {} : { automationId }),
    result: { expired, expiredAt: ctx.now },
  };
}

/** The authority registry's commands (engine extensions); each commits its record and adoption in one transaction. */
export const AUTHORITY_COMMANDS: Readonly<Record<string, AuthorityCommand>> = {
  'x-coven-automata.authority.familiar.register.v1': registerFamiliar,
  'x-coven-automata.authority.familiar.revoke.v1': revokeFamiliar,
  'x-coven-automata.authority.capabilities.set.v1': setCapabilities,
  'x-coven-automata.authority.availability.set.v1': setAvailability,
  'x-coven-automata.approval.grant.v1': grantApproval,
  'x-coven-automata.approval.expire.v1': expireApprovals,
};
