import type { TerminalEvidence } from '../guards/common.js';
import type { AttemptDisposition } from '../guards/occurrence.js';
import type { StepContext } from './lifecycle.js';
import type { AttemptAttributes, AttemptRecord, OccurrenceRecord, RunRecord } from './records.js';
import type { Observation, Runtime } from '../runtime/runtime.js';

/** What a new attempt of a run is opened with. */
export interface AttemptTerms {
  attemptNumber: number;
  fenceGeneration: number;
  leaseExpiresAt: string;
  prior: { attemptNumber: number; outcome: AttemptDisposition };
  classification: AttemptAttributes['retryClassification']['classification'];
  notBefore?: string;
  runtimeId: string;
}

/** What the actors' steps use of the engine's services (EngineServices provides it). */
export interface ActorServices {
  readonly instanceId: string;
  /** The lease term in the contract's unit (claimMetadata.leaseMinutes). */
  readonly leaseMinutes: number;
  runtime(runtimeId: string): Runtime | undefined;
  /** When a claim or attempt made at `now` loses its lease. */
  leaseExpiresAt(now: string | number): string;
}

/**
 * The steps one contract actor takes when another actor's work reaches it inside the same transaction.
 * Each folder commits only the transitions the spec gives its own actor; when the worker learns that a
 * cancellation was acknowledged, say, it hands the step to the command handler through these, and
 * engine.ts supplies the implementations, so the actor folders never import one another.
 */
export interface DispatcherSteps {
  /** Opens attempt n+1 of a run, adopted, under its own adoption key. */
  openAttempt(
    step: StepContext,
    run: RunRecord,
    occurrence: OccurrenceRecord,
    terms: AttemptTerms,
  ): Promise<AttemptRecord>;
  /** Settles run and occurrence after an attempt settled on terminal runtime evidence (or holds the run). */
  afterTerminalEvidence(
    step: StepContext,
    occurrenceId: string,
    runId: string,
    attemptId: string,
    evidence: TerminalEvidence,
    receiptRef: string,
    /** Set when the attempt failed because its output delivery did not commit: the reason, for the records. */
    undelivered?: string,
  ): Promise<void>;
  /** A held run whose deadline passed settles failed, with its occurrence. */
  settleExpiredHold(step: StepContext, occurrence: OccurrenceRecord): Promise<void>;
  /** A sent launch nobody heard back from: the attempt is ambiguous, with its receipt. */
  recordUnconfirmedDispatch(
    svc: ActorServices,
    step: StepContext,
    occurrence: OccurrenceRecord,
    run: RunRecord,
    attemptId: string,
    sideEffectsRuledOut: boolean,
  ): Promise<void>;
  /** The run of an ambiguous attempt settles ambiguous (recovery determined it failed). */
  settleRunAmbiguous(
    step: StepContext,
    run: RunRecord,
    attempt: AttemptRecord,
    reason: string,
    detail?: string,
  ): Promise<void>;
}

export interface SchedulerSteps {
  /** A manual run's occurrence passes eligibility and is claimed by this engine; returns the lease expiry. */
  claimForManualRun(svc: ActorServices, step: StepContext, occurrenceId: string): Promise<string>;
  /**
   * The runtime reports a session gone without terminal evidence: the attempt is ambiguous, the occurrence waits
   * for recovery.
   */
  recordEvidenceLost(svc: ActorServices, step: StepContext, loss: EvidenceLoss): Promise<void>;
}

/** A started session the runtime no longer knows, and the last instant it was seen alive. */
export interface EvidenceLoss {
  attemptId: string;
  sessionId: string;
  lastSeen: string;
  detail: string;
}

export interface CommandHandlerSteps {
  /** The runtime acknowledged a requested cancellation: attempt, run and occurrence settle cancelled. */
  acknowledgeCancellation(svc: ActorServices, step: StepContext, attemptId: string, sessionId: string): Promise<void>;
}

export interface WorkerSteps {
  /** A started session's evidence stream is open: the attempt is observed from these cursors. */
  openEvidenceStream(
    step: StepContext,
    attemptId: string,
    sessionId: string,
    cursors: { eventCursor?: string; logCursor?: string },
  ): Promise<void>;
  /**
   * An exited session settles its started attempt in the caller's transaction (the dispatcher uses it to commit
   * a launch's answer and the session's end together); false when the attempt is not started or observing.
   */
  settleOnExit(
    svc: ActorServices & { readonly actors: ActorSteps },
    step: StepContext,
    attemptId: string,
    sessionId: string,
    observation: Extract<Observation, { status: 'exited' }>,
  ): Promise<boolean>;
}

/** The four contract actors' steps, as engine.ts wires them. */
export interface ActorSteps {
  dispatcher: DispatcherSteps;
  scheduler: SchedulerSteps;
  commandHandler: CommandHandlerSteps;
  worker: WorkerSteps;
}
