import { OccurrenceState } from '../../machines/index.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import {
  admitted,
  DEFAULT_RUNTIME_ID,
  EMPTY_GATE,
  FLOW_KINDS,
  FLOW_SETTINGS_ID,
  gatesFor,
  judgeGate,
  limitsOf,
  outranks,
  withWaiter,
  type FlowGate,
  type FlowLimits,
  type FlowSettings,
  type GateTerms,
  type GateVerdict,
  type GateWaiter,
} from './flow-limits.js';
import type { PlanningTerms } from './definition-directory.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord } from './records.js';

/** A claim flow control is asked about: which occurrence, of which definition revision, due when. */
export interface ClaimCandidate {
  occurrenceId: string;
  terms: Pick<PlanningTerms, 'automationId' | 'extensions' | 'runtimeRequirements'>;
  dueAt: string;
  /**
   * An operator's run-now: limits hold, but waiting work does not outrank it (it is refused, never queued, so
   * nothing waits for it either).
   */
  manual?: boolean;
}

/** Flow control's answer: every gate passed (and recorded the claim), or the gates that turned it away. */
export interface FlowAdmission {
  admitted: boolean;
  /** The gates that refused, with why. */
  refused: GateVerdict[];
  /** When a rate limit that refused lets the next claim through (epoch ms); absent when a cap or rank refused. */
  retryAt?: number;
  /** Asked `unranked`, a claim some limit governs is not judged here: the caller leaves it to a ranked claim. */
  deferred?: boolean;
}

/** The store-wide limits as `reader` holds them; undefined when none were ever set. */
export async function flowLimits(reader: StoreReader): Promise<FlowSettings | undefined> {
  return (await reader.get<FlowSettings>(FLOW_KINDS.settings, FLOW_SETTINGS_ID))?.data;
}

/** The gates a claim of `terms` passes under `limits`, in the order their records are written. */
export function gatesOf(limits: FlowLimits | undefined, terms: ClaimCandidate['terms']): GateTerms[] {
  const runtimeId = terms.runtimeRequirements?.runtimeId ?? DEFAULT_RUNTIME_ID;
  return gatesFor(limits, terms.automationId, runtimeId, limitsOf(terms));
}

/** The occurrences among `ids` the store holds, read at once where each read is a round trip. */
export async function occurrenceRecords(reader: StoreReader, ids: readonly string[]): Promise<OccurrenceRecord[]> {
  if (ids.length === 0) return [];
  const records = reader.getMany
    ? await reader.getMany<OccurrenceRecord['data']>(KINDS.occurrence, ids)
    : (await Promise.all(ids.map((id) => reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id)))).filter(
        (r): r is StoredRecord<OccurrenceRecord['data']> => r !== undefined,
      );
  return records as OccurrenceRecord[];
}

/** The occurrences among `ids` that are in `states` now, in the order given. */
async function inStates(reader: StoreReader, ids: readonly string[], states: ReadonlySet<string>): Promise<string[]> {
  const records = await occurrenceRecords(reader, ids);
  const kept = new Set(records.filter((r) => states.has(stateOf(r))).map((r) => r.id));
  return ids.filter((id) => kept.has(id));
}

/** A waiter is listed only while eligible: it is listed from eligible and leaves the list when it is claimed. */
const STILL_WAITING: ReadonlySet<string> = new Set([OccurrenceState.eligible]);

/**
 * The best-ranked waiter that outranks `candidate` and still waits, and the waiters that outrank it but are gone
 * (claimed, skipped, cancelled), read in one go.
 */
async function waiterAhead(reader: StoreReader, gate: FlowGate, candidate: GateWaiter) {
  const ahead = gate.waiting.filter((w) => w.occurrenceId !== candidate.occurrenceId && outranks(w, candidate));
  ahead.sort((a, b) => (outranks(a, b) ? -1 : 1));
  const still = new Set(
    await inStates(
      reader,
      ahead.map((w) => w.occurrenceId),
      STILL_WAITING,
    ),
  );
  const gone = new Set(ahead.filter((w) => !still.has(w.occurrenceId)).map((w) => w.occurrenceId));
  return { waiter: ahead.find((w) => still.has(w.occurrenceId)), gone };
}

interface GateReading {
  terms: GateTerms;
  record: StoredRecord<FlowGate> | undefined;
  gate: FlowGate;
  live: string[];
  verdict: GateVerdict;
  /** Waiters found gone were dropped from `gate`: worth writing even when nothing else changes. */
  pruned: boolean;
}

async function readGate(tx: StoreTransaction, terms: GateTerms, candidate: GateWaiter, now: number, manual: boolean) {
  const record = await tx.get<FlowGate>(FLOW_KINDS.gate, terms.key);
  const stored = record?.data ?? EMPTY_GATE;
  const live = terms.inFlight === undefined ? [] : await inStates(tx, stored.inFlight, OCCURRENCE_LIVE);
  const { waiter, gone } = manual
    ? { waiter: undefined, gone: new Set<string>() }
    : await waiterAhead(tx, stored, candidate);
  const gate =
    gone.size === 0 ? stored : { ...stored, waiting: stored.waiting.filter((w) => !gone.has(w.occurrenceId)) };
  const verdict = judgeGate(terms, gate, live, waiter, now);
  return { terms, record, gate, live, verdict, pruned: gone.size > 0 } satisfies GateReading;
}

const writeGate = (tx: StoreTransaction, reading: GateReading, gate: FlowGate) =>
  tx.put(FLOW_KINDS.gate, reading.terms.key, gate, { expectedVersion: reading.record?.version ?? null });

/**
 * Asks the gates of a claim, inside the claim's transaction: when every one lets it through, each records it (in
 * flight, in its rate window) and the caller claims; when any refuses, the candidate waits at those (ranked by
 * priority) and leaves the others, and the caller does not claim. Every claim under a limit writes its gate, so
 * concurrent claims under one limit conflict and the one run again counts the other (see {@link FlowGate}).
 * `unranked`: the caller sees candidates in no rank order (planning, a claim batch), so governed claims are
 * deferred to one that does, unjudged and nothing written.
 *
 * @example
 * ```ts
 * const admission = await passFlowGates(step.tx, { occurrenceId, terms, dueAt: scheduledFor }, step.now);
 * if (!admission.admitted) return false; // stays eligible; waits at admission.refused
 * ```
 */
export async function passFlowGates(
  tx: StoreTransaction,
  candidate: ClaimCandidate,
  now: string,
  unranked = false,
): Promise<FlowAdmission> {
  const gates = gatesOf((await flowLimits(tx))?.limits, candidate.terms);
  if (gates.length === 0) return { admitted: true, refused: [] };
  if (unranked) return { admitted: false, refused: [], deferred: true };
  await tx.prefetch?.(
    gates.map((g) => [FLOW_KINDS.gate, g.key] as const),
    [],
  );
  const waiter: GateWaiter = {
    occurrenceId: candidate.occurrenceId,
    priority: limitsOf(candidate.terms)?.priority ?? 0,
    dueAt: candidate.dueAt,
  };
  const at = Date.parse(now);
  const readings: GateReading[] = [];
  for (const terms of gates) readings.push(await readGate(tx, terms, waiter, at, candidate.manual === true));
  const refused = readings.map((r) => r.verdict).filter((v) => v.refusal !== undefined);
  if (refused.length === 0) {
    for (const r of readings) await writeGate(tx, r, admitted(r.terms, r.gate, r.live, candidate.occurrenceId, now));
    return { admitted: true, refused };
  }
  if (candidate.manual !== true) {
    for (const r of readings) {
      const next = withWaiter(r.gate, waiter, r.verdict.refusal !== undefined) ?? (r.pruned ? r.gate : undefined);
      if (next !== undefined) await writeGate(tx, r, next);
    }
  }
  const retryAts = refused.map((v) => v.retryAt);
  const onlyRates = retryAts.every((t) => t !== undefined);
  return { admitted: false, refused, ...(onlyRates ? { retryAt: Math.max(...(retryAts as number[])) } : {}) };
}

/**
 * Takes `candidate` off the waiting lists of its gates: it waits for something else now (its automation's own
 * work), and a listed waiter would hold lower-ranked work back at a gate with room. Writes only the gates that
 * list it.
 */
export async function leaveGates(tx: StoreTransaction, candidate: ClaimCandidate): Promise<void> {
  const gates = gatesOf((await flowLimits(tx))?.limits, candidate.terms);
  for (const terms of gates) {
    const record = await tx.get<FlowGate>(FLOW_KINDS.gate, terms.key);
    if (record === undefined || !record.data.waiting.some((w) => w.occurrenceId === candidate.occurrenceId)) continue;
    const waiting = record.data.waiting.filter((w) => w.occurrenceId !== candidate.occurrenceId);
    await tx.put(FLOW_KINDS.gate, terms.key, { ...record.data, waiting }, { expectedVersion: record.version });
  }
}
