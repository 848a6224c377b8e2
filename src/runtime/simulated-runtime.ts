import { sha256Hex } from '../contract/digest.js';
import type { SideEffectClass } from '../contract/vocabulary.js';
import type { LaunchEvidence, LaunchRecord, LaunchRequest, LaunchResult, Observation, Runtime } from './runtime.js';

/**
 * How one simulated launch behaves:
 * - `succeed` / `fail`: starts, then exits 0 / 1 after `durationMs`;
 * - `refuse`: deterministic launch refusal; `unavailable` / `transient`: retryable pre-ownership failures;
 * - `hang`: starts and never exits (timeouts); `lost-after-side-effect`: starts, then vanishes;
 * - `crash-during-launch`: the launch call throws after the session started (ownership unknown);
 * - `duplicate-response`: exits and keeps reporting the exit; `out-of-order-response`: reports the exit, then
 *   a stale `running` observation, then the exit again.
 */
export type SimulatedBehavior =
  | 'succeed'
  | 'fail'
  | 'refuse'
  | 'unavailable'
  | 'transient'
  | 'hang'
  | 'lost-after-side-effect'
  | 'crash-during-launch'
  | 'duplicate-response'
  | 'out-of-order-response';

interface Session {
  behavior: SimulatedBehavior;
  startedAt: number;
  durationMs: number;
  /** When a cancel reached the session (epoch ms; -Infinity when the caller gave no time), or null. */
  cancelledAt: number | null;
  observations: number;
}

/** When a session ends by itself; hanging sessions never do. */
const naturalEnd = (s: Session): number =>
  s.behavior === 'hang' || s.behavior === 'crash-during-launch' ? Infinity : s.startedAt + s.durationMs;

/**
 * A deterministic runtime for tests, the demo and benchmarks: behaviours are queued per launch (or a
 * default applies), time comes from the caller, and every launch is logged.
 *
 * @example
 * ```ts
 * const runtime = new SimulatedRuntime({ runtimeId: 'coven-code' });
 * runtime.enqueue('unavailable', 'succeed'); // first launch fails before ownership, the retry succeeds
 * ```
 */
export class SimulatedRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  readonly sideEffectBoundProven: boolean;
  /** Sessions started. */
  readonly launches: LaunchRecord[] = [];
  /** Every launch call, refused ones included: what a conformance `dispatchCount` counts. */
  launchCalls = 0;
  private readonly queue: SimulatedBehavior[] = [];
  private readonly sessions = new Map<string, Session>();
  private counter = 0;
  defaultBehavior: SimulatedBehavior;
  durationMs: number;

  /** Session ids by the launch's session key, and the keys fenced off as never started. */
  private readonly byKey = new Map<string, string>();
  private readonly fenced = new Set<string>();
  private readonly keepsEvidence: boolean;

  /**
   * `keepsLaunchEvidence: false` models a runtime that cannot say what became of a launch whose answer was lost
   * (upstream's conformance model): such launches are left to the lease and recovery.
   */
  constructor(
    options: {
      runtimeId?: string;
      defaultBehavior?: SimulatedBehavior;
      durationMs?: number;
      sideEffectClass?: SideEffectClass;
      sideEffectBoundProven?: boolean;
      keepsLaunchEvidence?: boolean;
    } = {},
  ) {
    this.keepsEvidence = options.keepsLaunchEvidence ?? true;
    this.runtimeId = options.runtimeId ?? 'coven-code';
    this.defaultBehavior = options.defaultBehavior ?? 'succeed';
    this.durationMs = options.durationMs ?? 60_000;
    this.sideEffectClass = options.sideEffectClass ?? 'local_write';
    this.sideEffectBoundProven = options.sideEffectBoundProven ?? true;
  }

  /** Behaviours for the next launches, in order; afterwards `defaultBehavior` applies. */
  enqueue(...behaviors: SimulatedBehavior[]): void {
    this.queue.push(...behaviors);
  }

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    this.launchCalls += 1;
    if (this.fenced.has(request.sessionKey))
      return {
        outcome: 'failed',
        failureClass: 'launch_refused',
        detail: 'this launch was fenced off as never started',
      };
    const behavior = this.queue.shift() ?? this.defaultBehavior;
    if (behavior === 'refuse')
      return { outcome: 'failed', failureClass: 'launch_refused', detail: 'simulated deterministic refusal' };
    if (behavior === 'unavailable')
      return { outcome: 'failed', failureClass: 'runtime_unavailable', detail: 'simulated runtime unavailable' };
    if (behavior === 'transient')
      return { outcome: 'failed', failureClass: 'transient_dispatch', detail: 'simulated transient dispatch failure' };
    const sessionId = `sim-${++this.counter}-${request.attemptId}`.slice(0, 160);
    this.launches.push({ sessionKey: request.sessionKey, attemptId: request.attemptId, at: now.toISOString() });
    this.sessions.set(sessionId, {
      behavior,
      startedAt: now.getTime(),
      durationMs: this.durationMs,
      cancelledAt: null,
      observations: 0,
    });
    this.byKey.set(request.sessionKey, sessionId);
    if (behavior === 'crash-during-launch') throw new Error('simulated crash after the session started');
    return { outcome: 'started', sessionId, cursors: { eventCursor: `${sessionId}:0`, logCursor: '0' } };
  }

  async observe(sessionId: string, now: Date): Promise<Observation> {
    const session = this.sessions.get(sessionId);
    if (session === undefined) return { status: 'lost', detail: `no simulated session ${sessionId}` };
    session.observations += 1;
    // A session that had already ended keeps its exit: a cancel that arrives afterwards changes nothing.
    if (session.cancelledAt !== null && session.cancelledAt < naturalEnd(session))
      return { status: 'exited', outcome: 'failed', exitCode: null, cancelled: true, detail: 'cancelled on request' };
    const done = now.getTime() >= session.startedAt + session.durationMs;
    switch (session.behavior) {
      case 'hang':
      case 'crash-during-launch':
        return { status: 'running', cursors: { logCursor: String(session.observations) } };
      case 'lost-after-side-effect':
        return done
          ? { status: 'lost', detail: 'simulated session vanished after its side effect' }
          : { status: 'running' };
      case 'fail':
        return done
          ? { status: 'exited', outcome: 'failed', exitCode: 1, cancelled: false, outputDigest: digestOf(sessionId, 1) }
          : { status: 'running' };
      case 'out-of-order-response':
        // The second look reports a stale heartbeat after the exit; a correct worker has already settled.
        if (done && session.observations % 2 === 0) return { status: 'running' };
        return done
          ? {
              status: 'exited',
              outcome: 'succeeded',
              exitCode: 0,
              cancelled: false,
              outputDigest: digestOf(sessionId, 0),
            }
          : { status: 'running' };
      default:
        return done
          ? {
              status: 'exited',
              outcome: 'succeeded',
              exitCode: 0,
              cancelled: false,
              outputDigest: digestOf(sessionId, 0),
            }
          : { status: 'running' };
    }
  }

  /** The output whose digest a succeeded simulated session reports (see `digestOf`). */
  async sessionOutput(sessionId: string): Promise<string | undefined> {
    return this.sessions.has(sessionId) ? outputOf(sessionId, 0) : undefined;
  }

  async launchEvidence(sessionKey: string): Promise<LaunchEvidence> {
    if (!this.keepsEvidence) return { evidence: 'unknown', detail: 'this simulated runtime keeps no launch evidence' };
    const sessionId = this.byKey.get(sessionKey);
    if (sessionId !== undefined)
      return { evidence: 'started', sessionId, cursors: { eventCursor: `${sessionId}:0`, logCursor: '0' } };
    this.fenced.add(sessionKey);
    return { evidence: 'never_started', detail: `no simulated session was started for ${sessionKey}` };
  }

  async cancel(sessionId: string, now?: Date): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (session === undefined || session.behavior === 'lost-after-side-effect' || session.cancelledAt !== null) return;
    session.cancelledAt = now?.getTime() ?? -Infinity;
  }

  /** Forgets every session, as a runtime process restart would. */
  forgetSessions(): void {
    this.sessions.clear();
  }
}

/** The simulated session's "output" is its id and exit code; its digest is a real SHA-256 of that. */
function digestOf(sessionId: string, code: number): string {
  return sha256Hex(outputOf(sessionId, code));
}

const outputOf = (sessionId: string, code: number) => `${sessionId}\u0000${code}`;
