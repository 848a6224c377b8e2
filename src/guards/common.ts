import type { ContractActor } from '../contract/vocabulary.js';

/**
 * Every lifecycle event names the contract actor that sends it and the instant it is committed at.
 * Time enters guards only through `now`; guards never read a clock.
 */
export interface LifecycleEventBase<TType extends string> {
  type: TType;
  actor: ContractActor;
  /** RFC 3339 UTC instant supplied by the engine's injected clock. */
  now: string;
}

/** Milliseconds since the epoch for an RFC 3339 instant; NaN for anything unparsable. */
export function instant(iso: string | null | undefined): number {
  return iso === null || iso === undefined ? Number.NaN : Date.parse(iso);
}

/** `a < b` for two instants; false when either is missing or unparsable, so guards fail closed. */
export function isBefore(a: string | null | undefined, b: string | null | undefined): boolean {
  return instant(a) < instant(b);
}

export function nonEmpty(value: string | null | undefined): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * The parameterised actor-role check every generated transition carries. `params.actor` is typed as a
 * plain string because XState widens literals inside `and([...])`; the generator only emits contract actors.
 */
export function actorIs({ event }: { event: { actor?: unknown } }, params: { actor: string }): boolean {
  return event.actor === params.actor;
}

/**
 * Verdict of the engine's validation of a definition body and its dependencies, carried on definition
 * events so the guard decides from facts, not by re-running I/O.
 */
export interface ValidationVerdict {
  valid: boolean;
  problems: string[];
}

export interface RequirementsVerdict {
  familiar: boolean;
  authority: boolean;
  runtime: boolean;
  /** The runtimes the engine has registered, when it knows them: a refusal names them beside the one asked for. */
  registeredRuntimes?: readonly string[];
}

/** Terminal runtime evidence reported for one session. */
export interface TerminalEvidence {
  sessionId: string;
  outcome: 'succeeded' | 'failed';
  /** Exit status where the runtime has one; success requires 0 when it is present. */
  exitCode: number | null;
  /** The evidence was checked against the runtime's own record (digest, ledger row), not merely claimed. */
  verified: boolean;
}

export function provesCompletion(evidence: TerminalEvidence | undefined, sessionId: string | null): boolean {
  return (
    evidence !== undefined &&
    evidence.verified &&
    evidence.outcome === 'succeeded' &&
    (evidence.exitCode === null || evidence.exitCode === 0) &&
    nonEmpty(sessionId) &&
    evidence.sessionId === sessionId
  );
}

export function provesFailure(evidence: TerminalEvidence | undefined, sessionId: string | null): boolean {
  return (
    evidence !== undefined &&
    evidence.verified &&
    nonEmpty(sessionId) &&
    evidence.sessionId === sessionId &&
    (evidence.outcome === 'failed' || (evidence.exitCode !== null && evidence.exitCode !== 0))
  );
}
