import { legacyFlatDefinition } from '../../src/testkit/conformance/legacy-flat.js';

/** A legacy (schemaVersion 1) definition `daily`, due every day at 09:00 UTC, as the conformance vectors write them. */
export function legacyDaily(status: 'ACTIVE' | 'PAUSED') {
  return legacyFlatDefinition({ id: 'daily', name: 'Daily', status, cwd: 'work/proj', prompt: 'Run the routine.' });
}
