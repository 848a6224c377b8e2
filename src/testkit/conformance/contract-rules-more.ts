import { AttemptState, OccurrenceState, RunState } from '../../../machines/index.js';
import type { ContractRule, Situation } from './contract-rule-types.js';

const want = (s: Situation) => (s.expected ?? {}) as Record<string, unknown>;

/**
 * Rules for three situations the shared corpus does not exercise (a lapsed claim, a cancel at the deadline instant,
 * evidence lost after a side effect), each stated in contract facts; see docs/conformance.md.
 */
export const SITUATIONS_UPSTREAM_ALONE_COVERS: readonly ContractRule[] = [
  {
    id: 'lapsed-claim-dispatched-under-fence',
    sentence:
      '`claimed` → `dispatching`\t`attempt_adopted`\t`dispatcher`\tattempt created with adoptionKey; ' +
      'fence generation matches the claim',
    because:
      "the claim's lease lapsed while its engine was down, before anything was launched under it; a live owner " +
      'renews its leases, so a lapsed one means the owner died, and the engine that found the claim adopted and ' +
      "dispatched it late under the claim's own fence generation (one dispatch for the fence) instead of taking " +
      'lease_expired → recovering → failed',
    applies: (s) =>
      (s.seen.crashes ?? []).length > 0 &&
      expectsNoWorkDone(s) &&
      s.seen.occurrences.some(
        (o) => (want(s).automationId === undefined || o.automationId === want(s).automationId) && lateUnderFence(s, o),
      ),
  },
  {
    id: 'committed-cancel-owns-the-stop',
    sentence:
      '`running` → `cancelled`\t`cancel_acknowledged`\t`command_handler`\tcancellation acknowledged by runtime or ' +
      'reconciled by recovery',
    because:
      "a cancellation committed no later than the run's deadline owns the session's stop; the runtime acknowledged " +
      'it, so the occurrence settled cancelled and the timeout found nothing left to time out',
    applies: (s) =>
      ['occurrences', 'runs', 'occurrenceState'].includes(s.kind) &&
      [OccurrenceState.timed_out, OccurrenceState.failed].some(
        (x) => x === (want(s).state ?? want(s).status ?? s.expected),
      ) &&
      s.seen.occurrences.some((o) => {
        const c = o.cancellation as { requestedAt?: string; acknowledgedAt?: string } | undefined;
        return (
          (want(s).automationId === undefined || o.automationId === want(s).automationId) &&
          o.state === OccurrenceState.cancelled &&
          c?.requestedAt !== undefined &&
          c.acknowledgedAt !== undefined
        );
      }),
  },
  {
    id: 'lost-evidence-awaits-operator-recovery',
    sentence:
      '`running` → `recovery_required`\t`evidence_lost`\t`scheduler`\truntime lost mid-run: outcome cannot be ' +
      'determined automatically',
    because:
      'the runtime was lost after the session started, so side effects cannot be ruled out: the occurrence waits in ' +
      'recovery_required (its run running, its attempt ambiguous) until occurrence.recover.v1 decides, and ' +
      'failed_deterministic then settles it failed; it never settles failed on its own',
    applies: (s) =>
      ['occurrences', 'occurrenceState'].includes(s.kind) &&
      (want(s).state ?? s.expected) === OccurrenceState.failed &&
      s.seen.occurrences.some(
        (o) =>
          (want(s).automationId === undefined || o.automationId === want(s).automationId) &&
          o.state === OccurrenceState.recovery_required &&
          s.seen.runs.some(
            (r) =>
              r.runId === o.activeRunRef &&
              r.state === RunState.running &&
              (s.seen.attemptStates.get(String(r.runId)) ?? []).at(-1) === AttemptState.ambiguous,
          ),
      ),
  },
];

/** What the lease_expired path leaves behind is expected: a failed occurrence, no run, or fewer dispatches. */
function expectsNoWorkDone(s: Situation): boolean {
  if (s.kind === 'occurrences') return want(s).state === OccurrenceState.failed;
  if (s.kind === 'occurrenceState') return s.expected === OccurrenceState.failed;
  if (s.kind === 'runs') return Array.isArray(s.expected) && s.expected.length === 0;
  // One launch for each claim dispatched late, and no other: a second launch is no contract rule's.
  if (s.kind === 'dispatchCount' || s.kind === 'launchCount')
    return (
      typeof s.expected === 'number' &&
      s.observed === s.expected + s.seen.occurrences.filter((o) => lateUnderFence(s, o)).length
    );
  return false;
}

/**
 * The occurrence's first attempt was opened after its claim's lease had lapsed, under the claim's fence generation,
 * and it is the only attempt of that fence: the claim was dispatched late, once, instead of expiring.
 */
function lateUnderFence(s: Situation, o: Record<string, unknown>): boolean {
  const fence = o.fence as { generation?: number; leaseExpiresAt?: string } | undefined;
  if (fence?.leaseExpiresAt === undefined || o.activeRunRef === undefined) return false;
  const underFence = (s.seen.attempts ?? []).filter(
    (a) =>
      a.occurrenceId === o.occurrenceId &&
      (a.dispatchFence as { occurrenceFenceGeneration?: number } | undefined)?.occurrenceFenceGeneration ===
        fence.generation,
  );
  return (
    underFence.length === 1 &&
    underFence[0]!.attemptNumber === 1 &&
    typeof underFence[0]!.openedAt === 'string' &&
    underFence[0]!.openedAt > fence.leaseExpiresAt
  );
}
