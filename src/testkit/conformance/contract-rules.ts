import { AttemptState, OccurrenceState, RunState } from '../../../machines/index.js';
import type { ContractRule, Situation } from './contract-rule-types.js';
export type { ContractRule, Situation } from './contract-rule-types.js';
import { SITUATIONS_UPSTREAM_ALONE_COVERS } from './contract-rules-more.js';

/** A situation's `seen` before the case observed anything: no entities, no refusals. */
export function emptySeen(): Situation['seen'] {
  return { occurrences: [], runs: [], attemptStates: new Map(), quarantined: [], heldRuns: [], refusedCodes: [] };
}

const OCCURRENCE_STATES: ReadonlySet<string> = new Set(Object.values(OccurrenceState));
/** Attempt states before any outcome: what a reference model may keep where this engine records ambiguous. */
const UNSETTLED_ATTEMPT_STATES: ReadonlySet<string> = new Set([
  AttemptState.dispatching,
  AttemptState.started,
  AttemptState.observing,
]);
const want = (s: Situation) => (s.expected ?? {}) as Record<string, unknown>;
/** When each definition became active, as committed; empty when none did during the case. */
const activations = (s: Situation): Map<string, string> => s.seen.activations ?? new Map<string, string>();
/** The engine process died in (or before) one of these phases. */
const crashedDuring = (s: Situation, phases: string[]) => (s.seen.crashes ?? []).some((p) => phases.includes(p));

/** Is `small` a subsequence of `big`? */
function subsequence(small: unknown[], big: unknown[]): boolean {
  let i = 0;
  for (const x of big) if (i < small.length && x === small[i]) i += 1;
  return i === small.length;
}

/** The engine evaluated a command the contract names, where the reference refused it as unsupported. */
const evaluatedContractCommand = (s: Situation, command: RegExp) =>
  command.test(s.expectation) &&
  s.expected === 'CAPABILITY_UNSUPPORTED' &&
  typeof s.observed === 'string' &&
  s.observed !== 'CAPABILITY_UNSUPPORTED';

/** Every rule, in the order they are tried. */
export const CONTRACT_RULES: readonly ContractRule[] = [
  {
    id: 'created-in-draft',
    sentence:
      'A definition created with definition.create.v1, or imported from a legacy source, starts in draft, and ' +
      'definition.revise.v1 moves it to paused.',
    because:
      'leaving draft takes a revision of its own and activation commits a new revision, so the same lifecycle path ' +
      "ends at a higher revision than the reference model's flat body, which is created paused or active directly",
    applies: (s) =>
      s.createdThroughDraft === true &&
      ['revision', 'finalRevision'].includes(s.kind) &&
      typeof s.expected === 'number' &&
      typeof s.observed === 'number' &&
      s.observed > s.expected,
  },
  {
    id: 'paused-slot-disposed',
    sentence:
      '`planned` → `skipped`	`misfire`	`scheduler`	misfire policy disposes this slot ' +
      '(e.g. overlap_forbid, paused, invalid)',
    because:
      'a slot that came due while its definition was paused is disposed by the misfire policy, not run once the ' +
      'definition is activated later; the first slot this engine runs is the first one due after activation',
    applies: (s) => {
      const active = activations(s);
      const kinds = ['occurrences', 'dispatchCount', 'projection', 'launchCount', 'occurrenceState'];
      if (active.size === 0 || !kinds.includes(s.kind)) return false;
      return s.seen.occurrences.every((o) => {
        const since = active.get(String(o.automationId));
        return since === undefined || String(o.scheduledFor) >= since;
      });
    },
  },
  {
    id: 'ambiguous-run-stays-running',
    sentence:
      'The daemon never records ambiguous on a run. Ambiguous evidence either settles the run failed or leaves it ' +
      'running with an ambiguous attempt while its occurrence waits in recovery_required; see Manual runs and health.',
    because:
      'the run stays running with its ambiguous attempt and the occurrence waits in recovery_required until ' +
      'occurrence.recover.v1 decides (ambiguous-never-auto-retried)',
    applies: (s) =>
      s.kind === 'runs' &&
      want(s).ambiguous === true &&
      s.seen.runs.some(
        (r) =>
          r.automationId === want(s).automationId &&
          r.state === RunState.running &&
          (s.seen.attemptStates.get(String(r.runId)) ?? []).at(-1) === AttemptState.ambiguous,
      ),
  },
  {
    id: 'failed-ordinary-run-is-held',
    sentence:
      'An ordinary run whose attempt failed with no automatic retry left stays running, held for an operator ' +
      'retry, until its deadline; it then settles failed.',
    because:
      "the run's attempt settled failed and the ordinary run is held for an operator attempt.retry.v1 until its " +
      'deadline, where the reference model settles it failed at once; held, it never reads as succeeded',
    applies: (s) =>
      ((s.kind === 'occurrences' && want(s).state === OccurrenceState.failed) ||
        (s.kind === 'runs' && want(s).status === RunState.failed)) &&
      s.seen.runs.some(
        (r) =>
          r.automationId === want(s).automationId &&
          r.state === RunState.running &&
          s.seen.heldRuns.includes(String(r.runId)) &&
          (s.seen.attemptStates.get(String(r.runId)) ?? []).at(-1) === AttemptState.failed,
      ),
  },
  {
    id: 'quarantine-is-not-an-occurrence-state',
    sentence:
      'States: planned, eligible, claimed, dispatching, running, recovering, recovery_required, succeeded ' +
      '(terminal), failed (terminal), cancelled (terminal), timed_out (terminal), skipped (terminal), superseded ' +
      '(terminal).',
    because:
      'quarantined is not an occurrence.v1 state: the occurrence settles failed and the automation is quarantined ' +
      '(definition.health.v1 quarantined: true)',
    applies: (s) =>
      s.kind === 'occurrences' &&
      typeof want(s).state === 'string' &&
      !OCCURRENCE_STATES.has(String(want(s).state)) &&
      s.seen.quarantined.includes(String(want(s).automationId)) &&
      s.seen.occurrences.some((o) => o.automationId === want(s).automationId && o.state === OccurrenceState.failed),
  },
  {
    id: 'retry-is-an-attempt',
    sentence:
      'retry-new-attempt: Retry creates a new attempt with attemptNumber incremented and priorDisposition set; ' +
      "the prior attempt's record is never rewritten.",
    because: 'the retries are attempts of one run, so the reference model counts as runs what are attempts here',
    applies: (s) => {
      const count = want(s).count;
      if (s.kind !== 'runs' || typeof count !== 'number' || count < 2) return false;
      const mine = s.seen.runs.filter((r) => r.automationId === want(s).automationId);
      return mine.length === 1 && mine[0]!.attemptCount === count;
    },
  },
  {
    id: 'quarantine-holds-new-work',
    sentence:
      '`claimed` → `planned`	`operator_retry`	`command_handler`	attempt.retry.v1 names the latest immutable failed ' +
      'attempt of an ordinary held run; original deadline remains open, fewer than ten attempts exist, quarantine is ' +
      'released, and no cancellation or stop ownership is unresolved; opens a new adopted attempt',
    because:
      'a retryable failure that exhausts the retry policy quarantines the automation, and no new work opens until ' +
      'the quarantine is released: the later run requests were refused, so there are fewer runs (and the doctor ' +
      'reports runs.quarantined rather than repeated failures)',
    applies: (s) =>
      ['runs', 'doctor'].includes(s.kind) &&
      s.seen.quarantined.length > 0 &&
      s.seen.refusedCodes.includes('ILLEGAL_TRANSITION') &&
      (s.kind === 'doctor' || (typeof want(s).count === 'number' && s.seen.runs.length < Number(want(s).count))),
  },
  {
    id: 'adoption-commits-with-the-claim',
    sentence:
      'adoption-before-side-effects: Command adoption commits before any consequential side effect is issued; ' +
      'a run is accepted (run.v1 accepted) before dispatch begins.',
    because:
      'occurrence.runNow.v1 commits the manual occurrence, its claim and its adoption in one transaction, so a ' +
      'crash before that commit leaves nothing durable: no planned occurrence, no run, no dispatch',
    applies: (s) =>
      crashedDuring(s, ['adoption']) &&
      s.kind === 'occurrences' &&
      want(s).state === OccurrenceState.planned &&
      s.seen.occurrences.every((o) => o.automationId !== want(s).automationId),
  },
  {
    id: 'timeout-settles-timed-out',
    sentence: '`running` → `timed_out`	`timeout`	`scheduler`	perRunMinutes elapsed without settled evidence',
    because:
      'the engine came back after the run deadline with no settled evidence, so the occurrence and run time out ' +
      '(timed_out) rather than fail on the lapsed lease',
    applies: (s) => {
      // A timed-out occurrence is not a missed one: the doctor counts slots collapsed or lapsed before launch.
      if (s.expectation === 'doctor.occurrences.missed-occurrence')
        return s.seen.occurrences.some((o) => o.state === OccurrenceState.timed_out);
      if (!['occurrences', 'runs'].includes(s.kind)) return false;
      if ((want(s).state ?? want(s).status) !== OccurrenceState.failed) return false;
      const mine = (s.kind === 'runs' ? s.seen.runs : s.seen.occurrences).filter(
        (x) => x.automationId === want(s).automationId,
      );
      return mine.length > 0 && mine.every((x) => x.state === OccurrenceState.timed_out);
    },
  },
  {
    id: 'events-commit-with-transitions',
    sentence:
      'adoption-before-side-effects: Command adoption commits before any consequential side effect is issued; ' +
      'a run is accepted (run.v1 accepted) before dispatch begins.',
    because:
      "each transition's event commits with the transition, before the launch it precedes, so a crash after a pass " +
      "loses none of that pass's events: the replay holds the reference sequence and, before it, the events the " +
      "reference model's crashed pass lost",
    applies: (s) =>
      s.kind === 'replay' &&
      (s.seen.crashes ?? []).length > 0 &&
      Array.isArray(s.expected) &&
      Array.isArray(s.observed) &&
      subsequence(s.expected, s.observed),
  },
  {
    id: 'operator-retry-is-a-command',
    sentence:
      '`running` → `planned`	`operator_retry`	`command_handler`	attempt.retry.v1 names the latest immutable failed ' +
      'attempt of an ordinary held run; original deadline remains open, fewer than ten attempts exist, quarantine is ' +
      'released, and no cancellation or stop ownership is unresolved; opens a new adopted attempt',
    because:
      'this engine implements attempt.retry.v1, so it judges the request on its merits (a typed domain refusal) ' +
      'instead of refusing the command as unsupported',
    applies: (s) => evaluatedContractCommand(s, /\battempt\.retry\.v1\b/),
  },
  {
    id: 'cancellation-is-a-command',
    sentence:
      'cancellation-is-a-request: Cancellation is a request until acknowledged or reconciled; CANCEL_PENDING is ' +
      'returned while a running attempt has not acknowledged, and the occurrence settles cancelled only after ' +
      'acknowledgment or reconciliation.',
    because:
      'this engine implements the cancellation commands, so it judges the request on its merits (a typed domain ' +
      'refusal) instead of refusing the command as unsupported',
    applies: (s) => evaluatedContractCommand(s, /\b(run|occurrence|attempt)\.cancel\.v1\b/),
  },
  {
    id: 'recovery-required-attempt-is-ambiguous',
    sentence:
      'The daemon never records ambiguous on a run. Ambiguous evidence either settles the run failed or leaves it ' +
      'running with an ambiguous attempt while its occurrence waits in recovery_required; see Manual runs and health.',
    because:
      'every path of this engine to recovery_required settles the attempt ambiguous (dispatch_unconfirmed after the ' +
      "lease, evidence_lost when the session vanished), terminal for the attempt, where the reference model's " +
      'attempt stays unsettled; the run stays running and nothing settles on the session until occurrence.recover.v1',
    applies: (s) =>
      s.kind === 'attemptState' &&
      s.observed === AttemptState.ambiguous &&
      UNSETTLED_ATTEMPT_STATES.has(String(s.expected)) &&
      s.seen.occurrences.some(
        (o) =>
          o.state === OccurrenceState.recovery_required &&
          s.seen.runs.some(
            (r) =>
              r.automationId === o.automationId &&
              r.state === RunState.running &&
              (s.seen.attemptStates.get(String(r.runId)) ?? []).at(-1) === AttemptState.ambiguous,
          ),
      ),
  },
  {
    id: 'cancel-pending-until-acknowledged',
    sentence:
      'cancellation-is-a-request: Cancellation is a request until acknowledged or reconciled; CANCEL_PENDING is ' +
      'returned while a running attempt has not acknowledged, and the occurrence settles cancelled only after ' +
      'acknowledgment or reconciliation.',
    because:
      'the request is answered CANCEL_PENDING and the occurrence settles cancelled when the runtime acknowledges the ' +
      "stop, at the engine's next pass; acknowledged before the run's deadline, the cancellation decides the " +
      'occurrence, run and attempt, so a later timeout finds nothing left to time out and a repeated request ' +
      'answers cancelled',
    applies: (s) =>
      acknowledgedBeforeDeadline(s) &&
      ((s.expected === 'cancelled' && s.observed === 'cancel_pending') ||
        (['cancelled', 'deferred'].includes(String(s.observed)) && s.expected !== s.observed)),
  },
  {
    id: 'runtime-confirmed-launch',
    sentence:
      '`dispatching` → `running`\t`runtime_started`\t`dispatcher`\truntime acknowledged the session start ' +
      '(attempt started)',
    because:
      'the runtime acknowledged the launch (the attempt started and its session is being observed), so no launch ' +
      'was left unconfirmed: the occurrence is running instead of waiting for operator recovery',
    applies: (s) =>
      s.expected === OccurrenceState.recovery_required &&
      s.observed === OccurrenceState.running &&
      s.seen.occurrences.some((o) => o.state === OccurrenceState.running) &&
      s.seen.attemptStates.size > 0 &&
      [...s.seen.attemptStates.values()].every((states) => states.every((a) => CONFIRMED_ATTEMPT.has(a))),
  },
  ...SITUATIONS_UPSTREAM_ALONE_COVERS,
];

/** Attempt states of a session the runtime acknowledged starting and that still runs. */
const CONFIRMED_ATTEMPT: ReadonlySet<string> = new Set([AttemptState.started, AttemptState.observing]);

/** A cancelled occurrence the engine saw whose runtime acknowledged the stop before the run's deadline. */
function acknowledgedBeforeDeadline(s: Situation): boolean {
  return s.seen.occurrences.some((o) => {
    const acknowledgedAt = (o.cancellation as { acknowledgedAt?: string } | undefined)?.acknowledgedAt;
    return (
      o.state === OccurrenceState.cancelled &&
      acknowledgedAt !== undefined &&
      (typeof o.deadlineAt !== 'string' || acknowledgedAt <= o.deadlineAt)
    );
  });
}

/** The first contract rule that decides this situation, if any does. */
export function decidingRule(situation: Situation): ContractRule | undefined {
  return CONTRACT_RULES.find((rule) => rule.applies(situation));
}
