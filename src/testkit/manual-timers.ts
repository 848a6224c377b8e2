import type { EngineTimers, PassTrigger } from '../engine/timers.js';

/** A pass a running engine scheduled: after how long, and why. */
export interface ScheduledPass {
  id: number;
  delayMs: number;
  trigger: PassTrigger;
}

/**
 * Timers for {@link EngineOptions.timers} that never fire by themselves: a test sees each pass the running engine
 * schedules, with its trigger, and fires it when it chooses. Renewal intervals are recorded and never fire (passes
 * renew the owner lease too).
 *
 * @example
 * ```ts
 * const timers = new ManualTimers();
 * const engine = createEngine({ store, runtimes, clock, timers });
 * engine.start();
 * timers.fire(await timers.scheduled(0)); // the startup pass
 * const wait = await timers.scheduled(1); // the wait it chose afterwards
 * ```
 */
export class ManualTimers implements EngineTimers {
  /** Every pass ever scheduled, in order (cleared ones included). */
  readonly history: ScheduledPass[] = [];
  private readonly pending = new Map<number, () => void>();
  private readonly waiters: Array<() => void> = [];

  setTimeout(fire: () => void, delayMs: number, trigger: PassTrigger): number {
    const id = this.history.length + 1;
    this.history.push({ id, delayMs, trigger });
    this.pending.set(id, fire);
    for (const wake of this.waiters.splice(0)) wake();
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  setInterval(): number {
    return 0;
  }

  clearInterval(): void {}

  /** The `index`-th pass scheduled (0: the first), once the engine schedules it; rejects after `deadlineMs`. */
  async scheduled(index: number, deadlineMs = 10_000): Promise<ScheduledPass> {
    if (this.history[index] !== undefined) return this.history[index];
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(
        () => reject(new Error(`no pass #${index} scheduled within ${deadlineMs} ms`)),
        deadlineMs,
      );
      const check = () => {
        const pass = this.history[index];
        if (pass === undefined) return void this.waiters.push(check);
        clearTimeout(deadline);
        resolve(pass);
      };
      check();
    });
  }

  /** Fires a scheduled pass now; false when it was cleared (replaced by a sooner one) or already fired. */
  fire(pass: ScheduledPass): boolean {
    const fire = this.pending.get(pass.id);
    if (fire === undefined) return false;
    this.pending.delete(pass.id);
    fire();
    return true;
  }
}
