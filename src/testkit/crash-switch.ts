import { Engine } from '../engine/engine.js';
import type { PassPhaseName, TickReport } from '../engine/pass-phases.js';
import type { EngineParts } from '../engine/parts.js';

/** Where a simulated crash stops a pass: before planning, claiming, dispatching or observing. */
export type CrashPoint = 'plan' | 'claim' | 'dispatch' | 'observe';

const PHASE_OF: Readonly<Record<CrashPoint, PassPhaseName>> = {
  plan: 'plan',
  claim: 'advance',
  dispatch: 'dispatch',
  observe: 'observe',
};

/**
 * Simulated crashes for one engine, injected by wrapping its pass phases (production code has no crash branch):
 * a pass run through {@link CrashSwitch.tickCrashing} stops before the named phase and runs none after it, as a
 * process killed there would — whatever it committed stays, nothing later happens.
 */
export class CrashSwitch {
  private stopBefore: PassPhaseName | undefined;
  private halted = false;

  /** `parts` with every pass phase wrapped by this switch. */
  wrap(parts: EngineParts): EngineParts {
    return {
      ...parts,
      passPhases: parts.passPhases.map((phase) => ({
        name: phase.name,
        run: async (pass) => {
          if (phase.name === this.stopBefore) this.halted = true;
          if (!this.halted) await phase.run(pass);
        },
      })),
    };
  }

  /** One pass of `engine` (built with {@link CrashSwitch.wrap}) that crashes at `point`. */
  async tickCrashing(engine: Engine, point: CrashPoint): Promise<TickReport> {
    this.stopBefore = PHASE_OF[point];
    this.halted = false;
    try {
      return await engine.tick();
    } finally {
      this.stopBefore = undefined;
      this.halted = false;
    }
  }
}
