import type { Runtime, SessionExit } from '../runtime/runtime.js';

/**
 * Settles an attempt when its runtime says the session ended (the optional `Runtime.onSessionExit`), instead
 * of at the engine's next pass. A cue only makes the worker observe that one attempt now, through the same
 * observe-and-settle step a pass runs, so the evidence, the machines' checks and the commit are the pass's own;
 * a pass settling the same attempt at the same time finds it settled (or loses the commit race, which counts as
 * contended in the next pass's report). A cue heard while this engine is still sending the attempt's launch
 * waits until the launch's answer is committed, since before that there is no started attempt to settle.
 */
export class ExitCues {
  /** Attempts whose launch this engine is sending, with how many sends are in flight for each. */
  private readonly sending = new Map<string, number>();
  /** Cues heard while their attempt's launch was being sent. */
  private readonly early = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private failures: Error[] = [];
  private settled = 0;
  private unsubscribes: Array<() => void> = [];
  private listening = false;

  /** `observe` is the worker's observation of one attempt (true when it settled). */
  constructor(private readonly observe: (attemptId: string) => Promise<boolean>) {}

  /** Hears every runtime that offers session-exit cues; runtimes without them stay with passes alone. */
  listen(runtimes: Iterable<Runtime>): void {
    if (this.listening) return;
    this.listening = true;
    for (const runtime of runtimes) {
      const unsubscribe = runtime.onSessionExit?.((exit) => this.heard(exit));
      if (unsubscribe !== undefined) this.unsubscribes.push(unsubscribe);
    }
  }

  /** Stops hearing cues and waits for the settles already started (the store may close right after). */
  async close(): Promise<void> {
    this.listening = false;
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    this.early.clear();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /**
   * Runs the release of one of `attemptId`'s launches; a cue heard meanwhile is acted on once it answered.
   * `release` is told whether one was heard so far, to settle the exit in the launch answer's own commit.
   */
  async whileSending<T>(
    attemptId: string,
    release: (exitCued: () => boolean) => Promise<T>,
    settledExit: (released: T) => boolean = () => false,
  ): Promise<T> {
    this.sending.set(attemptId, (this.sending.get(attemptId) ?? 0) + 1);
    // A cue the release settled in its own commit is spent: observing the attempt again would only read it.
    let spent = false;
    try {
      const released = await release(() => this.early.has(attemptId));
      spent = settledExit(released);
      return released;
    } finally {
      const left = this.sending.get(attemptId)! - 1;
      if (left > 0) this.sending.set(attemptId, left);
      else {
        this.sending.delete(attemptId);
        if (this.early.delete(attemptId) && !spent) this.settle(attemptId);
      }
    }
  }

  /** What cue-driven settles did since the last call (attempts settled, failures), for the next pass to report. */
  takeReport(): { settled: number; failures: Error[] } {
    const report = { settled: this.settled, failures: this.failures };
    this.settled = 0;
    this.failures = [];
    return report;
  }

  private heard({ attemptId }: SessionExit): void {
    if (!this.listening) return;
    if (this.sending.has(attemptId)) this.early.add(attemptId);
    else this.settle(attemptId);
  }

  private settle(attemptId: string): void {
    // Off the runtime's call stack: a runtime may cue from inside launch() or while iterating its listeners.
    const settling: Promise<void> = Promise.resolve()
      .then(() => this.observe(attemptId))
      .then(
        (settled) => void (settled && (this.settled += 1)),
        (error: unknown) => {
          const message = `worker: attempt ${attemptId} (session exit cue): ${(error as Error).message}`;
          this.failures.push(new Error(message, { cause: error }));
        },
      )
      .finally(() => this.inFlight.delete(settling));
    this.inFlight.add(settling);
  }
}
