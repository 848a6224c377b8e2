/** Ids of execution records, derived from what they belong to, so a second creation of one conflicts. */

/** One launch of an attempt: a new dispatch generation is a new launch. */
export const outboxIdFor = (attemptId: string, dispatchGeneration: number) => `${attemptId}#${dispatchGeneration}`;
/** The attempt a launch (an {@link outboxIdFor} id) belongs to. */
export const attemptOfOutbox = (outboxId: string) => outboxId.slice(0, outboxId.lastIndexOf('#'));
/** The one run of an occurrence (one fence, one run). */
export const runIdFor = (occurrenceId: string) => `run-${occurrenceId}`.slice(0, 160);
/** Attempt n of a run, and the adoption key it is adopted under (attempt keys share the command key space). */
export const attemptIdFor = (runId: string, n: number) => `attempt-${runId}-${n}`.slice(0, 160);
export const attemptKeyFor = (runId: string, n: number) => `automation:${runId}:${n}`.slice(0, 200);
