import type { PreOwnershipFailureClass, SideEffectClass } from '../contract/vocabulary.js';

/** Everything a runtime needs to run one attempt of a familiarInvocation. */
export interface LaunchRequest {
  /** Stable per attempt and dispatch generation: a runtime that can deduplicate launches keys on it. */
  sessionKey: string;
  automationId: string;
  occurrenceId: string;
  runId: string;
  attemptId: string;
  attemptNumber: number;
  prompt: string;
  cwd?: string;
  model?: string;
  deadlineAt: string;
  /**
   * The W3C trace context of the occurrence (see trace-context.ts), when the runtime passes it on: a function
   * runtime with `traceContext` set hands it to its function here, a child-process runtime as `TRACEPARENT`.
   */
  traceparent?: string;
}

export interface OutputCursors {
  eventCursor?: string;
  logCursor?: string;
}

export type LaunchResult =
  | { outcome: 'started'; sessionId: string; cursors: OutputCursors }
  /** Proven to have failed before the runtime owned anything: nothing ran, nothing to clean up. */
  | { outcome: 'failed'; failureClass: PreOwnershipFailureClass; detail: string };

export type Observation =
  | { status: 'running'; cursors?: OutputCursors }
  | {
      status: 'exited';
      outcome: 'succeeded' | 'failed';
      exitCode: number | null;
      /** The signal that ended the session's command, where the runtime can tell (`SIGKILL`). */
      signal?: string;
      /** The session ended because a cancellation was requested. */
      cancelled: boolean;
      outputDigest?: string;
      detail?: string;
    }
  /** The session is gone and nothing says how it ended. */
  | { status: 'lost'; detail: string };

/**
 * A runtime's word that one of its sessions ended: a cue to observe that session now, not evidence. The engine
 * settles only on what `observe` then answers, exactly as a pass would, so a cue that is early, late, repeated or
 * about a session of another engine settles nothing it should not.
 */
export interface SessionExit {
  sessionId: string;
  /** The `attemptId` of the launch request that started the session. */
  attemptId: string;
}

/**
 * What a runtime can prove about a launch whose answer never reached the engine (the engine died while the
 * launch was being sent). `never_started` is a proof made permanent: the runtime has also made sure that
 * launch can no longer start, so the engine may settle the attempt as a pre-ownership failure.
 */
export type LaunchEvidence =
  | { evidence: 'started'; sessionId: string; cursors: OutputCursors }
  | { evidence: 'never_started'; detail: string }
  | { evidence: 'unknown'; detail: string };

/**
 * Where a runtime keeps the evidence of its launches: recorded with each launch (when it is marked sending, and
 * with the session it binds), so that a launch is decided only by a runtime that can read its evidence.
 */
export interface EvidenceLocation {
  /** The host whose processes the evidence's liveness checks look at (process ids). */
  host: string;
  /**
   * Names the evidence store: `dir:<real path>#<id>` for a sessions folder (the id is kept in a file made once
   * in it), `store:<identity>` for evidence kept in the engine's own database.
   */
  root: string;
  /** Liveness is judged from the evidence itself (heartbeats), not from a host's processes: any host reads it. */
  anyHost?: boolean;
}

/**
 * What runs attempts. `launch` either starts a session, proves a pre-ownership failure, or throws — and
 * a throw means the launch may or may not have happened, which the engine treats as unconfirmed, never as
 * a failure it may retry. Evidence comes from `observe`; `cancel` is a request whose acknowledgement is a
 * later `exited` observation with `cancelled: true`.
 */
export interface Runtime {
  readonly runtimeId: string;
  /** The most a session of this runtime can do to the world. */
  readonly sideEffectClass: SideEffectClass;
  /** The bound is enforced by the runtime (containment), not merely declared. */
  readonly sideEffectBoundProven: boolean;
  /**
   * Where this runtime's evidence lives. The engine asks it about a launch or session only when this location can
   * read the evidence recorded with that launch (same root; same host unless `anyHost`); any other launch is
   * undecided and the contract's recovery path applies. A runtime without a location claims that its evidence
   * is readable by every engine of the store (an in-process runtime, or one backed by a shared service).
   */
  readonly evidenceLocation?: EvidenceLocation;
  launch(request: LaunchRequest, now: Date): Promise<LaunchResult>;
  observe(sessionId: string, now: Date): Promise<Observation>;
  cancel(sessionId: string, now: Date): Promise<void>;
  /**
   * Decides a launch sent under `sessionKey` whose outcome the engine does not know. A runtime without this
   * method gives no evidence: such launches are settled by lease expiry and recovery, as `unknown` ones are.
   */
  launchEvidence?(sessionKey: string, now: Date): Promise<LaunchEvidence>;
  /**
   * Calls `listener` once a session of this runtime has ended and its exit is what `observe` reports (it may be
   * called during `launch`, for a session that ended before its launch answered); answers the unsubscribe. A
   * running engine then settles that attempt at once instead of at its next pass. Optional: a runtime without
   * it is observed by passes only, and passes still observe every session, so a lost cue costs time, not work.
   */
  onSessionExit?(listener: (exit: SessionExit) => void): () => void;
  /**
   * The output of an ended session, as an atomic outputTarget receives it, when this runtime keeps one. Read only
   * after `observe` reported the session exited with success; a runtime without it cannot serve a definition that
   * delivers (its runs' deliveries fail, and the runs settle failed).
   */
  sessionOutput?(sessionId: string): Promise<string | undefined>;
  /**
   * A window of what a session printed so far, while it runs and after it ended, when this runtime keeps its
   * output; undefined for a session it has no output of. Read by `logs` and by the failure summary of an attempt.
   */
  sessionLog?(sessionId: string, window: LogWindow): Promise<SessionLog | undefined>;
  /**
   * Lets go of what this runtime keeps of an ended session's output, once retention compacted the session's
   * attempt (no read reaches the output after). Idempotent: a session it keeps nothing of is done. Answers false
   * while the session still runs (it is asked again at a later sweep). A runtime without it keeps nothing that
   * outlives the process.
   */
  expireSession?(sessionId: string): Promise<boolean>;
}

/** A window of what a session printed (stdout and stderr as one stream), by byte offset. */
export interface SessionLog {
  text: string;
  /** Where `text` starts in the session's output. */
  offset: number;
  /** Where the next window starts: `offset` plus the bytes read. */
  nextOffset: number;
  /** How many bytes the session has printed so far (final once `complete`). */
  size: number;
  /** The session has ended: its output will not grow. */
  complete: boolean;
}

/** Which bytes of a session's output to read: from `offset` (negative: that many before the end), `limit` at most. */
export interface LogWindow {
  offset: number;
  limit: number;
}

/** One entry of a runtime's launch log: what invariant checks compare against the store's history. */
export interface LaunchRecord {
  sessionKey: string;
  attemptId: string;
  at: string;
}
