import { AttemptState } from '../../machines/index.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { type StepContext } from '../domain/lifecycle.js';
import { attemptContext, KINDS, stateOf, type AttemptRecord } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { Observation } from '../runtime/runtime.js';
import { openEvidenceStream } from './evidence-stream.js';
import { prefetchSettlement, settleOnExit, type SettlementReads } from './exit-settlement.js';
import { interruptOrphanedDeliveries, runDelivers, settleDelivering } from './delivery.js';
import { ownerAlive } from '../domain/owner-lease.js';
import { WorkPartition } from '../domain/work-partition.js';
import { readAhead } from '../domain/read-ahead.js';
import type { StoredRecord } from '../store/store.js';
import { loadAttempt } from '../domain/entities.js';
import { canReadEvidence } from '../domain/evidence-access.js';
import { routineWhenSettled } from '../domain/routine-commit.js';

type Ended = Exclude<Observation, { status: 'running' }>;
/** A settling step's answer when the run delivers an output: nothing was written, the delivery path settles it. */
const DELIVERS = 'delivers';

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
  async observeAll(errors: Error[] = [], partition?: WorkPartition): Promise<number> {
    try {
      await interruptOrphanedDeliveries(this.svc);
    } catch (error) {
      errors.push(new Error(`worker: pending deliveries: ${(error as Error).message}`, { cause: error }));
    }
    // Each engine observes the sessions it launched, and its share of those whose launcher is gone.
    // The attempts are read with the list where the store reads many at once: each observe starts from its record.
    const { live, ahead } = await this.svc.store.read(async (r) => {
      const share = partition ?? (await WorkPartition.read(this.svc, r));
      const work = await r.liveWork('attempt', { exceptHeldBy: share.others });
      const mine = work.filter((w) => share.mine(w.id, w.launchedBy));
      return {
        live: mine,
        ahead: await readAhead<AttemptRecord['data']>(
          r,
          KINDS.attempt,
          mine.map((w) => w.id),
        ),
      };
    });
    let settled = 0;
    await forEachConcurrently(live, this.svc.passConcurrency, async ({ id }) => {
      try {
        if (await this.observe(id, ahead === undefined ? undefined : (ahead.get(id) ?? null))) settled += 1;
      } catch (error) {
        errors.push(new Error(`worker: attempt ${id}: ${(error as Error).message}`, { cause: error }));
      }
    });
    return settled;
  }

  /**
   * Observes one attempt's session; returns true when the attempt settled. `known` is its record as a pass read it
   * moments ago (null: absent then); without it, the record is read first.
   */
  async observe(attemptId: string, known?: StoredRecord<AttemptRecord['data']> | null): Promise<boolean> {
    const attempt =
      known === undefined
        ? await this.svc.store.read((r) => r.get<AttemptRecord['data']>(KINDS.attempt, attemptId))
        : (known ?? undefined);
    if (attempt === undefined) return false;
    const state = attempt.data.snapshot.value;
    const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
    if ((state !== AttemptState.started && state !== AttemptState.observing) || sessionId === undefined) return false;
    // A session is its launcher's to observe while that engine lives (another engine's runtime may not even
    // see it); once the launcher's owner lease lapses, any engine takes it over.
    const launcher = attempt.data.attributes.workerCorrelation?.workerId;
    if (launcher !== undefined && launcher !== this.svc.instanceId) {
      if (await this.svc.store.read((r) => ownerAlive(this.svc, r, launcher))) return false;
    }
    const runtime = this.svc.runtime(attempt.data.attributes.runtimeId);
    if (runtime === undefined) return false;
    // A runtime that cannot read the session's evidence would find nothing and call it lost: it is not asked, and
    // the session is left to the run's deadline (or to an engine that can read it).
    if (!canReadEvidence(this.svc, runtime, attempt.data.attributes.evidenceLocation, launcher)) return false;
    let observation: Observation;
    try {
      observation = await runtime.observe(sessionId, this.svc.clock.now());
    } catch {
      return false;
    }
    if (observation.status === 'running') {
      this.lastSeen.set(attemptId, this.svc.clock.now().toISOString());
      if (state === AttemptState.started && observation.cursors !== undefined) {
        await this.svc.step((step) => openEvidenceStream(step, attemptId, sessionId, observation.cursors!));
      }
      return false;
    }
    return this.settleEnded(attempt as AttemptRecord, sessionId, observation);
  }

  /**
   * Settles an ended session in one transaction that asks for all it reads at once, unless its run delivers an
   * output: then the delivery path settles it (worker/delivery.ts), and the ordinary way only if that declines.
   */
  private async settleEnded(attempt: AttemptRecord, sessionId: string, observation: Ended): Promise<boolean> {
    const { runId, occurrenceId } = attemptContext(attempt);
    const reads = { attemptId: attempt.id, runId, occurrenceId };
    let settled = await this.svc.step((step) => this.settle(step, reads, sessionId, observation, true));
    if (settled === DELIVERS) {
      const delivered = await settleDelivering(this.svc, attempt.id, sessionId, observation);
      // A delivery still being written by another engine leaves the session to be observed again.
      if (delivered !== undefined) {
        if (delivered) this.lastSeen.delete(attempt.id);
        return delivered;
      }
      settled = await this.svc.step((step) => this.settle(step, reads, sessionId, observation, false));
    }
    this.lastSeen.delete(attempt.id);
    return settled === true;
  }

  private async settle(
    step: StepContext,
    reads: SettlementReads,
    sessionId: string,
    observation: Ended,
    unlessDelivering: boolean,
  ): Promise<boolean | typeof DELIVERS> {
    const { attemptId } = reads;
    await prefetchSettlement(step, reads);
    if (unlessDelivering && (await runDelivers(step.tx, reads.runId))) return DELIVERS;
    if (observation.status === 'exited') {
      const settled = await settleOnExit(this.svc, step, attemptId, sessionId, observation);
      if (settled) await routineWhenSettled(step, reads.occurrenceId);
      return settled;
    }
    const attempt = await loadAttempt(step.tx, attemptId);
    const state = stateOf(attempt);
    if (state !== AttemptState.started && state !== AttemptState.observing) return false;
    // The runtime's report that the session is gone ends its evidence: valid at the latest just before now.
    const seen = Date.parse(this.lastSeen.get(attemptId) ?? attempt.data.attributes.openedAt);
    const lastSeen = new Date(Math.min(seen, Date.parse(step.now) - 1)).toISOString();
    const loss = { attemptId, sessionId, lastSeen, detail: observation.detail };
    await this.svc.actors.scheduler.recordEvidenceLost(this.svc, step, loss);
    return true;
  }
}
