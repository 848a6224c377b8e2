import { OccurrenceState, RunState } from '../../machines/index.js';
import { appendEvent } from '../changefeed/append-event.js';
import {
  AUTHORITY_KINDS,
  AUTHORITY_REFUSAL_PREFIX,
  bindingOf,
  readAuthorityFacts,
  type ApprovalEntry,
  type AuthorityRefusal,
} from '../domain/authority.js';
import { decideAuthority } from '../domain/authority-decision.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  attemptContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type RunAttributes,
} from '../domain/records.js';
import { pinnedDefinition } from './pinned-definition.js';
import { afterPreOwnershipFailure } from './settlement.js';

/** The ids of the dispatch the gate judges. */
export interface GatedDispatch {
  occurrenceId: string;
  runId: string;
  attemptId: string;
}

/**
 * Runtime Authority at dispatch: re-reads the binding the occurrence pinned and the registry, in the dispatch
 * transaction itself, so a revocation committed after the claim (even across a crash between claim and
 * dispatch) is what the decision sees. An authorised dispatch that needs an approval consumes it here, in the
 * same commit. Returns the refusal, or undefined when the dispatch may go on (always, for unbound definitions).
 */
export async function checkAuthority(step: StepContext, d: GatedDispatch): Promise<AuthorityRefusal | undefined> {
  const occurrence = await loadOccurrence(step.tx, d.occurrenceId);
  const { automationId, automationRevision } = occurrence.data.attributes;
  const binding = bindingOf(await pinnedDefinition(step, automationId, automationRevision));
  if (binding === undefined) return undefined;
  const verdict = decideAuthority(binding, await readAuthorityFacts(step.tx, binding), step.now, d.runId);
  if ('refusal' in verdict) return verdict.refusal;
  if (verdict.consume !== undefined) await consumeApproval(step, d, automationId, verdict.consume);
  return undefined;
}

/** Marks the approval consumed by this run (compare-and-set: two dispatches can never both consume it). */
async function consumeApproval(
  step: StepContext,
  d: GatedDispatch,
  automationId: string,
  approval: ApprovalEntry,
): Promise<void> {
  const record = await step.tx.get<ApprovalEntry>(AUTHORITY_KINDS.approval, approval.nonce);
  const consumed: ApprovalEntry = {
    ...approval,
    consumed: { at: step.now, occurrenceId: d.occurrenceId, runId: d.runId },
  };
  await step.tx.put(AUTHORITY_KINDS.approval, approval.nonce, consumed, {
    expectedVersion: record?.version ?? null,
    terminal: true,
  });
  await appendEvent(step.tx, step.feed, {
    stream: { kind: 'occurrence', id: d.occurrenceId },
    kind: 'approval.consumed',
    summary: `approval ${approval.nonce} consumed by run ${d.runId}`,
    payload: { approvalNonce: approval.nonce, runId: d.runId, grantedAt: approval.grantedAt },
    automationId,
    occurrenceId: d.occurrenceId,
    runId: d.runId,
    ...(step.adoptionKey === undefined ? {} : { adoptionKey: step.adoptionKey }),
  });
}

/**
 * A refused dispatch launches nothing: its attempt (already `dispatching`, no launch queued) fails as a
 * deterministic pre-side-effect refusal, the run with it, and the occurrence fails with an `authority: …`
 * reason — the machines' launch_refused / run_settled paths — and `authority.refused` is recorded.
 */
export async function refuseDispatch(step: StepContext, d: GatedDispatch, refusal: AuthorityRefusal): Promise<void> {
  const detail = `${AUTHORITY_REFUSAL_PREFIX}${refusal.detail}`.slice(0, 500);
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    d.attemptId,
    { type: 'launch_refused', actor: 'dispatcher', failure: { failureClass: 'launch_refused', preOwnership: true } },
    (x) => ({ ...x, stateReason: detail, failureClass: 'launch_refused', settledAt: step.now }),
  );
  const run = await loadRun(step.tx, d.runId);
  if (stateOf(await loadOccurrence(step.tx, d.occurrenceId)) === OccurrenceState.dispatching)
    await settleRecoveryAttempt(step, d, detail);
  else if (stateOf(run) === RunState.accepted) await settleAcceptedRun(step, d, detail);
  else await afterPreOwnershipFailure(step, d.occurrenceId, d.runId, d.attemptId, 'launch_refused', detail);
  const occurrence = await loadOccurrence(step.tx, d.occurrenceId);
  await appendEvent(step.tx, step.feed, {
    stream: { kind: 'occurrence', id: d.occurrenceId },
    kind: 'authority.refused',
    summary: `dispatch of ${d.occurrenceId} refused: ${refusal.code}`,
    payload: { refusal: refusal.code, detail: refusal.detail.slice(0, 500), runId: d.runId },
    automationId: occurrence.data.attributes.automationId,
    occurrenceId: d.occurrenceId,
    runId: d.runId,
    attemptId: d.attemptId,
  });
}

/** First dispatch: the run never started, so it fails `accepted → failed` and the claimed occurrence with it. */
async function settleAcceptedRun(step: StepContext, d: GatedDispatch, detail: string): Promise<void> {
  const attempt = attemptContext(await loadAttempt(step.tx, d.attemptId));
  await moveEntity<RunAttributes>(
    step,
    'run',
    d.runId,
    {
      type: 'launch_refused',
      actor: 'dispatcher',
      attempts: [
        {
          attemptNumber: attempt.attemptNumber,
          state: 'failed',
          failureClass: 'launch_refused',
          evidenceRecorded: false,
        },
      ],
    },
    (a) => ({
      ...a,
      stateReason: detail,
      finishedAt: step.now,
      terminalDisposition: { outcome: 'failed', failureClass: 'launch_refused', detail },
    }),
  );
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    d.occurrenceId,
    {
      type: 'run_settled',
      actor: 'dispatcher',
      failure: { failureClass: 'launch_refused', preOwnership: true },
      attemptNumber: attempt.attemptNumber,
    },
    (a) => ({ ...a, stateReason: detail, updatedAt: step.now }),
  );
}

/** An operator recovery attempt dispatches from `dispatching`: a refusal settles the occurrence and its run. */
async function settleRecoveryAttempt(step: StepContext, d: GatedDispatch, detail: string): Promise<void> {
  const attempt = attemptContext(await loadAttempt(step.tx, d.attemptId));
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    d.occurrenceId,
    { type: 'launch_refused', actor: 'dispatcher', failure: { failureClass: 'launch_refused', preOwnership: true } },
    (a) => ({ ...a, stateReason: detail, updatedAt: step.now }),
  );
  if (stateOf(await loadRun(step.tx, d.runId)) !== RunState.running) return;
  await moveEntity<RunAttributes>(
    step,
    'run',
    d.runId,
    {
      type: 'attempt_settled',
      actor: 'dispatcher',
      attempt: { attemptId: d.attemptId, attemptNumber: attempt.attemptNumber, state: 'failed' },
      furtherAttemptOpens: false,
    },
    (a) => ({
      ...a,
      stateReason: detail,
      finishedAt: step.now,
      terminalDisposition: { outcome: 'failed', failureClass: 'launch_refused', detail },
    }),
  );
}
