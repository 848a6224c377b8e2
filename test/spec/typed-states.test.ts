import { describe, expect, test } from 'vitest';
import * as machines from '../../machines/index.js';
import { loadLifecycleSpec } from '../../src/spec/lifecycle-spec.js';
import { expectConstantsMatchSpec } from '../support/typed-constants.js';

/** Read fresh from disk, so the emitted constants are compared with the spec file, not with the generator's input. */
const spec = loadLifecycleSpec();

describe.each(spec.machines.map((m) => [m.id, m] as const))('typed constants of %s', (_id, m) => {
  test('states, events, terminal and live sets equal the spec lists, in spec order', () => {
    expectConstantsMatchSpec(m);
  });
});

describe('typed constants', () => {
  test('are usable as values and as types', () => {
    const claimed: machines.OccurrenceState = machines.OccurrenceState.claimed;
    const retry: machines.OccurrenceEventType = machines.OccurrenceEventType.operator_retry;
    expect(claimed).toBe('claimed');
    expect(retry).toBe('operator_retry');
    expect(machines.OCCURRENCE_TERMINAL_STATES.has(machines.OccurrenceState.superseded)).toBe(true);
    expect(machines.RUN_LIVE_STATES.has(machines.RunState.running)).toBe(true);
    const state: string = 'timed_out';
    if (machines.isAttemptTerminal(state)) {
      const narrowed: machines.AttemptState = state;
      expect(narrowed).toBe('timed_out');
    } else {
      expect.unreachable('timed_out is a terminal attempt state');
    }
  });
});
