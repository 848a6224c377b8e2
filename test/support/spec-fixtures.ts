import type { LifecycleSpec } from '../../src/spec/lifecycle-spec.js';
import { lifecycleSpec } from '../../src/invariants/machine-samples.js';

export {
  FIXED_NOW,
  generatedMachine,
  machineSpec,
  permissiveMachine,
  sampleEvent,
  sampleEvents,
  sampleInputs,
  type SampleEvent,
} from '../../src/invariants/machine-samples.js';

export const spec: LifecycleSpec = lifecycleSpec;

/** A deep copy of the real spec for tests that break it on purpose. */
export function specCopy(): LifecycleSpec {
  return structuredClone(spec);
}

export const machineIds = spec.machines.map((m) => m.id);
