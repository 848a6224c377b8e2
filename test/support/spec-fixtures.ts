import type { ExtensionSpec } from '../../src/spec/extension-spec.js';
import type { LifecycleSpec } from '../../src/spec/lifecycle-spec.js';
import { extensionSpec as loadedExtensionSpec, lifecycleSpec } from '../../src/testkit/invariants/machine-samples.js';

export {
  FIXED_NOW,
  generatedMachine,
  machineSpec,
  permissiveMachine,
  sampleEvent,
  sampleEvents,
  sampleInputs,
  specOf,
  type AnyMachineId,
  type SampleEvent,
} from '../../src/testkit/invariants/machine-samples.js';

export const spec: LifecycleSpec = lifecycleSpec;

/** A deep copy of the real spec for tests that break it on purpose. */
export function specCopy(): LifecycleSpec {
  return structuredClone(spec);
}

export const machineIds = spec.machines.map((m) => m.id);

/** This project's own extension machines (spec/coven-automata/v1/extension-machines.json). */
export const extensionSpec: ExtensionSpec = loadedExtensionSpec;

export function extensionSpecCopy(): ExtensionSpec {
  return structuredClone(extensionSpec);
}

export const extensionIds = extensionSpec.machines.map((m) => m.id);
