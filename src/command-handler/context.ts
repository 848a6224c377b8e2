import type { CommittedTransition } from '../domain/inspection.js';
import { randomUUID } from 'node:crypto';
import type { ChangefeedContext, ProducerIdentity } from '../changefeed/event-envelope.js';
import type { RequirementsVerdict } from '../guards/common.js';
import type { Clock } from '../clock/clock.js';
import type { Store, StoreTransaction } from '../store/store.js';
import type { CommandEnvelope } from './envelope.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import type { LaunchOutcome, QueuedLaunch } from '../domain/launch-outcome.js';
import type { StepContext } from '../domain/lifecycle.js';

/** Decides whether a definition's familiar, authority and runtime requirements can be met right now. */
export type RequirementsCheck = (definition: AutomationDefinition) => RequirementsVerdict;

export interface CommandHandlerOptions {
  store: Store;
  clock: Clock;
  producer?: ProducerIdentity;
  /** Source of fresh identifiers (store id, checkpoints); injected so tests can be deterministic. */
  newId?: () => string;
  requirements?: RequirementsCheck;
  /** Lifetime of an events.read checkpoint. */
  checkpointTtlMs?: number;
  /** The occurrence/run/attempt commands, supplied by an engine; without one they answer CAPABILITY_UNSUPPORTED. */
  operator?: OperatorCommands;
  /**
   * Hears the lifecycle transitions a command committed (a run-now's plan and claim, a cancel, a backfill's plans),
   * once they are durable: the engine's tracing.
   */
  onCommitted?: (transitions: CommittedTransition[]) => void;
}

/**
 * What a mutation reads before it writes, named before it runs: a store where each read is a round trip fetches
 * it with the command's adoption record (see `StoreTransaction.prefetch`). A guess that turns out wrong costs only
 * its row: the mutation still reads what it reads.
 */
export interface CommandReads {
  readonly records?: ReadonlyArray<readonly [kind: string, id: string]>;
  /** The automation whose live occurrences the mutation asks (its overlap check). */
  readonly liveOccurrencesOf?: string;
}

/** Commands whose effects need the scheduler, dispatcher and worker. */
export interface OperatorCommands {
  mutations: Partial<Record<string, (ctx: CommandContext) => Promise<CommandOutcome>>>;
  queries: Partial<Record<string, (payload: Record<string, unknown>) => Promise<Record<string, unknown>>>>;
  /** What some of the mutations read first (see {@link CommandReads}), by command. */
  reads?: Partial<Record<string, (payload: Record<string, unknown>) => CommandReads>>;
}

/** How an engine's dispatcher launches a claimed occurrence at once, as the operator commands ask it to. */
export interface ImmediateLaunches {
  /** Accepts and launches one claimed occurrence now, in the dispatcher's own commits. */
  dispatch(occurrenceId: string): Promise<LaunchOutcome | undefined>;
  /**
   * Accepts the run of an occurrence claimed in `step`'s transaction, queues its launch and marks it `sending`
   * there, so the claim, the acceptance and the send are one commit; undefined when there is nothing to launch.
   */
  queue(step: StepContext, occurrenceId: string): Promise<QueuedLaunch | undefined>;
}

/** Everything one command needs while it runs inside its store transaction. */
export interface CommandContext {
  tx: StoreTransaction;
  envelope: CommandEnvelope;
  now: string;
  feed: ChangefeedContext;
  requirements: RequirementsCheck;
  /** Collects the lifecycle transitions the command makes, handed on once it committed. */
  committed?: CommittedTransition[];
}

export interface CommandOutcome {
  result: Record<string, unknown>;
  revision?: number;
  eventRef?: { stream: string; sequence: number };
  /** The definition the command concerns, reported on a replay mismatch. */
  automationId?: string;
  /** Side effects released only once the transaction is durable (a launch, a session stop). */
  afterCommit?: () => Promise<void>;
  /** Run when the transaction does not commit: undoes what the command took on in memory for its side effects. */
  onRollback?: () => void;
  /**
   * Commit the writes but answer this error, without an adoption record: a cancellation request is durable
   * while the answer stays CANCEL_PENDING until the runtime acknowledges.
   */
  rejectAfterCommit?: import('../contract/errors.js').ContractError;
}

export const DEFAULT_PRODUCER: ProducerIdentity = { component: 'coven-automata', instanceId: 'coven-automata@local' };
export const defaultNewId = (): string => randomUUID().replace(/-/g, '');

/** Familiar and authority must be bound; a runtime must be named (and known, when a runtime list is given). */
export function defaultRequirements(knownRuntimes?: readonly string[]): RequirementsCheck {
  return (definition) => ({
    familiar: typeof definition.binding.familiarId === 'string' && definition.binding.familiarId.length > 0,
    authority: typeof definition.binding.authority?.approvalPolicyRef === 'string',
    runtime:
      definition.runtimeRequirements !== undefined &&
      (knownRuntimes === undefined || knownRuntimes.includes(definition.runtimeRequirements.runtimeId)),
    ...(knownRuntimes === undefined ? {} : { registeredRuntimes: knownRuntimes }),
  });
}
