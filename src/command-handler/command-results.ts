import type { AttemptState, DefinitionState, OccurrenceState, RunState } from '../../machines/states.js';
import type { ReadPage } from '../changefeed/changefeed.js';
import type { Digest } from '../contract/digest.js';
import type { AutomationDefinition } from '../domain/definition-body.js';

// What each command answers in `result` when it commits or replays. The wire shape is the handler's; these types
// name it, so an embedder reads `response.result.occurrenceId` without a cast. They are aliases, not interfaces, so
// each stays assignable to the handler's `Record<string, unknown>`.

/** The result of definition.create.v1 and definition.revise.v1: the revision written and its state. */
export type DefinitionRevisionResult = {
  automationId: string;
  revision: number;
  lifecycleState: DefinitionState;
  definition: AutomationDefinition;
};

/** The result of definition.activate/pause/disable/tombstone.v1 and the re-enable extension. */
export type DefinitionLifecycleResult = {
  automationId: string;
  lifecycleState: DefinitionState;
  revision: number;
  reason?: string;
  tombstoned?: true;
  tombstonedAt?: string;
  cancelledOccurrences?: string[];
};

/** One row of definition.list.v1. */
export type DefinitionSummary = {
  automationId: string;
  name: string;
  lifecycleState: DefinitionState;
  revision: number;
  tombstonedAt: string | null;
};

/** A page cursor: `next` is present when `hasMore`. */
export type PageCursor = { hasMore: boolean; next?: string; current?: string };

/** The result of definition.list.v1. */
export type DefinitionListResult = {
  definitions: DefinitionSummary[];
  revisionById: Record<string, number>;
  tombstonedAtById: Record<string, string>;
  cursor: PageCursor;
};

/** The result of definition.get.v1: the body at `revision` (the current one unless a revision was asked for). */
export type DefinitionGetResult = {
  automationId: string;
  revision: number;
  currentRevision: number;
  lifecycleState: DefinitionState;
  tombstonedAt: string | null;
  definition: AutomationDefinition;
};

/** An occurrence as the contract's AutomationOccurrence (automation-occurrence.schema.json). */
export type OccurrenceRecordView = {
  schemaVersion: 'coven.automations.v1';
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  definitionDigest?: Digest;
  triggerIdentity: Record<string, unknown> & { kind: string };
  occurrenceKey: string;
  scheduledFor: string;
  observedAt?: string;
  eligibleAt?: string;
  state: OccurrenceState;
  stateReason: string;
  fence: { generation: number; claimedBy?: string; leaseExpiresAt?: string };
  misfireDisposition?: string;
  claimMetadata?: Record<string, unknown>;
  activeRunRef?: string;
  cancellation?: Record<string, unknown> & { requestedAt: string };
  recovery?: Record<string, unknown> & { enteredAt: string };
  createdAt: string;
  updatedAt: string;
};

/** How a run ended (automation-run.schema.json's terminalDisposition). */
export type TerminalDisposition = {
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'ambiguous';
  failureClass?: string;
  detail?: string;
};

/** A run as the contract's AutomationRun (automation-run.schema.json). */
export type RunRecordView = {
  schemaVersion: 'coven.automations.v1';
  runId: string;
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  definitionDigest?: Digest;
  binding: Record<string, unknown>;
  state: RunState;
  stateReason?: string;
  attemptCount: number;
  currentAttemptId?: string;
  deadlineAt?: string;
  terminalDisposition?: TerminalDisposition;
  receiptRef?: string;
  startedAt: string;
  finishedAt?: string;
};

/** An attempt as the contract's AutomationAttempt (automation-attempt.schema.json). */
export type AttemptRecordView = {
  schemaVersion: 'coven.automations.v1';
  attemptId: string;
  runId: string;
  occurrenceId: string;
  attemptNumber: number;
  adoptionKey: string;
  priorDisposition?: Record<string, unknown> & { attemptNumber: number; outcome: string };
  dispatchFence: { occurrenceFenceGeneration: number; dispatchGeneration: number };
  workerCorrelation?: Record<string, unknown> & { workerId: string };
  retryClassification?: Record<string, unknown> & { classification: string };
  outputCursors?: { eventCursor?: number | string; logCursor?: number | string };
  state: AttemptState;
  stateReason?: string;
  notBefore?: string;
  openedAt?: string;
  settledAt?: string;
};

/** An attempt with its receipt's verification (null until it settles). */
export type AttemptWithReceipt = AttemptRecordView & {
  receipt: { receiptId: string; disposition: string; verified: boolean } | null;
};

/** A run with the attempts the store holds for it. */
export type RunWithAttempts = RunRecordView & { attempts: AttemptWithReceipt[] };

/** How many attempt receipts verify, do not, or are not written yet. */
export type ReceiptSummary = { verified: number; unverified: number; pending: number };

/** The result of run.history.v1: runs newest first, each with its attempts. */
export type RunHistoryResult = {
  automationId: string;
  occurrenceId?: string;
  runs: Array<RunRecordView & { attempts: AttemptRecordView[] }>;
  cursor: PageCursor;
};

/** The result of definition.health.v1. */
export type DefinitionHealthResult = {
  health: {
    automationId: string;
    lifecycleState: DefinitionState;
    revision: number;
    nextDueAt: string | null;
    lastPlannedAt: string | null;
    lastStartedAt: string | null;
    lastSuccessAt: string | null;
    consecutiveFailures: number;
    leaseOwner: string | null;
    leaseExpiresAt: string | null;
    quarantined: boolean;
    staleReason: string | null;
    liveOccurrences: OccurrenceRecordView[];
    engineLiveOccurrences: number;
  };
};

/** The result of occurrence.runNow.v1: the manual occurrence, claimed, its launch queued. */
export type RunNowResult = {
  automationId: string;
  occurrenceId: string;
  occurrenceKey: string;
  status: 'claimed';
  leaseExpiresAt: string;
};

/** The result of occurrence.cancel.v1, run.cancel.v1 and attempt.cancel.v1 once the cancellation is done. */
export type CancelResult = { occurrenceId: string; runId?: string; status: 'cancelled'; requestedAt: string };

/** The result of attempt.retry.v1: the new attempt, planned. */
export type RetryResult = {
  runId: string;
  occurrenceId: string;
  attemptId: string;
  attemptNumber: number;
  priorDisposition: AttemptState;
  status: 'planned';
  retriedAt: string;
};

/** The result of occurrence.recover.v1: settled failed, or a recovery attempt dispatching. */
export type RecoverResult = {
  occurrenceId: string;
  evidenceDetermination: string;
  statement: string;
  recoveredAt: string;
  status: 'failed' | 'dispatching';
  runId?: string;
  attemptId?: string;
  attemptNumber?: number;
};

/** The result of events.read.v1 and events.subscribe.v1: one page of a stream. */
export type EventsPageResult = ReadPage;

/** The result of occurrence.list.v1: one view's page, newest slot first. */
export type OccurrenceListResult = {
  view: string;
  automationId?: string;
  asOf: string;
  occurrences: OccurrenceRecordView[];
  cursor: PageCursor;
};

/** The result of occurrence.get.v1: the occurrence with its runs, their attempts and receipts. */
export type OccurrenceGetResult = {
  occurrence: OccurrenceRecordView;
  runs: RunWithAttempts[];
  receipts: ReceiptSummary;
};

/** The result of run.get.v1. */
export type RunGetResult = { run: RunWithAttempts; receipts: ReceiptSummary };

/** The result of each command this engine has given a named shape (see `CommandResults` for every command). */
export type TypedResults = {
  'definition.create.v1': DefinitionRevisionResult;
  'definition.revise.v1': DefinitionRevisionResult;
  'definition.activate.v1': DefinitionLifecycleResult;
  'definition.pause.v1': DefinitionLifecycleResult;
  'definition.disable.v1': DefinitionLifecycleResult;
  'definition.tombstone.v1': DefinitionLifecycleResult;
  'x-coven-automata.definition.reenable.v1': DefinitionLifecycleResult;
  'definition.list.v1': DefinitionListResult;
  'definition.get.v1': DefinitionGetResult;
  'definition.health.v1': DefinitionHealthResult;
  'occurrence.runNow.v1': RunNowResult;
  'occurrence.cancel.v1': CancelResult;
  'run.cancel.v1': CancelResult;
  'attempt.cancel.v1': CancelResult;
  'attempt.retry.v1': RetryResult;
  'occurrence.recover.v1': RecoverResult;
  'run.history.v1': RunHistoryResult;
  'events.read.v1': EventsPageResult;
  'events.subscribe.v1': EventsPageResult;
  'occurrence.list.v1': OccurrenceListResult;
  'occurrence.get.v1': OccurrenceGetResult;
  'run.get.v1': RunGetResult;
};
