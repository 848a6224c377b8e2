/**
 * Deliberate bugs, for the invariant suite's self-check only: each flag makes an engine break one contract
 * rule the way a real bug would, so the suite can prove it notices, by the invariant's name. None of them is
 * a branch in production code: world.ts injects each by wrapping a port the engine is given (faulty-store.ts,
 * faulty-runtime.ts) or by building the engine with one part wrapped (faulty-engine.ts).
 */
export interface EngineFaults {
  /** The runtime is called before the run acceptance and attempt adoption are committed. */
  launchBeforeAdoptionCommit: boolean;
  /** A claimed occurrence is accepted twice: a second run for the same fence generation. */
  acceptFenceTwice: boolean;
  /** A launch is sent to the runtime twice: a second session for one attempt. */
  bindSecondSession: boolean;
  /** A lost session opens new work without an operator's occurrence.recover.v1. */
  autoRetryAmbiguous: boolean;
  /** A lost session is recorded as a success with made-up evidence. */
  successWithoutEvidence: boolean;
  /** An operator retry rewrites the prior attempt's record (needs a store that does not seal). */
  rewritePriorAttempt: boolean;
  /** Tombstoned definitions keep being planned. */
  planTombstoned: boolean;
  /** A cancellation of a running session is settled at once, without the runtime's acknowledgement. */
  ackCancelWithoutRuntime: boolean;
  /** A revise moves live occurrences onto the new revision. */
  rewriteHistoricRevision: boolean;
  /** A launch whose answer was lost (it may have started) is sent again without proof it never happened. */
  resendUnconfirmedLaunches: boolean;
  /** Retention compacts occurrences that are still live, as if they had settled. */
  compactLiveHistory: boolean;
  /** The overlap check sees no live work: a second occurrence of an automation is claimed while one is live. */
  ignoreLiveWork: boolean;
}

export const NO_FAULTS: EngineFaults = {
  launchBeforeAdoptionCommit: false,
  acceptFenceTwice: false,
  bindSecondSession: false,
  autoRetryAmbiguous: false,
  successWithoutEvidence: false,
  rewritePriorAttempt: false,
  planTombstoned: false,
  ackCancelWithoutRuntime: false,
  rewriteHistoricRevision: false,
  resendUnconfirmedLaunches: false,
  compactLiveHistory: false,
  ignoreLiveWork: false,
};
