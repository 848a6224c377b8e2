import type { SideEffectClass } from '../../contract/vocabulary.js';
import type { LaunchEvidence, LaunchRequest, LaunchResult, Observation, Runtime } from '../../runtime/runtime.js';
import type { EngineFaults } from './faults.js';

/** The faults a broken runtime adapter injects. */
export type RuntimeFaults = Pick<
  EngineFaults,
  'successWithoutEvidence' | 'bindSecondSession' | 'ackCancelWithoutRuntime' | 'resendUnconfirmedLaunches'
>;

/**
 * A runtime adapter with the bugs the self-check needs: it sits between the engine and the probe, so the
 * probe's log still holds what the runtime really did, while the engine acts on the adapter's word.
 */
export class FaultyRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  readonly sideEffectBoundProven: boolean;
  /** Sessions whose cancellation the adapter answered itself. */
  private readonly cancelled = new Set<string>();

  constructor(
    private readonly inner: Runtime,
    private readonly faults: Partial<RuntimeFaults>,
  ) {
    this.runtimeId = inner.runtimeId;
    this.sideEffectClass = inner.sideEffectClass;
    this.sideEffectBoundProven = inner.sideEffectBoundProven;
  }

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    let result: LaunchResult;
    try {
      result = await this.inner.launch(request, now);
    } catch (error) {
      // `resendUnconfirmedLaunches`: the answer was lost, and the launch is sent again without proof that the
      // first one never happened.
      if (this.faults.resendUnconfirmedLaunches !== true) throw error;
      return this.inner.launch(request, now);
    }
    if (this.faults.bindSecondSession === true && result.outcome === 'started') {
      // `bindSecondSession`: the same attempt is launched a second time under another session key.
      await this.inner.launch({ ...request, sessionKey: `${request.sessionKey}:again` }, now).catch(() => undefined);
    }
    return result;
  }

  async observe(sessionId: string, now: Date): Promise<Observation> {
    // `ackCancelWithoutRuntime`: a cancelled exit is reported while the session keeps running.
    if (this.cancelled.has(sessionId))
      return { status: 'exited', outcome: 'failed', exitCode: null, cancelled: true, detail: 'cancelled on request' };
    const observation = await this.inner.observe(sessionId, now);
    // `successWithoutEvidence`: a vanished session is reported as a clean, successful exit.
    if (this.faults.successWithoutEvidence === true && observation.status === 'lost')
      return { status: 'exited', outcome: 'succeeded', exitCode: 0, cancelled: false };
    return observation;
  }

  async cancel(sessionId: string, now: Date): Promise<void> {
    if (this.faults.ackCancelWithoutRuntime === true) {
      this.cancelled.add(sessionId);
      return;
    }
    await this.inner.cancel(sessionId, now);
  }

  async launchEvidence(sessionKey: string, now: Date): Promise<LaunchEvidence> {
    return (
      (await this.inner.launchEvidence?.(sessionKey, now)) ?? {
        evidence: 'unknown',
        detail: `runtime ${this.runtimeId} keeps no launch evidence`,
      }
    );
  }
}
