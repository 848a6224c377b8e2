import type { SideEffectClass } from '../../contract/vocabulary.js';
import type { LaunchEvidence, LaunchRequest, LaunchResult, Observation, Runtime } from '../../runtime/runtime.js';

/** What the runtime saw, independent of what the engine recorded: the ground truth the checks compare with. */
export interface RuntimeLog {
  launches: Array<{ sessionKey: string; attemptId: string; at: string; sessionId?: string; feedEnd: number }>;
  cancels: Array<{ sessionId: string; at: string }>;
  /** Sessions the runtime reported as exited: with its outcome, and whether it ended on a cancel. */
  exits: Map<string, { outcome: 'succeeded' | 'failed'; cancelled: boolean }>;
  lost: Set<string>;
}

/**
 * Wraps a runtime and logs every launch (with how far the changefeed was durable at that instant),
 * cancel request and terminal observation, so invariant checks can hold the store's history against what
 * actually happened at the runtime.
 */
export class ProbeRuntime implements Runtime {
  readonly log: RuntimeLog = { launches: [], cancels: [], exits: new Map(), lost: new Set() };
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  readonly sideEffectBoundProven: boolean;

  constructor(
    private readonly inner: Runtime,
    /** The feed position after the last durable commit: launches must follow their adoption's events. */
    private readonly feedEnd: () => Promise<number>,
  ) {
    this.runtimeId = inner.runtimeId;
    this.sideEffectClass = inner.sideEffectClass;
    this.sideEffectBoundProven = inner.sideEffectBoundProven;
  }

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const entry: RuntimeLog['launches'][number] = {
      sessionKey: request.sessionKey,
      attemptId: request.attemptId,
      at: now.toISOString(),
      feedEnd: await this.feedEnd(),
    };
    let result: LaunchResult;
    try {
      result = await this.inner.launch(request, now);
    } catch (error) {
      // The session may exist: count it as a launch whose answer was lost.
      this.log.launches.push(entry);
      throw error;
    }
    if (result.outcome === 'started') this.log.launches.push({ ...entry, sessionId: result.sessionId });
    return result;
  }

  async observe(sessionId: string, now: Date): Promise<Observation> {
    const observation = await this.inner.observe(sessionId, now);
    if (observation.status === 'exited')
      this.log.exits.set(sessionId, { outcome: observation.outcome, cancelled: observation.cancelled });
    if (observation.status === 'lost') this.log.lost.add(sessionId);
    return observation;
  }

  /** Evidence passes through untouched: what the runtime did is already in the log. */
  async launchEvidence(sessionKey: string, now: Date): Promise<LaunchEvidence> {
    return (
      (await this.inner.launchEvidence?.(sessionKey, now)) ?? {
        evidence: 'unknown',
        detail: `runtime ${this.runtimeId} keeps no launch evidence`,
      }
    );
  }

  async cancel(sessionId: string, now: Date): Promise<void> {
    this.log.cancels.push({ sessionId, at: now.toISOString() });
    await this.inner.cancel(sessionId, now);
  }
}
