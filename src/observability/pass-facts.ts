import type { TickReport } from '../engine/engine.js';

/** What the doctor needs to know of the scheduler's passes, which no store records. */
export interface PassFactsSnapshot {
  lastPassAt: string | null;
  lastSuccessfulPassAt: string | null;
  lastPassDurationMs: number | null;
  /** The failed steps of the last pass (their messages). */
  lastPassErrors: string[];
}

/** A pass's wall time: the sum of its phases' stopwatch times. */
export const passDurationMs = (report: TickReport): number =>
  Object.values(report.phaseMs).reduce((sum, ms) => sum + ms, 0);

/**
 * Remembers the last pass and the last clean one (no failed step). Fed from the engine's `onPass`.
 *
 * @example
 * ```ts
 * const passes = new PassFacts();
 * engine.start((report) => passes.observe(report));
 * passes.snapshot().lastSuccessfulPassAt;
 * ```
 */
export class PassFacts {
  private last: PassFactsSnapshot = {
    lastPassAt: null,
    lastSuccessfulPassAt: null,
    lastPassDurationMs: null,
    lastPassErrors: [],
  };

  observe(report: TickReport): void {
    this.last = {
      lastPassAt: report.at,
      lastSuccessfulPassAt: report.errors.length === 0 ? report.at : this.last.lastSuccessfulPassAt,
      lastPassDurationMs: passDurationMs(report),
      lastPassErrors: report.errors.map((e) => e.message),
    };
  }

  snapshot(): PassFactsSnapshot {
    return { ...this.last, lastPassErrors: [...this.last.lastPassErrors] };
  }
}
