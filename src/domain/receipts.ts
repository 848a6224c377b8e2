import { appendEvent } from '../changefeed/append-event.js';
import { integrityOf } from '../contract/digest.js';
import { redactPublished } from '../contract/redaction.js';
import type { StepContext } from './lifecycle.js';
import {
  KINDS,
  attemptContext,
  type AttemptRecord,
  type OccurrenceRecord,
  type Receipt,
  type RunRecord,
} from './records.js';
import type { Runtime } from '../runtime/runtime.js';

const sha256Digest = (value: string) => ({
  algorithm: 'sha256' as const,
  canonicalization: 'jcs-rfc8785' as const,
  value,
});

export const receiptIdFor = (attemptId: string) => `receipt-${attemptId}`.slice(0, 160);

/**
 * Writes the immutable receipt of a settled attempt: pinned revision and definition digest, fence,
 * runtime, side-effect class, outcome (redacted), and its JCS SHA-256 integrity. Sealed on write; one per attempt.
 */
export async function recordReceipt(
  step: StepContext,
  runtime: Runtime | undefined,
  occurrence: OccurrenceRecord,
  run: RunRecord,
  attempt: AttemptRecord,
  outcome: Receipt['outcome'],
  resultDigest?: string,
  deliveryDigest?: string,
): Promise<Receipt> {
  const a = attemptContext(attempt);
  const r = run.data.attributes;
  const body: Omit<Receipt, 'integrity'> = {
    schemaVersion: 'coven.automations.v1',
    receiptId: receiptIdFor(attempt.id),
    automationId: r.automationId,
    automationRevision: r.automationRevision,
    definitionDigest: r.definitionDigest,
    occurrenceId: occurrence.id,
    occurrenceFenceGeneration: a.fenceGeneration,
    runId: run.id,
    attemptId: attempt.id,
    attemptNumber: a.attemptNumber,
    identity: { familiarId: r.binding.familiar.familiarId },
    authority: { principal: r.binding.authority.principal },
    runtime: { runtimeId: r.binding.runtime.runtimeId, capabilities: r.binding.runtime.capabilities },
    ...(deliveryDigest === undefined ? {} : { deliveryDigest: sha256Digest(deliveryDigest) }),
    ...(resultDigest === undefined ? {} : { resultDigest: sha256Digest(resultDigest) }),
    sideEffectClass: runtime?.sideEffectClass ?? 'irreversible_external_mutation',
    // Sealed over published-safe text: a runtime's detail may quote paths or credentials, and a receipt whose
    // published (redacted) copy differed from what its digest covers could never be verified by its reader.
    outcome: redactPublished(outcome),
    producedAt: step.now,
    producer: { component: step.feed.producer.component, instanceId: step.feed.producer.instanceId },
    privacy: { classification: 'operational', retention: { classification: 'standard' } },
  };
  const receipt = {
    ...body,
    integrity: { ...integrityOf(body as Record<string, unknown>), authentication: 'none' as const },
  } as Receipt;
  await step.tx.put(KINDS.receipt, receipt.receiptId, receipt, { expectedVersion: null, terminal: true });
  await appendEvent(step.tx, step.feed, {
    stream: { kind: 'run', id: run.id },
    kind: 'receipt.recorded',
    summary: `receipt ${receipt.receiptId} recorded (${outcome.disposition})`,
    payload: { receiptRef: receipt.receiptId, outcome: outcome.disposition, sideEffectClass: receipt.sideEffectClass },
    automationId: r.automationId,
    occurrenceId: occurrence.id,
    runId: run.id,
    attemptId: attempt.id,
  });
  return receipt;
}
