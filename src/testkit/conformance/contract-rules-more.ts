import { AttemptState, OccurrenceState, RunState } from '../../../machines/index.js';
import type { ContractRule, Situation } from './contract-rule-types.js';

const want = (s: Situation) => (s.expected ?? {}) as Record<string, unknown>;

/**
 * Rules for three situations the shared corpus does not exercise (a lapsed claim, a cancel at the deadline instant,
 * evidence lost after a side effect), each stated in contract facts; see docs/pending/specproof.md.
 */
export const SITUATIONS_UPSTREAM_ALONE_COVERS: readonly ContractRule[] = [
  {
    id: 'lapsed-claim-fails',
    sentence:
      '`claimed` → `recovering`\t`lease_expired`\t`scheduler`\tleaseExpiresAt < now and no runtime evidence recorded',
    because:
      "the claim's lease lapsed before anything was adopted under it, so the scheduler took lease_expired → " +
      'recovering and, nothing having been launched, recovery_determined → failed; a lapsed fence is never ' +
      'dispatched late',
    applies: (s) =>
      ['occurrences', 'runs', 'dispatchCount', 'launchCount', 'occurrenceState'].includes(s.kind) &&
      s.expected !== OccurrenceState.failed &&
      want(s).state !== OccurrenceState.failed &&
      s.seen.occurrences.some(
        (o) =>
          (want(s).automationId === undefined || o.automationId === want(s).automationId) &&
          o.state === OccurrenceState.failed &&
          o.activeRunRef === undefined &&
          (o.recovery as { evidence?: string } | undefined)?.evidence === 'lease_expired',
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
