import { Changefeed } from '../changefeed/changefeed.js';
import { ensureStoreId, readStoreId, type EventEnvelope, type StreamRef } from '../changefeed/event-envelope.js';
import { ContractError, isContractError, type ErrorEnvelope } from '../contract/errors.js';
import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import { isoNow, type Clock } from '../clock/clock.js';
import { StoreConflictError, StreamSequenceError, type Store, type StoreTransaction } from '../store/store.js';

/** How many times a command that lost a race with another writer is run again before the race is reported. */
const MAX_RACE_RETRIES = 8;
import { findAdoption, recordAdoption, replayMismatch, requestDigest, type AdoptionRecord } from './adoption.js';
import {
  DEFAULT_PRODUCER,
  defaultNewId,
  defaultRequirements,
  type CommandContext,
  type CommandHandlerOptions,
  type CommandOutcome,
  type RequirementsCheck,
} from './context.js';
import { createDefinition } from './definition-commands.js';
import { changeLifecycle, LIFECYCLE_COMMANDS } from './lifecycle-commands.js';
import { reviseDefinition } from './revise-definition.js';
import { getDefinition, listDefinitions } from './definition-reads.js';
import { DIAGNOSTIC_READS, type DiagnosticRead } from './diagnostic-reads.js';
import {
  checkEnvelope,
  peekIdentity,
  QUERY_COMMANDS,
  type CommandEnvelope,
  type CommandName,
  type CommandResponse,
  type DiagnosticCommand,
  type TypedCommandEnvelope,
} from './envelope.js';
import { AUTHORITY_COMMANDS } from './authority-commands.js';
import { setFlowLimits } from './flow-limits-commands.js';
import { flowReport } from '../domain/flow-report.js';
import type { CommittedTransition } from '../domain/inspection.js';
import { importLegacy } from './legacy-import.js';
import { PRIVACY_COMMANDS } from './erase-definition.js';
import type { ReadCaller } from '../domain/read-acl.js';
import { guardRead, readerOf } from './read-access.js';
import { READ_ACL_COMMANDS } from './read-acl-commands.js';
import { describeThrown, toPlainJson } from './plain-json.js';

/** The identity a rejection names when the input could not even be read as JSON. */
const UNKNOWN_IDENTITY = { command: 'unknown', adoptionKey: '' };

/** Commands whose effects belong to the scheduler, dispatcher and worker: executed only with an engine. */
const EXECUTION_COMMANDS: ReadonlySet<CommandName> = new Set([
  'occurrence.runNow.v1',
  'occurrence.cancel.v1',
  'occurrence.recover.v1',
  'run.cancel.v1',
  'attempt.cancel.v1',
  'attempt.retry.v1',
  'run.history.v1',
  'definition.health.v1',
  'x-coven-automata.run.output.v1',
]);

type Mutation = (ctx: CommandContext) => Promise<CommandOutcome>;

/**
 * The contract's command handler: one entry point, `handle`, for any input. Input is validated once at
 * the boundary; every answer is a CommandResponse (`committed`, `replayed` or `rejected`), never a throw.
 * A mutation commits its effects, its events and its adoption record in one store transaction, or nothing.
 *
 * @example
 * ```ts
 * const handler = new CommandHandler({ store, clock: systemClock });
 * const response = await handler.handle({
 *   schemaVersion: 'coven.automations.v1',
 *   command: 'definition.pause.v1',
 *   ...
 * });
 * if (response.outcome === 'rejected') console.error(response.error.code, response.error.message);
 * ```
 */
export class CommandHandler {
  readonly changefeed: Changefeed;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly requirements: RequirementsCheck;
  private readonly producer;
  private readonly newId: () => string;
  private readonly operator: CommandHandlerOptions['operator'];
  private readonly onCommitted: CommandHandlerOptions['onCommitted'];
  /** The store's id once a committed transaction has seen it stored. */
  private storeId: string | undefined;
  private candidateStoreId: string | undefined;

  constructor(options: CommandHandlerOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.requirements = options.requirements ?? defaultRequirements();
    this.producer = options.producer ?? DEFAULT_PRODUCER;
    this.newId = options.newId ?? defaultNewId;
    this.onCommitted = options.onCommitted;
    this.operator = options.operator;
    this.changefeed = new Changefeed(options.store, options.clock, options.checkpointTtlMs);
  }

  /**
   * Answers any input with a CommandResponse; the promise never rejects. Untrusted input is turned into plain
   * JSON data once, first, inside the guard (see {@link toPlainJson}), so no getter, Proxy trap or `toJSON`
   * of the caller's runs after that point, and every refusal of it is a typed error that wrote nothing.
   * `caller` is who the transport vouches for, which the read ACL judges reads by; without it, the envelope's
   * origin principal (in process, the embedder built the envelope).
   */
  handle<C extends CommandName>(envelope: TypedCommandEnvelope<C>, caller?: ReadCaller): Promise<CommandResponse<C>>;
  handle(raw: unknown, caller?: ReadCaller): Promise<CommandResponse>;
  async handle(raw: unknown, caller?: ReadCaller): Promise<CommandResponse> {
    let identity = UNKNOWN_IDENTITY;
    try {
      let envelope: CommandEnvelope;
      try {
        const value = toPlainJson(raw);
        identity = peekIdentity(value);
        envelope = checkEnvelope(value);
      } catch (error) {
        return this.rejected(identity, error);
      }
      return await this.execute(envelope, caller);
    } catch (error) {
      return this.rejected(identity, error);
    }
  }

  private async execute(envelope: CommandEnvelope, caller: ReadCaller | undefined): Promise<CommandResponse> {
    try {
      if (EXECUTION_COMMANDS.has(envelope.command) && this.operator === undefined) {
        throw new ContractError(
          'CAPABILITY_UNSUPPORTED',
          `${envelope.command} needs the scheduler and dispatcher: use a command handler from createEngine`,
          {
            contractProfile: SCHEMA_VERSION,
            variant: `command.${envelope.command}`,
            reason: 'this command handler runs without an engine',
          },
        );
      }
      if (!QUERY_COMMANDS.has(envelope.command)) return await this.mutateRetryingLostRaces(envelope);
      // The one read boundary: every read command is judged here, before anything of it is read.
      const reader = readerOf(envelope, caller);
      const hidden = await this.store.read((r) => guardRead(r, envelope.command, envelope.payload, reader));
      const operatorQuery = this.operator?.queries[envelope.command];
      if (operatorQuery !== undefined) return this.committed(envelope, await operatorQuery(envelope.payload));
      return this.committed(envelope, await this.query(envelope, hidden));
    } catch (error) {
      return this.rejected(envelope, error);
    }
  }

  /**
   * Live changefeed delivery; see {@link Changefeed.subscribe}. With a `caller`, the read ACL judges the
   * subscription as `events.subscribe.v1` before the first event and again before each one, so a stream (or the
   * global feed) that becomes restricted for that caller ends with AUTHORITY_REQUIRED instead of leaking. Without
   * one, the embedder reads as the store's owner.
   *
   * @example
   * ```ts
   * const ana = { as: 'principal', principalId: 'ana' } as const;
   * for await (const event of engine.commands.subscribe({ kind: 'automation', id: 'nightly' }, { caller: ana })) {}
   * ```
   */
  subscribe(
    stream: StreamRef,
    options: { after?: number; checkpoint?: string; signal?: AbortSignal; caller?: ReadCaller } = {},
  ): AsyncGenerator<EventEnvelope> {
    const { caller, ...delivery } = options;
    if (caller === undefined || caller.as === 'operator') return this.changefeed.subscribe(stream, delivery);
    return this.guardedSubscription(stream, delivery, caller);
  }

  private async *guardedSubscription(
    stream: StreamRef,
    options: { after?: number; checkpoint?: string; signal?: AbortSignal },
    caller: ReadCaller,
  ): AsyncGenerator<EventEnvelope> {
    const judge = () => this.store.read((r) => guardRead(r, 'events.subscribe.v1', { stream }, caller));
    await judge();
    for await (const event of this.changefeed.subscribe(stream, options)) {
      await judge();
      yield event;
    }
  }

  /** A read the ACL allowed; `hidden` are the automations a list must leave out. */
  private async query(envelope: CommandEnvelope, hidden: ReadonlySet<string>): Promise<Record<string, unknown>> {
    // The envelope schema already checked each payload's shape; these casts only name it.
    const p = envelope.payload;
    switch (envelope.command) {
      case 'definition.list.v1':
        return this.store.read((r) => listDefinitions(r, p as Parameters<typeof listDefinitions>[1], hidden));
      case 'definition.get.v1':
        return this.store.read((r) => getDefinition(r, p as Parameters<typeof getDefinition>[1]));
      case 'events.read.v1':
      case 'events.subscribe.v1': {
        const { stream, ...options } = p as {
          stream: StreamRef;
          after?: number;
          from?: string;
          checkpoint?: string;
          limit?: number;
        };
        return { ...(await this.changefeed.read(stream, options)) };
      }
      case 'x-coven-automata.limits.get.v1':
        return {
          ...(await this.store.read((r) =>
            flowReport(r, this.clock.now().getTime(), hidden, { unclaimedRates: true }),
          )),
        };
      default: {
        const diagnostic = DIAGNOSTIC_READS[envelope.command as DiagnosticCommand] as DiagnosticRead | undefined;
        if (diagnostic !== undefined) return diagnostic({ store: this.store, clock: this.clock, hidden }, p);
        throw new ContractError('INTERNAL', `no query handler for ${envelope.command}`);
      }
    }
  }

  private mutation(envelope: CommandEnvelope): Mutation {
    const operator = this.operator?.mutations[envelope.command];
    if (operator !== undefined) return operator;
    if (envelope.command === 'definition.create.v1') return createDefinition;
    if (envelope.command === 'definition.revise.v1') return reviseDefinition;
    if (envelope.command === 'legacy.import.v1') return importLegacy;
    if (envelope.command === 'x-coven-automata.limits.set.v1') return setFlowLimits;
    const registry =
      AUTHORITY_COMMANDS[envelope.command] ?? PRIVACY_COMMANDS[envelope.command] ?? READ_ACL_COMMANDS[envelope.command];
    if (registry !== undefined) return registry;
    const lifecycle = LIFECYCLE_COMMANDS[envelope.command];
    if (lifecycle !== undefined) return (ctx) => changeLifecycle(ctx, lifecycle);
    throw new ContractError('INTERNAL', `no mutation handler for ${envelope.command}`);
  }

  /**
   * A command whose transaction lost a race with another writer of the store (an engine process committing the
   * same occurrence or stream first, on PostgreSQL) rolled back whole: it is run again on the new state, so the
   * caller gets the contract's answer to the command, never the store's race. The adoption key keeps a retry
   * from doing anything twice; the caller's own `expectedRevision` check is a contract refusal, not a race.
   */
  private async mutateRetryingLostRaces(envelope: CommandEnvelope): Promise<CommandResponse> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.mutate(envelope);
      } catch (error) {
        const lostRace = error instanceof StoreConflictError || error instanceof StreamSequenceError;
        if (!lostRace || attempt >= MAX_RACE_RETRIES) throw error;
      }
    }
  }

  private async mutate(envelope: CommandEnvelope): Promise<CommandResponse> {
    const run = this.mutation(envelope);
    const digest = requestDigest(envelope);
    const dryRun = envelope.command === 'legacy.import.v1' && envelope.payload.dryRun === true;
    let afterCommit: (() => Promise<void>) | undefined;
    let rejection: ContractError | undefined;
    let storeId: string | undefined;
    let onRollback: (() => void) | undefined;
    const committed: CommittedTransition[] = [];
    const transaction = this.store.transact(async (tx: StoreTransaction) => {
      committed.length = 0;
      const prior = await findAdoption(tx, envelope, this.operator?.reads?.[envelope.command]?.(envelope.payload));
      if (prior !== undefined) {
        if (prior.requestDigest !== digest) throw replayMismatch(envelope.adoptionKey, prior);
        return this.replayed(envelope, prior);
      }
      const known = this.storeId ?? (await readStoreId(tx));
      // One candidate per handler until it is stored, so refusals consume no fresh identifiers.
      const id = known ?? (this.candidateStoreId ??= this.newId());
      const now = isoNow(this.clock);
      const outcome = await run({
        tx,
        envelope,
        now,
        feed: { producer: this.producer, storeId: id, now },
        requirements: this.requirements,
        committed,
      });
      afterCommit = outcome.afterCommit;
      onRollback = outcome.onRollback;
      // A dry run is a question, not a command: nothing of it, its key and a new store's id included, is stored.
      if (dryRun) return this.committed(envelope, outcome.result, outcome);
      // A fresh store's id is written by the first command that commits, in its transaction: never by a refusal.
      if (known === undefined) await ensureStoreId(tx, () => id);
      storeId = id;
      if (outcome.rejectAfterCommit !== undefined) {
        rejection = outcome.rejectAfterCommit;
        return undefined;
      }
      const record: AdoptionRecord = {
        command: envelope.command,
        requestDigest: digest,
        committedAt: now,
        result: outcome.result,
        ...(outcome.revision === undefined ? {} : { revision: outcome.revision }),
        ...(outcome.eventRef === undefined ? {} : { eventRef: outcome.eventRef }),
        ...(outcome.automationId === undefined ? {} : { automationId: outcome.automationId }),
      };
      await recordAdoption(tx, envelope.adoptionKey, record);
      return this.committed(envelope, outcome.result, outcome);
    });
    const response = await transaction.catch((error: unknown) => {
      onRollback?.();
      throw error;
    });
    // Only a committed transaction makes the id durable; a store id never changes once stored.
    if (storeId !== undefined) this.storeId = storeId;
    // A dry run commits nothing; a replay ran nothing; CANCEL_PENDING committed its request.
    if (committed.length > 0 && storeId !== undefined) this.handOn(committed);
    // Side effects go out only after the commit is durable; their failures surface through later passes.
    if (afterCommit !== undefined)
      await Promise.resolve()
        .then(afterCommit)
        .catch(() => undefined);
    return response ?? this.rejected(envelope, rejection);
  }

  private committed(
    envelope: CommandEnvelope,
    result: Record<string, unknown>,
    outcome?: CommandOutcome,
  ): CommandResponse {
    return {
      schemaVersion: SCHEMA_VERSION,
      command: envelope.command,
      adoptionKey: envelope.adoptionKey,
      outcome: 'committed',
      ...(outcome?.revision === undefined ? {} : { revision: outcome.revision }),
      result,
      ...(outcome?.eventRef === undefined ? {} : { eventRef: outcome.eventRef }),
    };
  }

  private replayed(envelope: CommandEnvelope, prior: AdoptionRecord): CommandResponse {
    return {
      schemaVersion: SCHEMA_VERSION,
      command: envelope.command,
      adoptionKey: envelope.adoptionKey,
      outcome: 'replayed',
      replay: { firstCommittedAt: prior.committedAt },
      ...(prior.revision === undefined ? {} : { revision: prior.revision }),
      result: structuredClone(prior.result),
      ...(prior.eventRef === undefined ? {} : { eventRef: { ...prior.eventRef } }),
    };
  }

  /** Hands a committed command's transitions on; a listener that throws cannot turn a durable commit into a refusal. */
  private handOn(transitions: CommittedTransition[]): void {
    try {
      this.onCommitted?.(transitions);
    } catch {
      // The commit stands; what the listener missed, the changefeed still has.
    }
  }

  private rejected(identity: { command: string; adoptionKey: string }, error: unknown): CommandResponse {
    const typed = isTyped(error) ? error : new ContractError('INTERNAL', `internal error: ${describeThrown(error)}`);
    const envelope: CommandResponse['error'] = typed.toEnvelope() as ErrorEnvelope;
    const adoption = (typed as { adoption?: { key: string; conflictOutcome?: 'committed' | 'rejected' } }).adoption;
    if (adoption !== undefined) envelope!.adoption = adoption;
    envelope!.message = envelope!.message.slice(0, 1000) || typed.code;
    return {
      schemaVersion: SCHEMA_VERSION,
      command: identity.command,
      adoptionKey: identity.adoptionKey,
      outcome: 'rejected',
      error: envelope,
    };
  }
}

/** isContractError that cannot throw: `instanceof` runs a Proxy's getPrototypeOf trap, and a revoked one throws. */
function isTyped(error: unknown): error is ContractError {
  try {
    return isContractError(error);
  } catch {
    return false;
  }
}
