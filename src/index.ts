/**
 * coven-automata: an orchestration engine for the coven.automations.v1 contract, built on XState v5.
 *
 * @example
 * ```ts
 * import { AutomationClient, createEngine, defineFunctionAutomation, JsonFileStore } from 'coven-automata';
 *
 * const notes = defineFunctionAutomation({
 *   id: 'daily-notes',
 *   schedule: 'FREQ=DAILY;BYHOUR=9',
 *   handler: async (request) => `ran ${request.prompt}`,
 * });
 * const store = await JsonFileStore.open('automations.json');
 * const engine = createEngine({ store, runtimes: [notes.runtime] });
 * const client = new AutomationClient(engine); // typed commands: createAndActivate, runNow, get, list, subscribe
 * const activated = await client.createAndActivate(notes.definition);
 * if (!activated.ok) console.error(activated.error.code, activated.error.message);
 * engine.start();
 * ```
 *
 * The invariant suite, its self-check and the conformance runner are in `coven-automata/testkit`, so this entry
 * loads none of their property-testing and graph-walking libraries.
 * @packageDocumentation
 */

// The engine and its commands
export { createEngine, Engine, type EngineOptions, type TickReport } from './engine/engine.js';
export { systemTimers, type EngineTimers, type PassTrigger } from './engine/timers.js';
export { StaleGenerationError, type Leadership } from './domain/scheduler-generation.js';
export {
  DEFAULT_RETENTION_DAYS,
  RETENTION_CLASSES,
  type RetentionClass,
  type RetentionOptions,
} from './retention/policy.js';
export { SimulatedClock, systemClock, type Clock } from './clock/clock.js';
export { CommandHandler } from './command-handler/command-handler.js';
export {
  CONTRACT_COMMANDS,
  EXTENSION_COMMANDS,
  decodeCommand,
  type CommandEnvelope,
  type CommandError,
  type CommandResponse,
  type CommittedResponse,
  type ReplayedResponse,
  type RejectedResponse,
  type TypedCommandEnvelope,
  type CommandName,
  type CommandResults,
  type ResultOf,
} from './command-handler/envelope.js';
export type * from './command-handler/command-results.js';

// The typed embedding API: definitions from a few fields, and a client that keeps keys and revisions
export {
  defineAutomation,
  defineFunctionAutomation,
  EMBEDDED_APPROVAL_POLICY,
  type AutomationOptions,
  type AutomationSpec,
  type FunctionAutomation,
  type FunctionAutomationSpec,
  type HandlerResult,
  type ScheduleSpec,
} from './client/define-automation.js';
export {
  AutomationClient,
  type AutomationClientOptions,
  type CallOptions,
  type CommandPort,
  type Outcome,
} from './client/automation-client.js';
export type { AutomationDefinition, LifecycleState } from './domain/definition-body.js';
export { renderOccurrence, renderRun, renderAttempt, type Receipt } from './domain/records.js';

// Stores
export { MemoryStore } from './store/memory-store.js';
export { JsonFileStore, type JsonFileStoreOptions } from './store/json/index.js';
export { SqliteStore, type SqliteStoreOptions } from './store/sqlite/index.js';
export {
  PostgresStore,
  PostgresSchemaError,
  StoreUnavailableError,
  type PostgresStoreOptions,
} from './store/postgres/index.js';
export {
  openStore,
  storeKindFor,
  isPostgresUrl,
  type FileStore,
  type FileStoreKind,
  type PostgresUrl,
} from './store/open-store.js';
export {
  StoreConflictError,
  StoreCorruptError,
  StoreLockedError,
  StoreReadOnlyError,
  StoreClosedError,
  StoreDriverMissingError,
  StreamSequenceError,
  TerminalRecordError,
  LogTrimError,
  type ListOptions,
  type Store,
  type StoreReader,
  type StoreTransaction,
  type StoredRecord,
  type LogEntry,
  type RecordVersion,
} from './store/store.js';

// Runtimes
export type {
  EvidenceLocation,
  Runtime,
  LaunchRequest,
  LaunchResult,
  Observation,
  SessionExit,
} from './runtime/runtime.js';
export { SimulatedRuntime, type SimulatedBehavior } from './runtime/simulated-runtime.js';
export { FunctionRuntime, type FunctionResult } from './runtime/function-runtime.js';
export { ChildProcessRuntime, type ChildProcessRuntimeOptions } from './runtime/child-process-runtime.js';
export { CwdRoots } from './runtime/cwd-roots.js';
export { SupervisedRuntime, type SupervisedRuntimeOptions } from './runtime/supervised-runtime.js';
export { PostgresSessionEvidence } from './runtime/postgres-session-evidence.js';
export { confineCwd, type ConfinedRuntime } from './command-handler/cwd-requirements.js';
export { defaultRequirements, type RequirementsCheck } from './command-handler/context.js';
export { CHILD_ENV_ALLOWLIST } from './runtime/child-env.js';

// Changefeed
export { Changefeed, type ReadPage } from './changefeed/changefeed.js';
export { StreamReducer } from './changefeed/reducer.js';
export { readEventFeed, readEventLog } from './changefeed/stored-event.js';
export type { EventEnvelope, EventKind, StreamRef } from './changefeed/event-envelope.js';

// Machines, single entities, the contract
export {
  definitionMachine,
  occurrenceMachine,
  runMachine,
  attemptMachine,
  lifecycleMachines,
} from '../machines/index.js';
// The typed state and event constants of every generated machine (OccurrenceState.running, isRunTerminal, ...):
// generated beside the machines and importing nothing, so they cost the light entry nothing.
export * from '../machines/states.js';
export * from '../machines/extension-states.js';
export { PersistentActor, type PersistentActorOptions } from './actors/persistent-actor.js';
export {
  transitionEntity,
  createEntity,
  type EntityRecord,
  type EntityTransition,
} from './actors/entity-transition.js';
export {
  ContractError,
  ERROR_HTTP_STATUS,
  isContractError,
  type ErrorCode,
  type ErrorEnvelope,
} from './contract/errors.js';
export { canonicalJson, jcsSha256, integrityOf, verifyIntegrity, type Digest } from './contract/digest.js';
export { validateAgainst, type SchemaName } from './contract/schemas.js';
export { CAPABILITY_PROFILE } from './contract/capabilities.js';
export { AtomicFileDelivery, type DeliveryCommit, type OutputDelivery } from './runtime/output-delivery.js';
export { Schedule } from './schedule/schedule.js';
export {
  EXTENSION_TRIGGER_RRULE,
  extensionTrigger,
  makeSchedule,
  SCHEDULE_EXTENSION,
  type ScheduleExtension,
  type ScheduleTerms,
} from './schedule/schedule-extension.js';
export type { SlotSchedule } from './schedule/zoned-schedule.js';
export { OVERLAP_EXTENSION, type OverlapExtension } from './schedule/overlap-extension.js';
export { LIMITS_EXTENSION, type FlowLimits, type LimitsExtension, type RateLimit } from './domain/flow-limits.js';
export { flowReport, type FlowReport, type GateReport } from './domain/flow-report.js';
export { occurrenceSpanIdOf, traceIdOf, traceparentOf } from './runtime/trace-context.js';
export type { CommitTracing } from './domain/inspection.js';
export { parseRrule, type ScheduleRule } from './schedule/rrule.js';
export { loadLifecycleSpec, type LifecycleSpec } from './spec/lifecycle-spec.js';
