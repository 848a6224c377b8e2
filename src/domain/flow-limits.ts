import { requireValidExtension } from '../contract/schemas.js';

/** The definition extension that gives an automation tags, a priority and a rate limit (docs/flow-control.md). */
export const LIMITS_EXTENSION = 'x-coven-automata.limits.v1';

/** A runtime a definition names none of runs on this one (the dispatcher's default too). */
export const DEFAULT_RUNTIME_ID = 'coven-code';

/** The records flow control keeps: the store-wide limits (one record) and one gate per limited key. */
export const FLOW_KINDS = {
  /** `store`: the caps and tag rate limits every engine of the store holds ({@link FlowSettings}). */
  settings: 'flow-limits',
  /** `runtime:<id>`, `tag:<tag>`, `automation:<id>`: what a limit has let through ({@link FlowGate}). */
  gate: 'flow-gate',
} as const;
export const FLOW_SETTINGS_ID = 'store';

/** At most `limit` claims in any window of `perMinutes`. */
export interface RateLimit {
  limit: number;
  perMinutes: number;
}

/** The body of {@link LIMITS_EXTENSION}, as limits-extension.schema.json admits it. */
export interface LimitsExtension {
  tags?: string[];
  priority?: number;
  rate?: RateLimit;
}

/** The store-wide limits, as flow-limits.schema.json admits them. */
export interface FlowLimits {
  runtimes?: Record<string, { inFlight: number }>;
  tags?: Record<string, { inFlight?: number; rate?: RateLimit }>;
}

/** The {@link FLOW_KINDS.settings} record. */
export interface FlowSettings {
  limits: FlowLimits;
  setAt: string;
  /** Grows by one with every set: what `limits` shows and a change names. */
  revision: number;
}

/** One occurrence waiting at a gate, ranked by {@link outranks}. */
export interface GateWaiter {
  occurrenceId: string;
  priority: number;
  /** When it came due (its slot, or its manual request). */
  dueAt: string;
}

/**
 * What a limit has let through. Every claim under the gate writes it, so two claims under one limit conflict
 * (compare-and-set on its version) and the second, run again, sees the first: that, not a read of live work, is
 * what holds a cap across engines that share a store.
 */
export interface FlowGate {
  /** Occurrences claimed under the gate's cap; those no longer live are dropped when it is next written. */
  inFlight: string[];
  /** The instants of the latest claims under its rate limit, oldest first, at most the limit's count. */
  recent: string[];
  /** Work the gate turned away that still waits, so work of a lower rank does not pass it. */
  waiting: GateWaiter[];
}

/** One limit a claim passes: a cap on work in flight, a rate limit, or both. */
export interface GateTerms {
  key: string;
  inFlight?: number;
  rate?: RateLimit;
}

export const EMPTY_GATE: FlowGate = { inFlight: [], recent: [], waiting: [] };

/** The definition's {@link LIMITS_EXTENSION} body, when it has one (checked when the definition was). */
export const limitsOf = (terms: { extensions?: Record<string, unknown> }): LimitsExtension | undefined =>
  terms.extensions?.[LIMITS_EXTENSION] as LimitsExtension | undefined;

/** Validates the extension's body against its schema. */
export function checkLimitsExtension(raw: unknown): void {
  requireValidExtension('limits-extension.schema.json', LIMITS_EXTENSION, raw);
}

/** Validates store-wide limits against flow-limits.schema.json, into typed limits. */
export function checkFlowLimits(raw: unknown, field = 'payload.limits'): FlowLimits {
  requireValidExtension('flow-limits.schema.json', 'limits', raw, field);
  return raw as FlowLimits;
}

/**
 * The gates a claim of the automation passes, in key order (the order their records are written in, so two
 * claims lock them alike): its runtime's cap, each of its tags' cap and rate limit, its own rate limit. Keys
 * without a limit are left out, so work nothing limits writes nothing.
 *
 * @example
 * ```ts
 * gatesFor({ runtimes: { 'coven-code': { inFlight: 4 } } }, 'nightly', 'coven-code', { tags: ['reports'] });
 * // [{ key: 'runtime:coven-code', inFlight: 4 }]   (no limit is set for the tag reports)
 * ```
 */
export function gatesFor(
  limits: FlowLimits | undefined,
  automationId: string,
  runtimeId: string,
  extension: LimitsExtension | undefined,
): GateTerms[] {
  const gates: GateTerms[] = [];
  const runtimeCap = limits?.runtimes?.[runtimeId]?.inFlight;
  if (runtimeCap !== undefined) gates.push({ key: `runtime:${runtimeId}`, inFlight: runtimeCap });
  for (const tag of extension?.tags ?? []) {
    const limit = limits?.tags?.[tag];
    if (limit === undefined) continue;
    gates.push({
      key: `tag:${tag}`,
      ...(limit.inFlight === undefined ? {} : { inFlight: limit.inFlight }),
      ...(limit.rate === undefined ? {} : { rate: limit.rate }),
    });
  }
  if (extension?.rate !== undefined) gates.push({ key: `automation:${automationId}`, rate: extension.rate });
  return gates.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Whether `a` is claimed before `b` at a gate: higher priority, then the earlier due, then the smaller id. */
export function outranks(a: GateWaiter, b: GateWaiter): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.dueAt !== b.dueAt) return a.dueAt < b.dueAt;
  return a.occurrenceId < b.occurrenceId;
}

/** Why a gate turned a claim away: its cap is full, its rate limit spent, or better-ranked work waits at it. */
export type GateRefusal = 'cap' | 'rate' | 'priority';

/** A gate's answer to one claim. */
export interface GateVerdict {
  key: string;
  refusal?: GateRefusal;
  /** A rate limit's refusal: when the window lets the next claim through (epoch ms). */
  retryAt?: number;
}

/** The claim instants of `recent` inside the rate limit's window ending at `now`, in time order (epoch ms). */
export function claimsInWindow(recent: readonly string[], rate: RateLimit, now: number): number[] {
  const windowStart = now - rate.perMinutes * 60_000;
  return recent
    .map((instant) => Date.parse(instant))
    .filter((t) => t > windowStart)
    .sort((a, b) => a - b);
}

/**
 * One gate's answer to a claim of `candidate` at `now`, from what the gate holds: `live` are its in-flight
 * occurrences still live, `waitingAhead` the first waiter that outranks the candidate and still waits (if any).
 */
export function judgeGate(
  terms: GateTerms,
  gate: FlowGate,
  live: readonly string[],
  waitingAhead: GateWaiter | undefined,
  now: number,
): GateVerdict {
  if (terms.inFlight !== undefined && live.length >= terms.inFlight) return { key: terms.key, refusal: 'cap' };
  if (terms.rate !== undefined) {
    const inWindow = claimsInWindow(gate.recent, terms.rate, now);
    if (inWindow.length >= terms.rate.limit) {
      const freedBy = inWindow[inWindow.length - terms.rate.limit]!;
      return { key: terms.key, refusal: 'rate', retryAt: freedBy + terms.rate.perMinutes * 60_000 };
    }
  }
  if (waitingAhead !== undefined) return { key: terms.key, refusal: 'priority' };
  return { key: terms.key };
}

/** The gate once a claim of `occurrenceId` at `now` passed it: counted in flight and in the window, not waiting. */
export function admitted(terms: GateTerms, gate: FlowGate, live: readonly string[], occurrenceId: string, now: string) {
  const next: FlowGate = {
    inFlight: terms.inFlight === undefined ? [] : [...live, occurrenceId],
    // Engines' clocks differ, so instants arrive out of order: the newest `limit` are kept, in time order.
    recent: terms.rate === undefined ? [] : [...gate.recent, now].sort().slice(-terms.rate.limit),
    waiting: gate.waiting.filter((w) => w.occurrenceId !== occurrenceId),
  };
  return next;
}

/** The most waiters a gate records: those below the last recorded are outranked by every recorded one anyway. */
export const GATE_WAITERS = 256;

/**
 * The gate with `waiter` waiting at it (`wait`), or not; undefined when that is already so, or when a full list's
 * every waiter outranks it (nothing to write). A full list gives up its lowest-ranked waiter for a better one.
 */
export function withWaiter(gate: FlowGate, waiter: GateWaiter, wait: boolean): FlowGate | undefined {
  const present = gate.waiting.some((w) => w.occurrenceId === waiter.occurrenceId);
  if (present === wait) return undefined;
  const others = gate.waiting.filter((w) => w.occurrenceId !== waiter.occurrenceId);
  if (!wait) return { ...gate, waiting: others };
  const ranked = [...others, waiter].sort((a, b) => (outranks(a, b) ? -1 : 1));
  const kept = ranked.slice(0, GATE_WAITERS);
  if (!kept.includes(waiter)) return undefined;
  return { ...gate, waiting: kept };
}

/**
 * Eligible occurrences this engine's passes found waiting (on a limit, or their turn behind their automation's
 * work) and when to look again: at a rate limit's reopening, or once any commit was heard after the pass noted it
 * (`null`: work ending is a commit, which every engine of the store hears; a commit the same pass made after the
 * note counts too). Without it, eligible work would wake the pass loop at once, every time.
 */
export class WaitingWork {
  private commits = 0;
  private readonly until = new Map<string, { retryAt: number | null; afterCommit: number }>();

  /** A commit was heard (this engine's or another's). */
  heard(): void {
    this.commits += 1;
  }

  note(occurrenceId: string, retryAt: number | null): void {
    this.until.set(occurrenceId, { retryAt, afterCommit: this.commits });
  }

  clear(occurrenceId: string): void {
    this.until.delete(occurrenceId);
  }

  /**
   * Whether a pass holds the occurrence back and until when: undefined when it is not held (or a commit since may
   * have freed it: look now), the instant a rate window reopens, or null until the next commit.
   */
  heldUntil(occurrenceId: string): number | null | undefined {
    const held = this.until.get(occurrenceId);
    if (held === undefined || (held.retryAt === null && this.commits > held.afterCommit)) return undefined;
    return held.retryAt;
  }

  /**
   * The occurrences a pass need not judge again at `now`: held, no commit heard since (any commit may have changed
   * why: work ended, a definition paused), and no rate window reopened.
   */
  heldAt(now: number): Set<string> {
    const held = new Set<string>();
    for (const [id, entry] of this.until)
      if (this.commits === entry.afterCommit && (entry.retryAt === null || entry.retryAt > now)) held.add(id);
    return held;
  }

  /** Forgets every occurrence but those still eligible. */
  retain(eligible: ReadonlySet<string>): void {
    for (const id of this.until.keys()) if (!eligible.has(id)) this.until.delete(id);
  }
}
