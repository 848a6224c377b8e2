import { OccurrenceState, RunState } from '../../../machines/index.js';
import { verifyIntegrity } from '../../contract/digest.js';
import { decidingRule } from './contract-rules.js';
import { checkDoctor, checkRedaction } from './vector-diagnostics.js';
import type { ConformanceVector, ExpectationResult } from './vector-format.js';
import { observe, TERMINAL, type Seen } from './vector-observe.js';
import { PREREQUISITES } from './prerequisites.js';
import type { VectorRun } from './vector-session.js';

type Expected = ConformanceVector['expected'];
export type Push = (expectation: string, ok: boolean, expected: unknown, observed: unknown) => void;

function matches(actual: Record<string, unknown>, expected: Record<string, unknown>, ignore: string[]): boolean {
  return Object.entries(expected).every(([k, v]) => ignore.includes(k) || actual[k] === v);
}

/** What the vector needs that this engine lacks: unsupported ops, limits, prerequisites, refused capabilities. */
function missing(vector: ConformanceVector, run: VectorRun): string[] {
  const needs = [...run.unsupportedOps, ...run.limits];
  for (const p of vector.prerequisites ?? [])
    if (PREREQUISITES[p] === undefined) needs.push(`prerequisite ${p}, which this engine does not provide`);
  for (const [label, f] of run.importRefusals)
    if (!label.startsWith('def-') && f.code === 'CAPABILITY_UNSUPPORTED')
      needs.push(`definition ${f.automationId} refused by legacy.import.v1 as CAPABILITY_UNSUPPORTED: ${f.message}`);
  return needs;
}

/**
 * Records one expectation: passed; differs, when a contract rule decides the situation otherwise than upstream's
 * reference model; unsupported, when it depends on something this engine lacks; otherwise failed.
 */
function recorder(vector: ConformanceVector, run: VectorRun, seen: Seen, results: ExpectationResult[]): Push {
  const needs = missing(vector, run);
  return (expectation, ok, expected, observed) => {
    if (ok) return void results.push({ expectation, status: 'pass' });
    const kind = expectation.split(/[[.]/)[0]!;
    const refusedCodes = [...run.refusals.values()].map((r) => String(r.error?.code));
    const facts = { refusedCodes, activations: run.activations, crashes: run.processDeaths };
    const rule = decidingRule({
      vector,
      expectation,
      kind,
      expected,
      observed,
      seen: { ...seen, ...facts },
    });
    if (rule !== undefined)
      results.push({
        expectation,
        status: 'differs',
        expected,
        observed,
        reason: `${rule.id}: "${rule.sentence}": ${rule.because}`,
        rule: rule.id,
      });
    else if (needs.length > 0)
      results.push({
        expectation,
        status: 'unsupported',
        expected,
        observed,
        reason: `depends on ${needs.join('; ')}`,
      });
    else results.push({ expectation, status: 'fail', expected, observed });
  };
}

function checkOccurrences(e: Expected, seen: Seen, push: Push): void {
  if (!Array.isArray(e.occurrences)) return;
  for (const [i, want] of (e.occurrences as Array<Record<string, unknown>>).entries()) {
    const found = seen.occurrences.find((o) => matches(o, want, ['failureReasonMatches']));
    const reason = want.failureReasonMatches as string | undefined;
    const ok =
      found !== undefined &&
      (reason === undefined || String(found.stateReason).toLowerCase().includes(reason.toLowerCase()));
    const observed = seen.occurrences.map((o) => ({
      automationId: o.automationId,
      scheduledFor: o.scheduledFor,
      state: o.state,
      attempt: o.attempt,
      stateReason: o.stateReason,
    }));
    push(`occurrences[${i}]`, ok, want, observed);
  }
}

function checkRuns(e: Expected, seen: Seen, push: Push): void {
  if (!Array.isArray(e.runs)) return;
  const runs = e.runs as Array<Record<string, unknown>>;
  if (runs.length === 0) push('runs', seen.runs.length === 0, [], seen.runs.length);
  for (const [i, want] of runs.entries()) {
    const mine = seen.runs.filter(
      (r) => r.automationId === want.automationId && (want.status === undefined || r.state === want.status),
    );
    const count = want.count as number | undefined;
    const ambiguous = want.ambiguous !== true || mine.every((r) => r.state === RunState.ambiguous);
    push(
      `runs[${i}]`,
      (count === undefined ? mine.length > 0 : mine.length === count) && ambiguous,
      want,
      seen.runs.map((r) => ({
        runId: r.runId,
        automationId: r.automationId,
        state: r.state,
        attemptCount: r.attemptCount,
      })),
    );
  }
}

/** A refusal is judged by its existence and code; its wording belongs to the reference model and is noted. */
function checkRefusals(e: Expected, run: VectorRun, push: Push): void {
  if (!Array.isArray(e.refusals)) return;
  for (const want of e.refusals as Array<{ refusalId: string; reasonMatches: string }>) {
    const command = run.refusals.get(want.refusalId);
    const imported = run.importRefusals.get(want.refusalId);
    const code = command?.error?.code ?? imported?.code;
    const wording = [command?.error?.message ?? imported?.message ?? '', ...(imported?.problems ?? [])].join(' | ');
    push(
      `refusals.${want.refusalId}`,
      code !== undefined || command?.outcome === 'replayed',
      want,
      code ?? 'committed',
    );
    if ((command !== undefined || imported !== undefined) && !wording.includes(want.reasonMatches)) {
      const answer =
        command?.outcome === 'replayed' ? 'replayed (the first outcome, nothing re-executed)' : `${code}: ${wording}`;
      run.notes.push(`${want.refusalId} refused as ${answer}; reference wording "${want.reasonMatches}"`);
    }
  }
}

function checkReceipts(e: Expected, seen: Seen, run: VectorRun, push: Push): void {
  if (e.receipts === undefined) return;
  const want = e.receipts as {
    count?: number;
    allVerify?: boolean;
    outcomes?: string[];
    verifyAfterRedaction?: boolean;
  };
  const outcomes = seen.receipts.map((r) => (r.outcome as { disposition: string }).disposition).sort();
  const verdicts = run.receiptVerdicts ?? seen.receipts.map((r) => verifyIntegrity(r).valid);
  // Undefined: no redactReceipts op ran, so there are no redacted copies to verify.
  const redactedVerify = run.redactedReceipts?.every((r) => verifyIntegrity(r).valid);
  const ok =
    (want.count === undefined || seen.receipts.length === want.count) &&
    (want.allVerify !== true || verdicts.every(Boolean)) &&
    (want.outcomes === undefined || JSON.stringify(outcomes) === JSON.stringify([...want.outcomes].sort())) &&
    (want.verifyAfterRedaction !== true || redactedVerify === true);
  push('receipts', ok, want, { count: seen.receipts.length, outcomes, verified: verdicts, redactedVerify });
}

function checkFeed(e: Expected, seen: Seen, push: Push): void {
  const counts: Record<string, number> = { eventCount: seen.projected.length };
  for (const k of seen.projected) counts[k] = (counts[k] ?? 0) + 1;
  if (e.projection !== undefined) {
    const want = e.projection as Record<string, number>;
    push(
      'projection',
      Object.entries(want).every(([k, v]) => (counts[k] ?? 0) === v),
      want,
      counts,
    );
  }
  if (Array.isArray(e.events))
    for (const want of e.events as Array<{ type: string; count: number }>)
      push(`events.${want.type}`, (counts[want.type] ?? 0) === want.count, want, counts[want.type] ?? 0);
  if (e.replay !== undefined) {
    const want = e.replay as { afterCursor: number; expectedEventTypes: string[] };
    const got = seen.projected.slice(want.afterCursor);
    push('replay', JSON.stringify(got) === JSON.stringify(want.expectedEventTypes), want.expectedEventTypes, got);
  }
}

/**
 * one-fence-one-run: an occurrence owns no more runs than fence generations its attempts were opened under, so no
 * fence generation owns two accepted runs.
 */
function oneRunPerFence(seen: Seen): boolean {
  return seen.occurrences.every((o) => {
    const runs = seen.runs.filter((r) => r.occurrenceId === o.occurrenceId).length;
    const fences = new Set(
      seen.attempts
        .filter((a) => a.occurrenceId === o.occurrenceId)
        .map((a) => (a.dispatchFence as { occurrenceFenceGeneration?: number }).occurrenceFenceGeneration),
    );
    return runs <= fences.size;
  });
}

/** No feed transition leaves a terminal state. */
function terminalMonotone(seen: Seen): boolean {
  return seen.feed.every((ev) => !TERMINAL.has(String((ev.payload as { from?: string }).from ?? '')));
}

function checkInvariants(e: Expected, seen: Seen, run: VectorRun, push: Push): void {
  if (!Array.isArray(e.invariants)) return;
  const launchesPerKey = new Map<string, number>();
  for (const l of run.runtime.launches) launchesPerKey.set(l.sessionKey, (launchesPerKey.get(l.sessionKey) ?? 0) + 1);
  const checks: Record<string, () => boolean> = {
    'no-duplicate-dispatch-per-fence': () => [...launchesPerKey.values()].every((n) => n === 1),
    'fence-uniqueness': () =>
      new Set(seen.occurrences.map((o) => o.occurrenceKey)).size === seen.occurrences.length && oneRunPerFence(seen),
    'terminal-state-monotonicity': () => terminalMonotone(seen),
    'no-false-success-under-injected-failure': () =>
      seen.runs.every((r) => r.state !== RunState.succeeded || r.receiptRef !== undefined),
    'no-silent-eligible-occurrence-loss': () =>
      seen.occurrences.every((o) => o.state !== OccurrenceState.eligible && o.state !== OccurrenceState.planned),
    // Ten attempts bound a run; a pass or a runNow opens at most one occurrence per definition.
    'bounded-ledger-growth': () =>
      seen.runs.every((r) => Number(r.attemptCount) <= 10) &&
      seen.occurrences.length <= (run.vector.input.operations?.length ?? 0) * Math.max(1, run.definitionCount),
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

/** Observes the finished run and judges every expectation the vector states, in the vector's order. */
export async function judgeVector(vector: ConformanceVector, run: VectorRun): Promise<ExpectationResult[]> {
  const seen = await observe(run);
  const results: ExpectationResult[] = [];
  const push = recorder(vector, run, seen, results);
  const e = vector.expected;
  checkOccurrences(e, seen, push);
  checkRuns(e, seen, push);
  if (typeof e.dispatchCount === 'number')
    push('dispatchCount', run.runtime.launchCalls === e.dispatchCount, e.dispatchCount, run.runtime.launchCalls);
  checkRefusals(e, run, push);
  checkReceipts(e, seen, run, push);
  checkFeed(e, seen, push);
  await checkDoctor(e, run, push);
  await checkRedaction(e, seen, run, push);
  checkInvariants(e, seen, run, push);
  for (const op of run.unsupportedOps)
    results.push({ expectation: `op ${op.split(':')[0]!}`, status: 'unsupported', reason: op });
  for (const note of run.notes) results.push({ expectation: 'note', status: 'pass', reason: note });
  return results;
}
