import { forEachConcurrently } from '../domain/concurrency.js';
import { moveEntity, LIVE_INDEX, type StepContext } from '../domain/lifecycle.js';
import {
  attemptContext,
  occurrenceContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type RunAttributes,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { TerminalEvidence } from '../guards/common.js';
import type { Observation } from '../runtime/runtime.js';
import { receiptIdFor, recordReceipt } from '../domain/receipts.js';
import { afterTerminalEvidence, loadAttempt, loadOccurrence, loadRun, openAttempt } from '../domain/settlement.js';
import { KINDS } from '../domain/records.js';

/**
 * The contract's worker: observes every started session and turns runtime evidence into transitions.
 * It settles only on verified terminal evidence; duplicate or late observations of a settled attempt are
 * no-ops, because the machine refuses them and nothing is sent.
 */
export class Worker {
  /** Last instant each attempt showed a sign of life; evidence older than the lease is expired. */
  private readonly lastSeen = new Map<string, string>();

  constructor(private readonly svc: EngineServices) {}

  /** Observes every live attempt; one attempt's failure is reported and does not stop the others. */
  async observeAll(errors: Error[] = []): Promise<number> {
    const live = await this.svc.store.read((r) => r.list(LIVE_INDEX.attempt));
    let settled = 0;
    await forEachConcurrently(live, this.svc.passConcurrency, async ({ id }) => {
      try {
        if (await this.observe(id)) settled += 1;
      } catch (error) {
        errors.push(new Error(`worker: attempt ${id}: ${(error as Error).message}`, { cause: error }));
      }
    });
    return settled;
  }

  /** Observes one attempt's session; returns true when the attempt settled. */
  async observe(attemptId: string): Promise<boolean> {
    const attempt = await this.svc.store.read((r) =>
      r.get<Awaited<ReturnType<typeof loadAttempt>>['data']>(KINDS.attempt, attemptId),
    );
    if (attempt === undefined) return false;
    const state = attempt.data.snapshot.value;
    const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
    if ((state !== 'started' && state !== 'observing') || sessionId === undefined) return false;
    const runtime = this.svc.runtime(attempt.data.attributes.runtimeId);
    if (runtime === undefined) return false;
    let observation: Observation;
    try {
      observation = await runtime.observe(sessionId, this.svc.clock.now());
    } catch {
      return false;
    }
    if (observation.status === 'running') {
      this.lastSeen.set(attemptId, this.svc.clock.now().toISOString());
      if (state === 'started' && observation.cursors !== undefined) {
        await this.svc.step((step) => this.openStream(step, attemptId, sessionId, observation.cursors!));
      }
      return false;
    }
    const settled = await this.svc.step((step) => this.settle(step, attemptId, sessionId, observation));
    this.lastSeen.delete(attemptId);
    return settled;
  }

  private async openStream(
    step: StepContext,
    attemptId: string,
    sessionId: string,
    cursors: { eventCursor?: string; logCursor?: string },
  ): Promise<void> {
    if (stateOf(await loadAttempt(step.tx, attemptId)) !== 'started') return;
    await moveEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      { type: 'evidence_stream_open', actor: 'worker', sessionId, cursors },
      (a) => ({ ...a, outputCursors: cursors, stateReason: 'observing' }),
    );
  }

  private async settle(
    step: StepContext,
    attemptId: string,
    sessionId: string,
    observation: Exclude<Observation, { status: 'running' }>,
  ): Promise<boolean> {
    const attempt = await loadAttempt(step.tx, attemptId);
    const state = stateOf(attempt);
    if (state !== 'started' && state !== 'observing') return false;
    const a = attemptContext(attempt);
    const run = await loadRun(step.tx, a.runId);
    const occurrence = await loadOccurrence(step.tx, a.occurrenceId);
    const runtime = this.svc.runtime(attempt.data.attributes.runtimeId);

    if (observation.status === 'lost' && this.svc.faults.successWithoutEvidence) {
      // Fault: a vanished session is booked as a success with made-up evidence.
      return this.settle(step, attemptId, sessionId, {
        status: 'exited',
        outcome: 'succeeded',
        exitCode: 0,
        cancelled: false,
      });
    }
    if (observation.status === 'lost') {
      // The runtime's report that the session is gone ends its evidence: valid at the latest just before now.
      const seen = Date.parse(this.lastSeen.get(attemptId) ?? attempt.data.attributes.openedAt);
      const lastSeen = new Date(Math.min(seen, Date.parse(step.now) - 1)).toISOString();
      await moveEntity<AttemptAttributes>(
        step,
        'attempt',
        attemptId,
        {
          type: 'evidence_lost',
          actor: 'scheduler',
          sessionId,
          terminalEvidenceSeen: false,
          evidenceExpiresAt: lastSeen,
        },
        (x) => ({
          ...x,
          stateReason: observation.detail.slice(0, 500),
          settledAt: step.now,
        }),
      );
      await recordReceipt(step, runtime, occurrence, run, await loadAttempt(step.tx, attemptId), {
        disposition: 'ambiguous',
        detail: observation.detail.slice(0, 500),
        recoveryDisposition: 'deferred_to_operator',
      });
      if (stateOf(occurrence) === 'running' && occurrence.data.attributes.activeRunRef === run.id) {
        await moveEntity<OccurrenceAttributes>(
          step,
          'occurrence',
          occurrence.id,
          { type: 'evidence_lost', actor: 'scheduler', sessionId, terminalEvidenceSeen: false },
          (x) => ({
            ...x,
            stateReason: 'runtime lost mid-run: outcome cannot be determined automatically',
            recovery: { enteredAt: step.now, evidence: 'runtime_lost' },
            updatedAt: step.now,
          }),
        );
        if (this.svc.faults.autoRetryAmbiguous) await this.retryWithoutOperator(step, occurrence.id, run.id);
      }
      return true;
    }

    // Only the runtime's word makes a cancellation acknowledged: a session that ran to its own end after a
    // cancel was requested settles by its evidence (completion won the race).
    if (observation.cancelled && state === 'observing') {
      return this.acknowledgeCancellation(step, attemptId, sessionId);
    }
    const evidence: TerminalEvidence & { outputDigest?: string } = {
      sessionId,
      outcome: observation.outcome,
      exitCode: observation.exitCode,
      verified: true,
      ...(observation.outputDigest === undefined ? {} : { outputDigest: observation.outputDigest }),
    };
    const settledAttempt = await moveEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      { type: 'run_settled', actor: 'worker', evidence },
      (x) => ({
        ...x,
        evidence,
        stateReason:
          observation.outcome === 'succeeded'
            ? 'verified completion evidence'
            : `verified failure evidence (exit ${String(observation.exitCode)})`,
        settledAt: step.now,
      }),
    );
    // The occurrence and run settle first; the receipt is written in the same commit, so nothing can observe
    // either settled without it, and the changefeed reads settled -> finished -> sealed.
    const receiptId = receiptIdFor(attemptId);
    await afterTerminalEvidence(step, occurrence.id, run.id, attemptId, evidence, receiptId);
    await recordReceipt(
      step,
      runtime,
      occurrence,
      run,
      settledAttempt.record as Awaited<ReturnType<typeof loadAttempt>>,
      {
        disposition: settledAttempt.to,
        ...(settledAttempt.to === 'failed' ? { failureClass: 'runtime_error' } : {}),
        detail:
          settledAttempt.to === 'succeeded' ? 'verified completion evidence' : `exit ${String(observation.exitCode)}`,
        recoveryDisposition: 'not_required',
      },
      observation.outputDigest,
    );
    return true;
  }

  /** Fault `autoRetryAmbiguous`: opens new work after an ambiguous attempt with no operator determination. */
  private async retryWithoutOperator(step: StepContext, occurrenceId: string, runId: string): Promise<void> {
    const occurrence = await loadOccurrence(step.tx, occurrenceId);
    const run = await loadRun(step.tx, runId);
    const latest = await loadAttempt(step.tx, run.data.attributes.attemptIds.at(-1)!);
    const n = attemptContext(latest).attemptNumber;
    const leaseExpiresAt = this.svc.leaseExpiresAt(step.now);
    const next = await openAttempt(step, run, occurrence, {
      attemptNumber: n + 1,
      fenceGeneration: occurrenceContext(occurrence).fence.generation + 1,
      leaseExpiresAt,
      prior: { attemptNumber: n, outcome: 'ambiguous' },
      classification: 'automatic_retry',
      runtimeId: latest.data.attributes.runtimeId,
    });
    await moveEntity<OccurrenceAttributes>(step, 'occurrence', occurrenceId, {
      type: 'operator_recovery_attempt',
      actor: 'command_handler',
      evidenceDetermination: 'retry_with_new_attempt',
      statement: 'retried automatically',
      attemptId: next.id,
      attemptNumber: n + 1,
      adoptionKey: attemptContext(next).adoptionKey,
      priorDisposition: 'ambiguous',
      leaseExpiresAt,
    });
  }

  /** The runtime acknowledged a requested cancellation: attempt, run and occurrence settle cancelled. */
  private async acknowledgeCancellation(step: StepContext, attemptId: string, sessionId: string): Promise<boolean> {
    const attempt = await loadAttempt(step.tx, attemptId);
    const a = attemptContext(attempt);
    const requestedAt = attempt.data.attributes.cancelRequestedAt ?? step.now;
    const cancellation = { requestedAt, acknowledgedAt: step.now };
    await moveEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
      (x) => ({ ...x, stateReason: 'cancellation acknowledged by runtime', settledAt: step.now }),
    );
    const run = await loadRun(step.tx, a.runId);
    const occurrence = await loadOccurrence(step.tx, a.occurrenceId);
    await recordReceipt(
      step,
      this.svc.runtime(attempt.data.attributes.runtimeId),
      occurrence,
      run,
      await loadAttempt(step.tx, attemptId),
      {
        disposition: 'cancelled',
        detail: `session ${sessionId} stopped on request`,
        recoveryDisposition: 'not_required',
      },
    );
    if (stateOf(run) === 'running') {
      await moveEntity<RunAttributes>(
        step,
        'run',
        run.id,
        { type: 'cancel_acknowledged', actor: 'command_handler' },
        (x) => ({
          ...x,
          stateReason: 'cancelled on request',
          finishedAt: step.now,
          terminalDisposition: { outcome: 'cancelled', failureClass: 'cancelled_by_request' },
        }),
      );
    }
    if (stateOf(occurrence) === 'running') {
      await moveEntity<OccurrenceAttributes>(
        step,
        'occurrence',
        occurrence.id,
        { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
        (x) => ({
          ...x,
          stateReason: 'cancellation acknowledged by runtime',
          cancellation: { ...(x.cancellation ?? { requestedAt }), acknowledgedAt: step.now },
          updatedAt: step.now,
        }),
      );
    }
    return true;
  }
}
