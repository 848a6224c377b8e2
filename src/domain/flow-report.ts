import { OccurrenceState } from '../../machines/index.js';
import type { StoredRecord, StoreReader } from '../store/store.js';
import { DEFINITION_KIND, type DefinitionRecord } from './definition-records.js';
import {
  claimsInWindow,
  EMPTY_GATE,
  FLOW_KINDS,
  limitsOf,
  type FlowGate,
  type FlowLimits,
  type GateTerms,
  type RateLimit,
} from './flow-limits.js';
import { flowLimits, occurrenceRecords } from './flow-gates.js';
import { OCCURRENCE_LIVE, stateOf } from './records.js';

/** One gate as operators read it: its limits, what it holds now, and the work waiting at it. */
export interface GateReport {
  key: string;
  inFlight?: { count: number; cap: number };
  rate?: RateLimit & { used: number; reopensAt: string | null };
  /** Eligible occurrences waiting at the gate, best-ranked first. */
  waiting: string[];
  /** Whether the gate turns the next claim away (cap full, or rate spent). */
  closed: boolean;
}

/** x-coven-automata.limits.get.v1's answer. */
export interface FlowReport {
  /** 0 while no limits were ever set. */
  revision: number;
  setAt: string | null;
  limits: FlowLimits;
  gates: GateReport[];
}

/** The rate limit a definition record gives its automation (x-coven-automata.limits.v1), if any. */
const rateOf = (record: StoredRecord<DefinitionRecord['data']>): RateLimit | undefined =>
  limitsOf(record.data.attributes.definition)?.rate;

/** The limits a gate key stands for now: from the store-wide limits, or (automation:…) from its definition. */
function termsOf(limits: FlowLimits, rates: ReadonlyMap<string, RateLimit>, key: string): GateTerms {
  const [kind, ...rest] = key.split(':');
  const name = rest.join(':');
  if (kind === 'runtime') return { key, ...limits.runtimes?.[name] };
  if (kind === 'tag') return { key, ...limits.tags?.[name] };
  const rate = rates.get(name);
  return rate === undefined ? { key } : { key, rate };
}

/** Each automation whose definition limits its own rate, with that limit. */
async function automationRates(reader: StoreReader): Promise<Map<string, RateLimit>> {
  const rates = new Map<string, RateLimit>();
  for (const record of await reader.list<DefinitionRecord['data']>(DEFINITION_KIND)) {
    const rate = rateOf(record);
    if (rate !== undefined) rates.set(record.id, rate);
  }
  return rates;
}

/** The rate limits of the automations whose claims wrote a gate, from their definitions. */
async function writtenRates(
  reader: StoreReader,
  gates: ReadonlyMap<string, FlowGate>,
): Promise<Map<string, RateLimit>> {
  const rates = new Map<string, RateLimit>();
  for (const key of gates.keys()) {
    if (!key.startsWith('automation:')) continue;
    const id = key.slice('automation:'.length);
    const record = await reader.get<DefinitionRecord['data']>(DEFINITION_KIND, id);
    const rate = record === undefined ? undefined : rateOf(record);
    if (rate !== undefined) rates.set(id, rate);
  }
  return rates;
}

/** Every key the limits and the definitions name, and every gate that was ever written. */
function keysOf(limits: FlowLimits, rates: ReadonlyMap<string, RateLimit>, written: readonly string[]): string[] {
  const named = [
    ...Object.keys(limits.runtimes ?? {}).map((id) => `runtime:${id}`),
    ...Object.keys(limits.tags ?? {}).map((tag) => `tag:${tag}`),
    ...[...rates.keys()].map((id) => `automation:${id}`),
  ];
  return [...new Set([...named, ...written])].sort();
}

async function reportGate(
  reader: StoreReader,
  terms: GateTerms,
  gate: FlowGate,
  now: number,
  hidden: ReadonlySet<string>,
): Promise<GateReport> {
  const read = await occurrenceRecords(reader, [...gate.inFlight, ...gate.waiting.map((w) => w.occurrenceId)]);
  const records = new Map(read.map((r) => [r.id, r]));
  const states = new Map([...records].map(([id, r]) => [id, stateOf(r)]));
  const shown = (id: string) => !hidden.has(records.get(id)?.data.attributes.automationId ?? '');
  const report: GateReport = {
    key: terms.key,
    waiting: gate.waiting
      .filter((w) => states.get(w.occurrenceId) === OccurrenceState.eligible && shown(w.occurrenceId))
      .map((w) => w.occurrenceId),
    closed: false,
  };
  if (terms.inFlight !== undefined) {
    const count = gate.inFlight.filter((id) => OCCURRENCE_LIVE.has(states.get(id) as OccurrenceState)).length;
    report.inFlight = { count, cap: terms.inFlight };
    report.closed ||= count >= terms.inFlight;
  }
  if (terms.rate !== undefined) {
    const windowMs = terms.rate.perMinutes * 60_000;
    const inWindow = claimsInWindow(gate.recent, terms.rate, now);
    const spent = inWindow.length >= terms.rate.limit;
    const reopensAt = spent ? new Date(inWindow[inWindow.length - terms.rate.limit]! + windowMs).toISOString() : null;
    report.rate = { ...terms.rate, used: inWindow.length, reopensAt };
    report.closed ||= spent;
  }
  return report;
}

/**
 * The store-wide limits and every gate's state at `now`: work in flight against each cap, claims in each rate
 * window and when it reopens, and the work waiting. What `limits`, the metrics and the doctor show. Gates and
 * waiters of the `hidden` automations (read ACL) are left out. `unclaimedRates` also lists the rate limits of
 * automations that never claimed under them (it reads every definition).
 *
 * @example
 * ```ts
 * const report = await store.read((reader) => flowReport(reader, Date.now()));
 * for (const gate of report.gates) console.log(gate.key, gate.inFlight, gate.waiting.length);
 * ```
 */
export async function flowReport(
  reader: StoreReader,
  now: number,
  hidden: ReadonlySet<string> = new Set(),
  options: { unclaimedRates?: boolean } = {},
): Promise<FlowReport> {
  const settings = await flowLimits(reader);
  const limits = settings?.limits ?? {};
  const records = await reader.list<FlowGate>(FLOW_KINDS.gate);
  const byKey = new Map(records.map((r) => [r.id, r.data]));
  const gates: GateReport[] = [];
  // Rate limits of automations none of whose claims wrote a gate yet are found only by reading every definition:
  // what `limits show` asks for, not a metrics scrape.
  const rates = options.unclaimedRates === true ? await automationRates(reader) : await writtenRates(reader, byKey);
  for (const key of keysOf(limits, rates, [...byKey.keys()])) {
    if (key.startsWith('automation:') && hidden.has(key.slice('automation:'.length))) continue;
    const terms = termsOf(limits, rates, key);
    if (terms.inFlight === undefined && terms.rate === undefined && (byKey.get(key)?.waiting.length ?? 0) === 0)
      continue;
    gates.push(await reportGate(reader, terms, byKey.get(key) ?? EMPTY_GATE, now, hidden));
  }
  return { revision: settings?.revision ?? 0, setAt: settings?.setAt ?? null, limits, gates };
}
