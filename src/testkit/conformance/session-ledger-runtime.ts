import { sha256Hex } from '../../contract/digest.js';
import type { SideEffectClass } from '../../contract/vocabulary.js';
import type { LaunchEvidence, LaunchRequest, LaunchResult, Observation, Runtime } from '../../runtime/runtime.js';

/** The terminal statuses a runtime's session ledger records (upstream's session ledger vocabulary). */
export type LedgerStatus = 'completed' | 'failed' | 'cancelled' | 'killed' | 'idle';

/** How the next session launched will end: its ledger row turns terminal at `at`. */
export interface SessionPlan {
  at: string;
  status: LedgerStatus;
  exitCode: number | null;
  /** What the session printed; an evidence-shaped one looks like a settlement the engine could be fooled by. */
  output?: string;
}

/** One row of the ledger: a session, the attempt it was launched for, and how it ends. */
export interface LedgerRow {
  sessionId: string;
  attemptId: string;
  sessionKey: string;
  startedAt: string;
  plan: SessionPlan;
  /** The runtime process that started the session still holds it (false after {@link SessionLedgerRuntime.restart}). */
  attached: boolean;
}

/**
 * A runtime whose sessions are rows of a durable session ledger that outlives its process: a restart loses the
 * handles on running sessions (`observe` then answers `lost`: nothing says how they end), while each session's
 * terminal row still lands in the ledger at its planned instant and is reported from then on. What became of a
 * launch whose answer was lost it can tell only from a terminal row: until then it has no launch evidence, and
 * the lease and recovery decide. Used by the runtime-authority-terminal-recovery interpreter to ask whether a
 * session's later terminal status can settle an occurrence already waiting in recovery_required.
 *
 * @example
 * ```ts
 * const runtime = new SessionLedgerRuntime();
 * runtime.nextSession = { at: '2026-09-03T12:00:05.000Z', status: 'failed', exitCode: 17 };
 * runtime.loseNextLaunchAnswer = true; // the session starts; the launch call throws as its sender dies
 * ```
 */
export class SessionLedgerRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass = 'local_write';
  readonly sideEffectBoundProven = true;
  /** Every launch call, answered or not. */
  launchCalls = 0;
  /** Every stop (cancel) request the runtime received: the session and the instant. */
  readonly stopRequests: Array<{ sessionId: string; at: string }> = [];
  /** How the next launched session ends; required before a launch. */
  nextSession: SessionPlan | undefined;
  /** The next launch starts its session and then throws, as a sender that died mid-call would see it. */
  loseNextLaunchAnswer = false;
  private readonly rows = new Map<string, LedgerRow>();

  constructor(runtimeId = 'coven-code') {
    this.runtimeId = runtimeId;
  }

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    this.launchCalls += 1;
    const plan = this.nextSession;
    if (plan === undefined) throw new Error('no session plan for this launch');
    const sessionId = `ledger-${this.rows.size + 1}-${request.attemptId}`.slice(0, 160);
    this.rows.set(sessionId, {
      sessionId,
      attemptId: request.attemptId,
      sessionKey: request.sessionKey,
      startedAt: now.toISOString(),
      plan,
      attached: true,
    });
    if (this.loseNextLaunchAnswer) {
      this.loseNextLaunchAnswer = false;
      throw new Error('the sender died after the session started, before the launch answered');
    }
    return { outcome: 'started', sessionId, cursors: { eventCursor: `${sessionId}:0`, logCursor: '0' } };
  }

  async observe(sessionId: string, now: Date): Promise<Observation> {
    const row = this.rows.get(sessionId);
    if (row === undefined) return { status: 'lost', detail: `no ledger row for session ${sessionId}` };
    if (now.getTime() >= Date.parse(row.plan.at)) return exitOf(row.plan);
    if (row.attached) return { status: 'running', cursors: { eventCursor: `${sessionId}:1`, logCursor: '1' } };
    return { status: 'lost', detail: `the runtime restarted and no longer reaches session ${sessionId}` };
  }

  /** A launch's session, once its terminal row is in the ledger; nothing before (the row is not readable yet). */
  async launchEvidence(sessionKey: string, now: Date): Promise<LaunchEvidence> {
    const row = [...this.rows.values()].find((r) => r.sessionKey === sessionKey);
    if (row === undefined || now.getTime() < Date.parse(row.plan.at))
      return { evidence: 'unknown', detail: `the ledger holds no terminal row for ${sessionKey}` };
    return { evidence: 'started', sessionId: row.sessionId, cursors: { eventCursor: `${row.sessionId}:0` } };
  }

  /** A stop reaches a session only while it runs; a terminal row is never rewritten. */
  async cancel(sessionId: string, now: Date): Promise<void> {
    this.stopRequests.push({ sessionId, at: now.toISOString() });
    const row = this.rows.get(sessionId);
    if (row === undefined || now.getTime() >= Date.parse(row.plan.at)) return;
    row.plan = { at: now.toISOString(), status: 'cancelled', exitCode: null };
  }

  /** The runtime's process restarts: it loses its handles on running sessions; the ledger stays. */
  restart(): void {
    for (const row of this.rows.values()) row.attached = false;
  }

  /** The ledger's rows for an attempt's sessions. */
  sessionsOf(attemptId: string): LedgerRow[] {
    return [...this.rows.values()].filter((r) => r.attemptId === attemptId);
  }

  /** What the ledger says of a session at `now`: `running` until its terminal row, then that row. */
  statusAt(row: LedgerRow, now: Date): { status: LedgerStatus | 'running'; exitCode: number | null } {
    return now.getTime() >= Date.parse(row.plan.at)
      ? { status: row.plan.status, exitCode: row.plan.exitCode }
      : { status: 'running', exitCode: null };
  }
}

/**
 * A terminal ledger row as the runtime port's exit: only a `completed` session with exit code 0 succeeded; every
 * other terminal status is a failure; `cancelled` is the runtime's acknowledgement of a stop.
 */
function exitOf(plan: SessionPlan): Observation {
  const succeeded = plan.status === 'completed' && plan.exitCode === 0;
  return {
    status: 'exited',
    outcome: succeeded ? 'succeeded' : 'failed',
    exitCode: plan.exitCode,
    cancelled: plan.status === 'cancelled',
    ...(plan.output === undefined ? {} : { outputDigest: sha256Hex(plan.output) }),
    detail: `session ${plan.status}${plan.exitCode === null ? ', exit code unknown' : ` (exit ${plan.exitCode})`}`,
  };
}
