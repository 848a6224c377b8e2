import { ContractError } from '../contract/errors.js';
import { DEFINITION_KIND, DEFINITION_REVISION_KIND, type DefinitionAttributes } from '../domain/definition-records.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import type { StoredRecord, StoreTransaction } from '../store/store.js';
import { ADOPTION_KIND } from './adoption.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { changeLifecycle, LIFECYCLE_COMMANDS } from './lifecycle-commands.js';

/** What an erased prompt or working directory reads as from then on. */
export const ERASED = '[erased]';

/** Every string of `value` that contains one of `secrets`, replaced by {@link ERASED}; everything else kept. */
export function scrubSecrets<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === 'string') return (secrets.some((s) => value.includes(s)) ? ERASED : value) as T;
  if (Array.isArray(value)) return value.map((v) => scrubSecrets(v, secrets)) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, scrubSecrets(v, secrets)]),
    ) as T;
  return value;
}

/** Rewrites a record in place, sealed ones included (erasure, like retention, may remove what history sealed). */
async function rewrite<T>(tx: StoreTransaction, record: StoredRecord<T>, data: T): Promise<void> {
  if (!record.terminal) {
    await tx.put(record.kind, record.id, data, { expectedVersion: record.version });
    return;
  }
  await tx.expire(record.kind, record.id, record.version);
  await tx.put(record.kind, record.id, data, { expectedVersion: null, terminal: true });
}

async function scrubKind(tx: StoreTransaction, kind: string, secrets: readonly string[]): Promise<number> {
  let scrubbed = 0;
  for (const record of await tx.list(kind)) {
    const text = JSON.stringify(record.data);
    if (!secrets.some((s) => text.includes(s))) continue;
    await rewrite(tx, record, scrubSecrets(record.data, secrets));
    scrubbed += 1;
  }
  return scrubbed;
}

/** The prompt and working directory of every stored revision of `automationId`: what erasure removes. */
async function secretsOf(tx: StoreTransaction, automationId: string): Promise<string[]> {
  const revisions = (
    await tx.list<{ automationId: string; action: { prompt: string; cwd?: string } }>(DEFINITION_REVISION_KIND)
  ).filter((r) => r.data.automationId === automationId);
  const found = revisions.flatMap((r) => [r.data.action.prompt, r.data.action.cwd ?? '']);
  return [...new Set(found)].filter((s) => s.length > 0 && s !== ERASED);
}

/**
 * x-coven-automata.definition.erase.v1: tombstones the definition (unless it already is) through the
 * definition machine, then removes its prompt and working directory from every stored copy — each revision,
 * the live record and the stored command results. Ids, revisions, digests, events, occurrences, runs and
 * receipts stay as they were: receipts pin the original revision's digest and still verify, and what the
 * digest was computed over is gone.
 */
export async function eraseDefinition(ctx: CommandContext): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  const record = await ctx.tx.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, automationId);
  if (record === undefined)
    throw new ContractError('NOT_FOUND', `no definition ${automationId}`, { kind: 'definition', id: automationId });
  const secrets = await secretsOf(ctx.tx, automationId);
  const tombstoned = typeof record.data.attributes.tombstonedAt === 'string';
  if (!tombstoned && ctx.envelope.expectedRevision === undefined)
    throw new ContractError(
      'VALIDATION_FAILED',
      'erasing a live definition tombstones it: expectedRevision is required',
      {
        automationId,
      },
    );
  const outcome = tombstoned ? undefined : await changeLifecycle(ctx, LIFECYCLE_COMMANDS['definition.tombstone.v1']!);
  const scrubbed =
    (await scrubKind(ctx.tx, DEFINITION_REVISION_KIND, secrets)) +
    (await scrubKind(ctx.tx, DEFINITION_KIND, secrets)) +
    (await scrubKind(ctx.tx, ADOPTION_KIND, secrets));
  const revision = outcome?.revision ?? record.data.attributes.definition.revision;
  return {
    automationId,
    revision,
    ...(outcome?.eventRef === undefined ? {} : { eventRef: outcome.eventRef }),
    result: { automationId, revision, erased: true, tombstoned: true, recordsScrubbed: scrubbed, erasedAt: ctx.now },
  };
}

/** Privacy commands (engine extensions). */
export const PRIVACY_COMMANDS: Readonly<Record<string, (ctx: CommandContext) => Promise<CommandOutcome>>> = {
  'x-coven-automata.definition.erase.v1': eraseDefinition,
};
