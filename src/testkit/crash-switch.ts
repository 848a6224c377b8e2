import { Engine } from '../engine/engine.js';
import type { PassPhaseName, PassRun, TickReport } from '../engine/pass-phases.js';
import type { EngineParts } from '../engine/parts.js';

/**
 * Where a simulated crash stops a pass: before planning, claiming, dispatching or observing, or (`launched`) right
 * after planning sent the launches it carried, before anything else.
 */
export type CrashPoint = 'plan' | 'claim' | 'launched' | 'dispatch' | 'observe';

/**
 * The phase each crash stops before, and how far the plan phase may carry what it plans before it. Planning carries
 * a due occurrence through its claim and its launch in one commit (PlanCarry), so a crash before the claim or the
 * dispatch phase is the state a crash left when those were separate commits, and still is when planning carries
 * nothing (a carry that failed, work that was not eligible yet): planned, or claimed and not dispatched.
 */
const CRASHES: Readonly<Record<CrashPoint, { before: PassPhaseName; carry?: 'planned' | 'claimed' }>> = {
  plan: { before: 'plan' },
  claim: { before: 'advance', carry: 'planned' },
  launched: { before: 'advance' },
  dispatch: { before: 'dispatch', carry: 'claimed' },
  observe: { before: 'observe' },
};

/**
 * Simulated crashes for one engine, injected by wrapping its pass phases (production code has no crash branch):
 * a pass run through {@link CrashSwitch.tickCrashing} stops before the named phase and runs none after it, as a
 * process killed there would — whatever it committed stays, nothing later happens.
 */
export class CrashSwitch {
  private crash: CrashPoint | undefined;
  private halted = false;

  /** `parts` with every pass phase wrapped by this switch. */
  wrap(parts: EngineParts): EngineParts {
    return {
      ...parts,
      passPhases: parts.passPhases.map((phase) => ({
        name: phase.name,
        run: async (pass) => {
          if (this.crash !== undefined && phase.name === CRASHES[this.crash].before) this.halted = true;
          if (!this.halted) await phase.run(this.carried(pass));
        },
      })),
    };
  }

  /** The pass with its plan carry cut back to what the crash leaves (its findings still shared by every phase). */
  private carried(pass: PassRun): PassRun {
    const upTo = this.crash === undefined ? undefined : CRASHES[this.crash].carry;
    if (upTo === undefined || pass.carry === undefined) return pass;
    return { ...pass, carry: upTo === 'planned' ? undefined : { ...pass.carry, through: 'claimed' } };
  }

  /** One pass of `engine` (built with {@link CrashSwitch.wrap}) that crashes at `point`. */
  async tickCrashing(engine: Engine, point: CrashPoint): Promise<TickReport> {
    this.crash = point;
    this.halted = false;
    try {
      return await engine.tick();
    } finally {
      this.crash = undefined;
      this.halted = false;
    }
  }
}
