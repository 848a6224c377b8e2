import fc from 'fast-check';
import type { ConformanceVector } from '../../src/testkit/conformance/vector-format.js';

/**
 * Corpus-like vectors for the runner's property: a random operation sequence in the conformance.vector.v1 format
 * over one scheduled definition (a runtime behaviour, a process death after the claim, a restart, a cancellation,
 * the passes that follow), and the expectations a reference model of contract-conformant behaviour states for it.
 * Where the contract leaves a choice, the model writes the reference implementation's (upstream's daemon): a timed
 * out run expected `failed` or `timed_out`, lost evidence expected `failed`, a lapsed claim expected to settle
 * failed with no dispatch. Each such choice is one the runner must judge `pass` or `differs` by a rule, never `fail`.
 */
export type Behavior = 'available' | 'timeout' | 'lost-after-side-effect';

export interface Scenario {
  automationId: string;
  /** Day of March 2026 and hour (UTC) of the slot the vector is about. */
  day: number;
  hour: number;
  timeoutMinutes: number;
  behavior: Behavior;
  /** Minutes after the slot of the first pass, which claims it. */
  firstPassAfter: number;
  /** The engine process dies after committing the claim, before anything is launched. */
  diesAfterClaim: boolean;
  /** Minutes after the first pass at which the engine restarts (kept before the deadline). */
  restartAfter: number;
  /** For a session that never ends: a cancellation this many minutes before the deadline (0: at its instant). */
  cancelBeforeDeadline: number | null;
  /** Minutes between the last op and a final pass (for a session that never ends and no cancel: after the deadline). */
  lastPassAfter: number;
  /** What the model expects of a run that times out: upstream's daemon settles it failed, the contract timed_out. */
  timeoutExpected: 'failed' | 'timed_out';
}

/** The lease upstream's reference model claims with (and the runner's engine uses): an hour. */
export const LEASE_MINUTES = 60;

export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.record({
  automationId: fc.constantFrom('routine', 'nightly-digest', 'ledger-sync'),
  day: fc.integer({ min: 2, max: 27 }),
  hour: fc.integer({ min: 0, max: 12 }),
  timeoutMinutes: fc.constantFrom(15, 30, 45, 90, 240, 600),
  behavior: fc.constantFrom<Behavior>('available', 'timeout', 'lost-after-side-effect'),
  firstPassAfter: fc.integer({ min: 0, max: 600 }),
  diesAfterClaim: fc.boolean(),
  restartAfter: fc.integer({ min: 1, max: 600 }),
  cancelBeforeDeadline: fc.option(fc.integer({ min: 0, max: 600 }), { nil: null }),
  lastPassAfter: fc.integer({ min: 0, max: 120 }),
  timeoutExpected: fc.constantFrom<'failed' | 'timed_out'>('failed', 'timed_out'),
});

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** The instants the scenario's ops run at, each clamped into the window the scenario describes. */
export function timeline(s: Scenario) {
  const slot = Date.UTC(2026, 2, s.day, s.hour);
  const firstPass = slot + s.firstPassAfter * MINUTE;
  // The run's deadline is fixed by its first claim, taken at the first pass: perRunMinutes from then.
  const deadline = firstPass + s.timeoutMinutes * MINUTE;
  const restart = s.diesAfterClaim ? Math.min(firstPass + s.restartAfter * MINUTE, deadline - MINUTE) : undefined;
  const launch = Math.max(firstPass, restart ?? firstPass);
  // The claim is taken at the first pass with the model's lease; a restart strictly after it finds it lapsed.
  const lapsed = restart !== undefined && restart > firstPass + LEASE_MINUTES * MINUTE;
  const cancel =
    s.behavior === 'timeout' && s.cancelBeforeDeadline !== null && !lapsed
      ? Math.max(launch, deadline - s.cancelBeforeDeadline * MINUTE)
      : undefined;
  return { slot, deadline, firstPass, restart, launch, lapsed, cancel };
}

type Op = Record<string, unknown> & { op: string };

function operations(s: Scenario): Op[] {
  const t = timeline(s);
  const ops: Op[] = [{ op: 'runtimeBehavior', behavior: s.behavior }];
  if (s.diesAfterClaim) ops.push({ op: 'crash', during: 'claim' });
  ops.push({ op: 'tick', at: iso(t.firstPass) });
  if (t.restart !== undefined) ops.push({ op: 'restart', at: iso(t.restart) });
  if (t.cancel !== undefined) {
    // The runtime acknowledges the stop at the next pass, inside the cancellation's stop lease.
    ops.push({ op: 'cancel', automationId: s.automationId, at: iso(t.cancel) });
    ops.push({ op: 'tick', at: iso(t.cancel) });
    ops.push({ op: 'tick', at: iso(t.cancel + 5_000) });
  } else if (s.behavior === 'timeout' && !t.lapsed) {
    ops.push({ op: 'tick', at: iso(t.deadline + s.lastPassAfter * MINUTE) });
  } else {
    ops.push({ op: 'tick', at: iso(t.launch + Math.max(1, s.lastPassAfter) * MINUTE) });
  }
  return ops;
}

/** What the reference model expects of the occurrence and its run. */
function outcome(s: Scenario): { state: string; ambiguous?: boolean; reason?: string; dispatches: number } {
  const t = timeline(s);
  if (t.lapsed) return { state: 'failed', reason: 'lease', dispatches: 0 };
  if (s.behavior === 'available') return { state: 'succeeded', dispatches: 1 };
  if (s.behavior === 'lost-after-side-effect') return { state: 'failed', ambiguous: true, dispatches: 1 };
  if (t.cancel !== undefined) return { state: 'cancelled', dispatches: 1 };
  return { state: s.timeoutExpected, dispatches: 1 };
}

/** The scenario as a conformance.vector.v1 document with the reference model's expectations. */
export function vectorOf(s: Scenario): ConformanceVector {
  const o = outcome(s);
  return {
    vectorId: `generated.${s.automationId}-${s.day}-${s.hour}`,
    profile: 'scheduler-reliability',
    category: 'state-machines',
    title: `generated: ${s.behavior}${s.diesAfterClaim ? ', dies after the claim' : ''}`,
    virtualTime: { start: iso(Date.UTC(2026, 2, s.day)) },
    input: {
      definitions: [
        {
          schemaVersion: 1,
          id: s.automationId,
          name: s.automationId,
          status: 'ACTIVE',
          rrule: `FREQ=DAILY;BYHOUR=${s.hour}`,
          timezone: 'utc',
          misfire: 'latest',
          overlap: 'forbid',
          timeoutMinutes: s.timeoutMinutes,
          runtime: 'coven-code',
          cwd: 'work/generated',
          prompt: 'Do the generated work.',
        },
      ],
      operations: operations(s),
    },
    expected: {
      occurrences: [
        {
          automationId: s.automationId,
          state: o.state,
          ...(o.reason === undefined ? {} : { failureReasonMatches: o.reason }),
        },
      ],
      runs:
        o.dispatches === 0
          ? []
          : [
              {
                automationId: s.automationId,
                status: o.state,
                count: 1,
                ...(o.ambiguous === true ? { ambiguous: true } : {}),
              },
            ],
      dispatchCount: o.dispatches,
      invariants: [
        'no-duplicate-dispatch-per-fence',
        'fence-uniqueness',
        'terminal-state-monotonicity',
        'no-false-success-under-injected-failure',
      ],
    },
  };
}
