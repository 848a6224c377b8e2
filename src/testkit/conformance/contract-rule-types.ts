import type { ConformanceVector } from './vector-format.js';

/** What one mismatching expectation is judged on: the vector, the expectation, and what the engine did. */
export interface Situation {
  vector: ConformanceVector;
  /** The expectation's name, e.g. `occurrences[0]` or `steps[1] run.cancel.v1.errorCode`. */
  expectation: string;
  /** The expectation's kind, e.g. `occurrences`, `runs`, `replay` (the part of its name before `[` or `.`). */
  kind: string;
  expected: unknown;
  observed: unknown;
  seen: {
    occurrences: Array<Record<string, unknown>>;
    runs: Array<Record<string, unknown>>;
    /** Attempt states by run id. */
    attemptStates: Map<string, string[]>;
    /** The attempts as attempt.v1 renders them (fence generation, openedAt), when the case read them. */
    attempts?: Array<Record<string, unknown>>;
    quarantined: string[];
    /** Runs held for an operator retry (their x-coven-automata.run-hold.v1 machine is in `held`). */
    heldRuns: string[];
    /** Codes of the commands the engine refused during the vector. */
    refusedCodes: string[];
    /** Instants at which a committed lifecycle command made a definition active, by automation id. */
    activations?: Map<string, string>;
    /** The phases in (or before) which the engine process died, in order. */
    crashes?: string[];
  };
  /** The case created its definition the contract's way: imported into draft, then revised to paused. */
  createdThroughDraft?: boolean;
}

/**
 * A rule of the contract under which the engine answers otherwise than upstream's reference model. It applies
 * wherever its situation occurs, never by file or vector id; the sentence is quoted verbatim from the contract's
 * lifecycle page.
 */
export interface ContractRule {
  id: string;
  sentence: string;
  /** How the rule decides this situation, in this engine's terms. */
  because: string;
  applies: (s: Situation) => boolean;
}
