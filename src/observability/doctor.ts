import { redactPublished } from '../contract/redaction.js';
import { DeliveryState } from '../../machines/extension-states.js';
import { authorityFindings, unresolvedRefusals } from './doctor-authority.js';
import { FINDINGS, SURFACE, type FindingCode, type Severity } from './doctor-steps.js';
import { AttemptState, DefinitionState, OccurrenceState, RunState } from '../../machines/index.js';
import type { DoctorView, OccurrenceView, RunView } from './doctor-view.js';
import { busyAutomations, WAITING, waitsAtLimit, waitsItsTurn } from './doctor-waiting.js';

/** What only a running scheduler (the daemon) knows; everything else the doctor reads from the store. */
export interface SchedulerFacts {
  /**
   * Whether a scheduler leads this store. Absent (the CLI opened the store itself): inferred from the owner
   * leases, so a store no live engine holds has no leader.
   */
  leader?: { isLeader: boolean; leaderId: string | null; replacedByGeneration?: number };
  lastPassAt?: string | null;
  /** The last pass that completed with no failed step. */
  lastSuccessfulPassAt?: string | null;
  lastPassDurationMs?: number | null;
  /** When the scheduler started: one that has not passed cleanly within the stale window since is stale too. */
  startedAt?: string;
  /** Live changefeed subscribers and how many feed events each has yet to receive. */
  subscribers?: Array<{ subscriberId: string; position: number; behind: number; stream?: string; sequence?: number }>;
}

export interface DoctorFinding {
  code: FindingCode;
  severity: Severity;
  subjectIds: string[];
  observed: string;
  safeNextSteps: string[];
}

/** A diagnostics.doctor.v1 report. */
export interface DoctorReport {
  doctorVersion: 1;
  generatedAt: string;
  ok: boolean;
  leadership: {
    isLeader: boolean;
    leaderId: string | null;
    lastSuccessfulPassAt: string | null;
    lastPassDurationMs: number | null;
  };
  store: {
    schemaVersion: number | null;
    integrity: 'ok' | 'degraded' | 'unreadable' | 'unknown';
    migrationState: null;
  };
  counts: Record<'due' | 'eligible' | 'claimed' | 'running' | 'recoveryRequired' | 'quarantined', number>;
  findings: DoctorFinding[];
  safeNextSteps: string[];
  surface: Record<string, string>;
}

/** Upstream's thresholds: two 60 s cadences for staleness and backlog, "a few" events for cursor lag. */
export const STALE_PASS_MS = 120_000;
export const DUE_BACKLOG_MS = 120_000;
export const CURSOR_LAG_EVENTS = 3;
export const REPEATED_FAILURES = 3;
/** Subject ids listed per finding; the observation always gives the full count. */
const SUBJECTS_SHOWN = 50;

const LEASED = new Set<string>([OccurrenceState.claimed, OccurrenceState.dispatching, OccurrenceState.running]);
const SETTLED_FAILED = new Set<string>([
  OccurrenceState.failed,
  OccurrenceState.timed_out,
  OccurrenceState.cancelled,
  OccurrenceState.skipped,
]);

/** Records a finding; `steps` replaces the code's generic next steps with exact ones for its subjects. */
type Push = (code: FindingCode, subjectIds: string[], observed: string, steps?: string[]) => void;
interface Judged {
  view: DoctorView;
  facts: SchedulerFacts;
  now: number;
  leader: { isLeader: boolean; leaderId: string | null; replacedByGeneration?: number };
}

const age = (now: number, iso: string) => Math.round((now - Date.parse(iso)) / 1000);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function leaderOf(view: DoctorView, facts: SchedulerFacts, now: number): Judged['leader'] {
  if (facts.leader !== undefined) return facts.leader;
  const live = view.ownerLeases
    .filter((l) => Date.parse(l.expiresAt) > now)
    .sort((a, b) => (a.expiresAt < b.expiresAt ? 1 : -1));
  return live.length === 0 ? { isLeader: false, leaderId: null } : { isLeader: true, leaderId: live[0]!.instanceId };
}

function judgeScheduler({ view, facts, now, leader }: Judged, push: Push): void {
  const active = view.definitions.filter((d) => d.state === DefinitionState.active);
  if (!leader.isLeader) {
    // A replaced scheduler names its successor's generation: the store is led, just not by this process.
    const replaced =
      leader.replacedByGeneration === undefined
        ? ''
        : `; generation ${leader.replacedByGeneration} of this engine id replaced this scheduler`;
    if (active.length > 0)
      push(
        'scheduler.no-leader',
        [],
        `no scheduler holds the store; ${plural(active.length, 'active automation')} wait${replaced}`,
      );
    return;
  }
  const since = facts.lastSuccessfulPassAt ?? facts.startedAt;
  if (since !== undefined && since !== null && now - Date.parse(since) > STALE_PASS_MS) {
    const what = facts.lastSuccessfulPassAt == null ? 'no clean pass since the scheduler started' : 'last clean pass';
    push('scheduler.stale-pass', [], `${what} ${age(now, since)} s ago`);
  }
  // Lag needs a pass that had its chance: one that ran after the slot came due and did not plan it.
  const lastPass = facts.lastPassAt == null ? undefined : Date.parse(facts.lastPassAt);
  if (lastPass === undefined) return;
  const lagging = active.filter(
    (d) =>
      !d.quarantined &&
      d.nextUnplannedSlot !== null &&
      Date.parse(d.nextUnplannedSlot) < lastPass &&
      !(d.waitsWhileBusy === true && busyAutomations(view).has(d.automationId)),
  );
  if (lagging.length > 0) {
    const oldest = lagging.map((d) => d.nextUnplannedSlot!).sort()[0]!;
    push(
      'scheduler.planning-lag',
      lagging.map((d) => d.automationId),
      `${plural(lagging.length, 'automation')} with a due slot a pass did not plan; ` +
        `oldest due ${age(now, oldest)} s ago`,
    );
  }
}

function judgeOccurrences({ view, now, leader }: Judged, push: Push): void {
  const late = view.occurrences.filter(
    (o) =>
      WAITING.has(o.state) &&
      now - Date.parse(o.scheduledFor) > DUE_BACKLOG_MS &&
      (o.notBefore === undefined || Date.parse(o.notBefore) <= now) &&
      !waitsItsTurn(view, o),
  );
  const backlog = late.filter((o) => !waitsAtLimit(view, o));
  if (backlog.length > 0) {
    const oldest = backlog.map((o) => o.scheduledFor).sort()[0]!;
    const held = late.length - backlog.length;
    push(
      'occurrences.due-backlog',
      ids(backlog),
      `${plural(backlog.length, 'occurrence')} due and not claimed; oldest due ${age(now, oldest)} s ago` +
        (held > 0 ? `; ${held} more wait at limits, by policy (coven-automata limits show)` : ''),
    );
  }
  // A lapsed claim matters only when its owner is gone too: a live engine's owner lease keeps its claims.
  const liveOwners = new Set(view.ownerLeases.filter((l) => Date.parse(l.expiresAt) > now).map((l) => l.instanceId));
  if (leader.leaderId !== null) liveOwners.add(leader.leaderId);
  const stale = view.occurrences.filter(
    (o) =>
      LEASED.has(o.state) &&
      o.leaseExpiresAt !== null &&
      Date.parse(o.leaseExpiresAt) < now &&
      (o.claimedBy === null || !liveOwners.has(o.claimedBy)),
  );
  if (stale.length > 0)
    push(
      'occurrences.stale-lease',
      ids(stale),
      `${plural(stale.length, 'occurrence')} hold a lease whose owner is gone`,
    );
  const recovery = view.occurrences.filter((o) => o.state === OccurrenceState.recovery_required);
  if (recovery.length > 0)
    push(
      'occurrences.recovery-required',
      ids(recovery),
      `${plural(recovery.length, 'occurrence')} wait for an operator determination`,
    );
  const missed = view.occurrences.filter(
    (o) =>
      (o.recoveryEvidence === 'lease_expired' && SETTLED_FAILED.has(o.state)) ||
      o.misfireDisposition === 'collapsed_to_latest',
  );
  if (missed.length > 0)
    push(
      'occurrences.missed-occurrence',
      ids(missed),
      `${plural(missed.length, 'occurrence')} missed work: slots collapsed by misfire, or a lease lapsed and ` +
        'recovery settled it',
    );
}

const ids = (items: OccurrenceView[]) => items.map((o) => o.occurrenceId);

/** When a run's outcome was known: its end, or for a run held after a failed attempt, when the hold opened. */
const decidedAt = (r: RunView): string | undefined => r.finishedAt ?? r.held?.since ?? undefined;

/**
 * Failed runs since the last success, newest first: settled ones, and held ones (their attempt failed; the
 * contract keeps them running until an operator retries). A cancelled run neither counts nor resets.
 */
function consecutiveFailures(runs: RunView[]): number {
  const decided = runs
    .filter((r) => decidedAt(r) !== undefined)
    .sort((a, b) => (decidedAt(a)! < decidedAt(b)! ? 1 : -1));
  let count = 0;
  for (const run of decided) {
    if (run.state === RunState.succeeded) break;
    if (run.state !== RunState.cancelled) count += 1;
  }
  return count;
}

/** How many held runs the held finding names exact commands for. */
const HELD_SHOWN = 3;

/**
 * Runs held for an operator retry, each with until when and how its attempt failed, and the exact commands that
 * show its output and end the hold. diagnostics.doctor.v1's finding codes are a closed set, and a held run is a
 * failing run, so this finding is reported as `runs.repeated-failures` naming runs rather than automations.
 */
function judgeHeld({ view }: Judged, push: Push): void {
  const held = view.runs.filter((r) => r.held !== undefined);
  if (held.length === 0) return;
  const each = held.map(
    (r) =>
      `${r.runId} (${r.automationId}) until ${r.held!.until ?? 'an operator acts'}` +
      (r.currentAttemptFailure === undefined ? '' : `: ${r.currentAttemptFailure}`),
  );
  const steps = held
    .slice(0, HELD_SHOWN)
    .flatMap((r) => [
      `read what it printed: coven-automata logs ${r.runId}`,
      `once the cause is fixed, retry it: coven-automata retry ${r.runId}`,
      `or give it up (else it times out at its deadline): coven-automata cancel ${r.occurrenceId}`,
    ]);
  push(
    'runs.repeated-failures',
    held.map((r) => r.runId),
    `${plural(held.length, 'run')} failed and held for operator retry: ${each.join('; ')}`,
    steps,
  );
}

function judgeRuns(judged: Judged, push: Push): void {
  const { view } = judged;
  judgeHeld(judged, push);
  const byAutomation = new Map<string, RunView[]>();
  for (const run of view.runs) byAutomation.set(run.automationId, [...(byAutomation.get(run.automationId) ?? []), run]);
  const failing = [...byAutomation].map(([id, runs]) => [id, consecutiveFailures(runs)] as const);
  const repeated = failing.filter(([, n]) => n >= REPEATED_FAILURES);
  if (repeated.length > 0)
    push(
      'runs.repeated-failures',
      repeated.map(([id]) => id),
      repeated.map(([id, n]) => `${id}: ${n} consecutive failed runs`).join('; '),
    );
  const quarantined = view.definitions.filter((d) => d.quarantined);
  if (quarantined.length > 0)
    push(
      'runs.quarantined',
      quarantined.map((d) => d.automationId),
      `${plural(quarantined.length, 'automation')} quarantined after exhausting retries`,
    );
  const ambiguous = view.runs.filter(
    (r) =>
      r.state === RunState.ambiguous ||
      (r.state === RunState.running && r.currentAttemptState === AttemptState.ambiguous),
  );
  if (ambiguous.length > 0)
    push(
      'runs.ambiguous-outcome',
      ambiguous.map((r) => r.runId),
      `${plural(ambiguous.length, 'run')} lost after a possible side effect; the outcome is unknown`,
    );
  const cancelled = view.runs.filter((r) => r.state === RunState.cancelled);
  if (cancelled.length > 0)
    push(
      'runs.cancelled',
      cancelled.map((r) => r.runId),
      `${plural(cancelled.length, 'cancelled run')}`,
    );
}

/** Refusals of live automations that still hold their work, and bindings whose familiar went stale. */
function judgeAuthority({ view }: Judged, push: Push): void {
  const live = new Set(view.definitions.map((d) => d.automationId));
  const refused = unresolvedRefusals(view.occurrences).filter((o) => live.has(o.automationId));
  for (const f of authorityFindings(refused, view.staleBindings)) push(f.code, f.subjectIds, f.observed);
}

/** Where a subscriber stands: its feed position, or its sequence on the one stream it follows. */
const cursorText = (s: { position: number; stream?: string; sequence?: number }) =>
  s.stream === undefined ? `at position ${s.position}` : `of ${s.stream} at sequence ${s.sequence ?? -1}`;

function judgeRecords({ view, facts }: Judged, push: Push): void {
  const unverified = view.receipts.filter((r) => !r.verified);
  if (unverified.length > 0)
    push(
      'receipts.unverified',
      unverified.map((r) => r.receiptId),
      `${plural(unverified.length, 'receipt')} whose integrity digest does not verify`,
    );
  if (view.undelivered.length > 0) {
    const ambiguous = view.undelivered.filter((d) => d.state === DeliveryState.ambiguous).length;
    push(
      'delivery.commit-failures',
      view.undelivered.map((d) => d.runId),
      `${plural(view.undelivered.length, 'run')} whose output delivery did not commit` +
        (ambiguous > 0 ? ` (${ambiguous} interrupted while pending, ambiguous)` : '') +
        '; their attempts failed, so none reads as succeeded',
    );
  }
  const lagging = (facts.subscribers ?? []).filter((s) => s.behind > CURSOR_LAG_EVENTS);
  if (lagging.length > 0)
    push(
      'events.cursor-lag',
      [],
      lagging.map((s) => `subscriber ${s.subscriberId} ${cursorText(s)} is ${s.behind} events behind`).join('; '),
    );
  if (view.retentionBacklog.length > 0) {
    const oldest = view.retentionBacklog.map((e) => e.settledAt).sort()[0]!;
    push(
      'disk.retention-pressure',
      view.retentionBacklog.map((e) => e.occurrenceId),
      `${plural(view.retentionBacklog.length, 'settled occurrence')} outlived their retention window and are still ` +
        `stored; oldest settled ${oldest}`,
    );
  }
}

function countsOf(view: DoctorView, now: number): DoctorReport['counts'] {
  const o = view.occurrences;
  const n = (test: (x: OccurrenceView) => boolean) => o.filter(test).length;
  return {
    due: n((x) => WAITING.has(x.state) && Date.parse(x.scheduledFor) <= now),
    eligible: n((x) => x.state === OccurrenceState.eligible),
    claimed: n((x) => x.state === OccurrenceState.claimed || x.state === OccurrenceState.dispatching),
    running: n((x) => x.state === OccurrenceState.running),
    recoveryRequired: n((x) => x.state === OccurrenceState.recovery_required),
    quarantined: view.definitions.filter((d) => d.quarantined).length,
  };
}

/**
 * The doctor: a diagnostics.doctor.v1 report from a store view, the instant, and what the scheduler knows. Pure:
 * the same inputs give the same report, so every finding can be produced from a scripted store.
 *
 * @example
 * ```ts
 * const report = diagnose(view, new Date(), { leader: { isLeader: true, leaderId: 'engine-1' } });
 * if (!report.ok) process.exitCode = 1;
 * ```
 */
export function diagnose(view: DoctorView, now: Date, facts: SchedulerFacts = {}): DoctorReport {
  const at = now.getTime();
  const findings: DoctorFinding[] = [];
  const push: Push = (code, subjectIds, observed, steps) =>
    findings.push({
      code,
      severity: FINDINGS[code].severity,
      subjectIds: subjectIds.slice(0, SUBJECTS_SHOWN),
      observed,
      safeNextSteps: [...(steps ?? FINDINGS[code].steps)],
    });
  const judged: Judged = { view, facts, now: at, leader: leaderOf(view, facts, at) };
  for (const judge of [judgeScheduler, judgeOccurrences, judgeRuns, judgeAuthority, judgeRecords]) judge(judged, push);
  // A published view: findings quote stored reasons, which must not carry prompts, absolute paths or credentials.
  return redactPublished({
    doctorVersion: 1,
    generatedAt: now.toISOString(),
    ok: findings.every((f) => f.severity !== 'error'),
    leadership: {
      isLeader: judged.leader.isLeader,
      leaderId: judged.leader.leaderId,
      lastSuccessfulPassAt: facts.lastSuccessfulPassAt ?? null,
      lastPassDurationMs: facts.lastPassDurationMs == null ? null : Math.round(facts.lastPassDurationMs),
    },
    store: { schemaVersion: null, integrity: 'ok', migrationState: null },
    counts: countsOf(view, at),
    findings,
    safeNextSteps: [...new Set(findings.flatMap((f) => f.safeNextSteps))],
    surface: { ...SURFACE },
  });
}
