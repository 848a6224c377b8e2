import { jcsSha256 } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import type { StoreTransaction } from '../store/store.js';
import { ADOPTION_KIND, type AdoptionRecord } from '../domain/adoptions.js';
import { DEFINITION_KIND } from '../domain/definition-records.js';
import { KINDS } from '../domain/records.js';
import type { CommandReads } from './context.js';
import type { CommandEnvelope } from './envelope.js';

export { ADOPTION_KIND, type AdoptionRecord };

/**
 * What makes two requests "the same": JCS SHA-256 over command, expectedRevision and payload. Origin and
 * intent are context, not content, so a redelivery with another correlation id still replays.
 */
export function requestDigest(envelope: Pick<CommandEnvelope, 'command' | 'expectedRevision' | 'payload'>): string {
  return jcsSha256({
    command: envelope.command,
    expectedRevision: envelope.expectedRevision ?? null,
    payload: envelope.payload,
  });
}

/**
 * The adoption record of the command's key, if any. Where each read is a round trip it is fetched together with
 * what a command naming an automation reads next (its definition and its quarantine) and what the command says
 * it reads first (`reads`).
 */
export async function findAdoption(
  tx: StoreTransaction,
  envelope: Pick<CommandEnvelope, 'adoptionKey' | 'payload'>,
  reads: CommandReads = {},
): Promise<AdoptionRecord | undefined> {
  const { automationId } = envelope.payload;
  const named: Array<readonly [string, string]> =
    typeof automationId === 'string'
      ? [
          [DEFINITION_KIND, automationId],
          [KINDS.quarantine, automationId],
        ]
      : [];
  // A command that commits appends its events: the prefetch fetches what numbering them needs too.
  await tx.prefetch?.([[ADOPTION_KIND, envelope.adoptionKey], ...named, ...(reads.records ?? [])], [], {
    appending: true,
    ...(reads.liveOccurrencesOf === undefined ? {} : { liveOccurrencesOf: reads.liveOccurrencesOf }),
  });
  return (await tx.get<AdoptionRecord>(ADOPTION_KIND, envelope.adoptionKey))?.data;
}

export async function recordAdoption(tx: StoreTransaction, key: string, record: AdoptionRecord): Promise<void> {
  await tx.put(ADOPTION_KIND, key, record, { expectedVersion: null, terminal: true });
}

/** The refusal for a key already committed by another request. */
export function replayMismatch(key: string, prior: AdoptionRecord): ContractError {
  const error = new ContractError(
    'ADOPTION_REPLAY_MISMATCH',
    `adoption key ${key} already committed ${prior.command} with a different request; it is never re-executed`,
    {
      committedCommand: prior.command,
      committedOutcome: 'committed',
      ...(prior.revision === undefined ? {} : { committedRevision: prior.revision }),
      ...(prior.automationId === undefined ? {} : { automationId: prior.automationId }),
    },
  );
  return Object.assign(error, { adoption: { key, conflictOutcome: 'committed' as const } });
}
