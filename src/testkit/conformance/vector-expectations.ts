import {
  ATTEMPT_TERMINAL_STATES,
  OCCURRENCE_TERMINAL_STATES,
  OccurrenceState,
  RUN_TERMINAL_STATES,
  RunState,
} from '../../../machines/index.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { verifyIntegrity } from '../../contract/digest.js';
import type { EventEnvelope } from '../../changefeed/event-envelope.js';
import { QuarantineState } from '../../../machines/extension-states.js';
import { quarantineView } from '../../domain/quarantine.js';
import { KINDS, renderOccurrence, renderRun, type OccurrenceRecord, type RunRecord } from '../../domain/records.js';
import type { SimulatedRuntime } from '../../runtime/simulated-runtime.js';
import type { MemoryStore } from '../../store/memory-store.js';
import { KNOWN_DIFFERENCES, UNPRODUCED } from './known-differences.js';
import type { ConformanceVector, ExpectationResult } from './vector-format.js';

/** The terminal states of the occurrence, run and attempt machines: the feed names an entity settled on any. */
const TERMINAL: ReadonlySet<string> = new Set<string>([
  ...OCCURRENCE_TERMINAL_STATES,
  ...RUN_TERMINAL_STATES,
  ...ATTEMPT_TERMINAL_STATES,
]);

/** What a vector's expectations are judged against once its operations have run. */
export interface JudgedRun {
  store: MemoryStore;
  runtime: SimulatedRuntime;
  /** Feed length after setup: projections count the definitions' creation and what the scenario itself caused. */
  setupEnd: number;
  refusals: Map<string, CommandResponse>;
  notes: string[];
  unsupportedOps: string[];
}

/** The reference model's event names, projected from the contract's changefeed. */
function projectEvent(event: EventEnvelope): string | undefined {
  const p = event.payload as { from?: string; to?: string };
  switch (event.kind) {
    case 'definition.created':
    case 'definition.imported':
      return 'definition.created';
    case 'definition.revised':
    case 'definition.activated':
    case 'definition.paused':
    case 'definition.disabled':
      return 'definition.updated';
    case 'occurrence.transitioned':
      if (p.from === 'none') return 'occurrence.planned';
      if (p.to === OccurrenceState.claimed) return 'occurrence.claimed';
      return TERMINAL.has(p.to ?? '') ? 'occurrence.settled' : undefined;
    case 'run.transitioned':
      if (p.from === RunState.accepted && p.to === RunState.running) return 'run.started';
      return TERMINAL.has(p.to ?? '') ? 'run.finished' : undefined;
    case 'receipt.recorded':
      return 'receipt.sealed';
    default:
      return undefined;
  }
}

async function observe(run: JudgedRun) {
  const occurrences = (
    (await run.store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[]
  ).map(
    (o) =>
      ({
        ...renderOccurrence(o),
        attempt: (o.data.snapshot.context as { attemptCount: number }).attemptCount,
      }) as Record<string, unknown>,
  );
  const runs = ((await run.store.read((r) => r.list<RunRecord['data']>(KINDS.run))) as RunRecord[]).map(renderRun);
  const receipts = (await run.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt))).map((r) => r.data);
  const feed = (await run.store.read((r) => r.readFeed<EventEnvelope>())).map((e) => e.data);
  const creations = feed.filter((e) => e.kind === 'definition.imported' || e.kind === 'definition.created');
  const scenario = feed.slice(run.setupEnd);
  const projected = [...creations, ...scenario].map(projectEvent).filter((k): k is string => k !== undefined);
  const quarantined = (await run.store.read((r) => r.list(KINDS.quarantine)))
    .filter((q) => quarantineView(q).state === QuarantineState.quarantined)
    .map((q) => q.id);
  return { occurrences, runs, receipts, projected, quarantined };
}

type Seen = Awaited<ReturnType<typeof observe>>;
type Expected = ConformanceVector['expected'];
type Push = (expectation: string, ok: boolean, expected: unknown, observed: unknown) => void;

function matches(actual: Record<string, unknown>, expected: Record<string, unknown>, ignore: string[]): boolean {
  return Object.entries(expected).every(([k, v]) => ignore.includes(k) || actual[k] === v);
}

/** Records one expectation: passed, a known difference, unsupported (it follows from an unsupported op), or failed. */
function recorder(vectorId: string, unsupported: string[], results: ExpectationResult[]): Push {
  return (expectation, ok, expected, observed) => {
    const known = KNOWN_DIFFERENCES[`${vectorId}#${expectation}`];
    if (ok) results.push({ expectation, status: 'pass' });
    else if (known !== undefined)
      results.push({ expectation, status: known.status, expected, observed, reason: known.reason });
    // An expectation that follows from an op this engine cannot perform is unsupported, not failed.
    else if (unsupported.length > 0)
      results.push({
        expectation,
        status: 'unsupported',
        expected,
        observed,
        reason: `depends on ${unsupported.join(', ')}, which this engine does not support`,
      });
    else results.push({ expectation, status: 'fail', expected, observed });
  };
}

function checkOccurrences(e: Expected, seen: Seen, push: Push): void {
  if (Array.isArray(e.occurrences)) {
    for (const [i, want] of (e.occurrences as Array<Record<string, unknown>>).entries()) {
      const ignore = ['failureReasonMatches'];
      const found = seen.occurrences.find((o) => matches(o as Record<string, unknown>, want, ignore));
      const reason = want.failureReasonMatches as string | undefined;
      const ok =
        found !== undefined &&
        (reason === undefined || String(found.stateReason).toLowerCase().includes(reason.toLowerCase()));
      push(
        `occurrences[${i}]`,
        ok,
        want,
        seen.occurrences.map((o) => ({
          scheduledFor: o.scheduledFor,
          state: o.state,
          attempt: o.attempt,
          stateReason: o.stateReason,
        })),
      );
    }
  }
}

function checkRuns(e: Expected, seen: Seen, push: Push): void {
  if (Array.isArray(e.runs)) {
    const runs = e.runs as Array<Record<string, unknown>>;
    if (runs.length === 0) push('runs', seen.runs.length === 0, [], seen.runs.length);
    for (const [i, want] of runs.entries()) {
      const mine = seen.runs.filter(
        (r) => r.automationId === want.automationId && (want.status === undefined || r.state === want.status),
      );
      const count = want.count as number | undefined;
      push(
        `runs[${i}]`,
        count === undefined ? mine.length > 0 : mine.length === count,
        want,
        seen.runs.map((r) => ({ state: r.state, attemptCount: r.attemptCount })),
      );
    }
  }
}

/** A refusal's code is judged; its wording differing from the reference model's is only noted. */
function checkRefusals(e: Expected, run: JudgedRun, push: Push): void {
  if (Array.isArray(e.refusals)) {
    for (const want of e.refusals as Array<{ refusalId: string; reasonMatches: string }>) {
      const refusal = run.refusals.get(want.refusalId);
      push(`refusals.${want.refusalId}`, refusal !== undefined, want, 'committed');
      // The refusal's code is contract; its wording belongs to the reference model and is only reported.
      if (refusal !== undefined && !(refusal.error?.message ?? '').includes(want.reasonMatches)) {
        const answer =
          refusal.outcome === 'replayed'
            ? 'replayed (the first outcome, nothing re-executed)'
            : `${String(refusal.error?.code)}: ${String(refusal.error?.message)}`;
        run.notes.push(`${want.refusalId} refused as ${answer}; reference wording "${want.reasonMatches}"`);
      }
    }
  }
}

function checkReceiptsAndFeed(e: Expected, seen: Seen, push: Push): void {
  if (e.receipts !== undefined) {
    const want = e.receipts as { count?: number; allVerify?: boolean; outcomes?: string[] };
    const outcomes = seen.receipts.map((r) => (r.outcome as { disposition: string }).disposition).sort();
    const ok =
      (want.count === undefined || seen.receipts.length === want.count) &&
      (want.allVerify !== true || seen.receipts.every((r) => verifyIntegrity(r).valid)) &&
      (want.outcomes === undefined || JSON.stringify(outcomes) === JSON.stringify([...want.outcomes].sort()));
    push('receipts', ok, want, { count: seen.receipts.length, outcomes });
  }
  if (e.projection !== undefined) {
    const want = e.projection as Record<string, number>;
    const counts: Record<string, number> = { eventCount: seen.projected.length };
    for (const k of seen.projected) counts[k] = (counts[k] ?? 0) + 1;
    push(
      'projection',
      Object.entries(want).every(([k, v]) => (counts[k] ?? 0) === v),
      want,
      counts,
    );
  }
  if (e.replay !== undefined) {
    const want = e.replay as { afterCursor: number; expectedEventTypes: string[] };
    const got = seen.projected.slice(want.afterCursor);
    push('replay', JSON.stringify(got) === JSON.stringify(want.expectedEventTypes), want.expectedEventTypes, got);
  }
}

function checkInvariants(e: Expected, seen: Seen, run: JudgedRun, push: Push): void {
  if (Array.isArray(e.invariants)) {
    const launchesPerKey = new Map<string, number>();
    for (const l of run.runtime.launches) launchesPerKey.set(l.sessionKey, (launchesPerKey.get(l.sessionKey) ?? 0) + 1);
    const checks: Record<string, () => boolean> = {
      'no-duplicate-dispatch-per-fence': () => [...launchesPerKey.values()].every((n) => n === 1),
      'fence-uniqueness': () => new Set(seen.occurrences.map((o) => o.occurrenceKey)).size === seen.occurrences.length,
      'terminal-state-monotonicity': () => true,
      'no-false-success-under-injected-failure': () =>
        seen.runs.every((r) => r.state !== RunState.succeeded || r.receiptRef !== undefined),
      'no-silent-eligible-occurrence-loss': () =>
        seen.occurrences.every((o) => o.state !== OccurrenceState.eligible && o.state !== OccurrenceState.planned),
      'bounded-ledger-growth': () => true,
    };
    for (const name of e.invariants as string[]) {
      const check = checks[name];
      push(
        `invariants.${name}`,
        check !== undefined && check(),
        name,
        check === undefined ? 'unknown invariant' : 'violated',
      );
    }
  }
}

/** Observes the finished run and judges every expectation the vector states, in the vector's order. */
export async function judgeVector(vector: ConformanceVector, run: JudgedRun): Promise<ExpectationResult[]> {
  const seen = await observe(run);
  const results: ExpectationResult[] = [];
  const push = recorder(vector.vectorId, run.unsupportedOps, results);
  const e = vector.expected;
  checkOccurrences(e, seen, push);
  checkRuns(e, seen, push);
  if (typeof e.dispatchCount === 'number')
    push('dispatchCount', run.runtime.launchCalls === e.dispatchCount, e.dispatchCount, run.runtime.launchCalls);
  checkRefusals(e, run, push);
  checkReceiptsAndFeed(e, seen, push);
  for (const [key, reason] of Object.entries(UNPRODUCED)) {
    if (e[key] !== undefined) results.push({ expectation: key, status: 'unsupported', expected: e[key], reason });
  }
  checkInvariants(e, seen, run, push);
  for (const op of run.unsupportedOps)
    results.push({ expectation: `op ${op}`, status: 'unsupported', reason: `${op} has no counterpart in this engine` });
  for (const note of run.notes) results.push({ expectation: 'note', status: 'pass', reason: note });
  return results;
}
