/**
 * Why a pass ran: the first pass of {@link Engine.start} (`startup`), the wait for the next due thing (`wait`), an
 * outside commit (`wake`), a look again after a failed pass (`retry`), or a direct `tick()` call (`manual`).
 */
export type PassTrigger = 'startup' | 'wait' | 'wake' | 'retry' | 'manual';

/**
 * The timers a running engine schedules its passes and lease renewals with. The default is the host's; tests and
 * the conformance runner inject their own to see each wait (with its trigger) and fire it without sleeping.
 *
 * @example
 * ```ts
 * const waits: number[] = [];
 * const timers: EngineTimers = { ...systemTimers, setTimeout: (fire, ms) => (waits.push(ms), setTimeout(fire, ms)) };
 * createEngine({ store, runtimes, timers }).start();
 * ```
 */
export interface EngineTimers {
  setTimeout(fire: () => void, delayMs: number, trigger: PassTrigger): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(fire: () => void, everyMs: number): unknown;
  clearInterval(handle: unknown): void;
}

/** The host's timers; the renewal interval never keeps the process alive by itself. */
export const systemTimers: EngineTimers = {
  setTimeout: (fire, delayMs) => setTimeout(fire, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (fire, everyMs) => setInterval(fire, everyMs).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};
