import { randomUUID } from 'node:crypto';
import { DefinitionState, isOccurrenceTerminal } from '../../machines/states.js';
import type { EventEnvelope, StreamRef } from '../changefeed/event-envelope.js';
import { integrityOf } from '../contract/digest.js';
import type {
  DefinitionGetResult,
  DefinitionLifecycleResult,
  DefinitionListResult,
  DefinitionRevisionResult,
  OccurrenceGetResult,
  RunHistoryResult,
  RunNowResult,
} from '../command-handler/command-results.js';
import type {
  CommandError,
  CommandName,
  CommandResponse,
  ResultOf,
  TypedCommandEnvelope,
} from '../command-handler/envelope.js';
import type { AutomationDefinition, LifecycleState } from '../domain/definition-body.js';

/** What the client sends commands through: an engine's `commands` (a `CommandHandler`) or anything shaped like it. */
export interface CommandPort {
  handle<C extends CommandName>(envelope: TypedCommandEnvelope<C>): Promise<CommandResponse<C>>;
  subscribe(stream: StreamRef, options?: { after?: number; signal?: AbortSignal }): AsyncIterable<EventEnvelope>;
}

/** A command's answer as the client gives it: its result, or the contract's error. Never a throw. */
export type Outcome<T> =
  { ok: true; value: T; replayed: boolean; error?: undefined } | { ok: false; error: CommandError; value?: undefined };

/** Per-call choices: the adoption key that makes a retried call a replay, and why the call is made. */
export interface CallOptions {
  /** The command's adoption key; a fresh one by default. Pass your own to make a retry of this call a replay. */
  adoptionKey?: string;
  /** The intent statement recorded with the command. */
  intent?: string;
}

export interface AutomationClientOptions {
  /** The principal the client's commands act for; `sdk` by default. */
  principal?: string;
  /** Source of fresh adoption keys; random by default. */
  newKey?: () => string;
}

/** States a revise leaves in place; a draft or invalid definition moves to paused. */
const REVISED_IN_PLACE: ReadonlySet<string> = new Set([DefinitionState.paused, DefinitionState.active]);

/**
 * A small typed client over a command handler: builds each envelope (origin, intent, adoption key), reads the
 * revision a mutation expects, and answers every call with an {@link Outcome} whose value is the command's typed
 * result. Everything it does is an ordinary contract command, so the changefeed and the adoption log show it.
 *
 * @example
 * ```ts
 * import { AutomationClient, createEngine, defineFunctionAutomation, MemoryStore } from 'coven-automata';
 *
 * const notes = defineFunctionAutomation({
 *   id: 'daily-notes',
 *   schedule: 'FREQ=DAILY;BYHOUR=9',
 *   handler: async () => 'notes written',
 * });
 * const engine = createEngine({ store: new MemoryStore(), runtimes: [notes.runtime] });
 * const client = new AutomationClient(engine);
 * const activated = await client.createAndActivate(notes.definition);
 * if (!activated.ok) throw new Error(`${activated.error.code}: ${activated.error.message}`);
 * console.log(activated.value.lifecycleState); // 'active'
 * ```
 */
export class AutomationClient {
  private readonly port: CommandPort;
  private readonly principal: string;
  private readonly newKey: () => string;

  constructor(target: CommandPort | { commands: CommandPort }, options: AutomationClientOptions = {}) {
    this.port = 'commands' in target ? target.commands : target;
    this.principal = options.principal ?? 'sdk';
    this.newKey = options.newKey ?? (() => `sdk-${randomUUID()}`);
  }

  /**
   * Sends any command with `payload`, and `expectedRevision` when the command mutates a definition.
   *
   * @example
   * ```ts
   * const health = await client.send('definition.health.v1', { automationId: 'daily-notes' });
   * if (health.ok) console.log(health.value.health.nextDueAt);
   * ```
   */
  async send<C extends CommandName>(
    command: C,
    payload: Record<string, unknown>,
    options: CallOptions & { expectedRevision?: number } = {},
  ): Promise<Outcome<ResultOf<C>>> {
    const response = await this.port.handle({
      schemaVersion: 'coven.automations.v1',
      command,
      adoptionKey: options.adoptionKey ?? this.newKey(),
      ...(options.expectedRevision === undefined ? {} : { expectedRevision: options.expectedRevision }),
      origin: { principal: { principalId: this.principal }, channel: 'sdk' },
      intent: { statement: options.intent ?? `${command} from the embedding client` },
      payload,
    });
    if (response.outcome === 'rejected') return { ok: false, error: response.error };
    return { ok: true, value: response.result, replayed: response.outcome === 'replayed' };
  }

  /**
   * Creates a definition built by `defineAutomation` (revision 1, draft), revises it to paused and activates it:
   * three commands, each expecting the revision the one before wrote. Their adoption keys derive from the
   * definition's id and digest (or from `adoptionKey`), so running the same program again replays all three and
   * answers as the first time did. A definition that exists with another body is refused (REVISION_CONFLICT):
   * change it with {@link revise}.
   */
  async createAndActivate(
    definition: AutomationDefinition,
    options: CallOptions = {},
  ): Promise<Outcome<DefinitionLifecycleResult>> {
    const base = options.adoptionKey ?? `sdk:${definition.automationId}:${definition.integrity.value.slice(0, 32)}`;
    const intent = options.intent ?? `create and activate ${definition.automationId}`;
    const created = await this.send('definition.create.v1', { definition }, { adoptionKey: `${base}:create`, intent });
    if (!created.ok) return created;
    const paused = nextRevision(created.value.definition, DefinitionState.paused);
    const revised = await this.send(
      'definition.revise.v1',
      { definition: paused },
      { adoptionKey: `${base}:revise`, intent, expectedRevision: created.value.revision },
    );
    if (!revised.ok) return revised;
    return this.send(
      'definition.activate.v1',
      { automationId: definition.automationId },
      { adoptionKey: `${base}:activate`, intent, expectedRevision: revised.value.revision },
    );
  }

  /**
   * Revises a definition to `definition`'s body (its revision, state and digest are set here): the current
   * revision is read first and expected, so a concurrent change is refused (REVISION_CONFLICT), never overwritten.
   */
  async revise(
    definition: AutomationDefinition,
    options: CallOptions = {},
  ): Promise<Outcome<DefinitionRevisionResult>> {
    const current = await this.get(definition.automationId);
    if (!current.ok) return current;
    const state = REVISED_IN_PLACE.has(current.value.lifecycleState)
      ? current.value.lifecycleState
      : DefinitionState.paused;
    const body = nextRevision({ ...definition, revision: current.value.revision }, state as LifecycleState);
    return this.send(
      'definition.revise.v1',
      { definition: body },
      { ...options, expectedRevision: current.value.revision },
    );
  }

  /** Activates a paused definition, expecting its current revision. */
  activate(automationId: string, options: CallOptions = {}): Promise<Outcome<DefinitionLifecycleResult>> {
    return this.lifecycle('definition.activate.v1', automationId, options);
  }

  /** Pauses an active definition, expecting its current revision. */
  pause(automationId: string, options: CallOptions = {}): Promise<Outcome<DefinitionLifecycleResult>> {
    return this.lifecycle('definition.pause.v1', automationId, options);
  }

  private async lifecycle<C extends 'definition.activate.v1' | 'definition.pause.v1'>(
    command: C,
    automationId: string,
    options: CallOptions,
  ): Promise<Outcome<ResultOf<C>>> {
    const current = await this.get(automationId);
    if (!current.ok) return current;
    return this.send(command, { automationId }, { ...options, expectedRevision: current.value.revision });
  }

  /** Starts a manual occurrence of an active definition now; its result names the occurrence. */
  runNow(automationId: string, options: CallOptions = {}): Promise<Outcome<RunNowResult>> {
    return this.send('occurrence.runNow.v1', { automationId }, options);
  }

  /** The definition's current body and state, or the body of one historic `revision`. */
  get(automationId: string, options: { revision?: number } = {}): Promise<Outcome<DefinitionGetResult>> {
    return this.send('definition.get.v1', {
      automationId,
      ...(options.revision === undefined ? {} : { revision: options.revision }),
    });
  }

  /** One page of definitions (tombstoned ones only when asked for by state or `all`). */
  list(
    options: { lifecycleState?: LifecycleState | 'tombstoned' | 'all'; limit?: number; cursor?: string } = {},
  ): Promise<Outcome<DefinitionListResult>> {
    return this.send('definition.list.v1', { ...options });
  }

  /** One occurrence with its runs, their attempts and each attempt's receipt verification. */
  occurrence(occurrenceId: string): Promise<Outcome<OccurrenceGetResult>> {
    return this.send('occurrence.get.v1', { occurrenceId });
  }

  /** The automation's runs, newest first, each with its attempts. */
  history(
    automationId: string,
    options: { occurrenceId?: string; limit?: number; cursor?: string } = {},
  ): Promise<Outcome<RunHistoryResult>> {
    return this.send('run.history.v1', { automationId, ...options });
  }

  /**
   * The changes of one automation (its id), or of any stream, as they commit: every event after `after` (from
   * the start by default), then each new one, until `signal` aborts.
   */
  subscribe(
    stream: string | StreamRef,
    options: { after?: number; signal?: AbortSignal } = {},
  ): AsyncIterable<EventEnvelope> {
    const ref: StreamRef = typeof stream === 'string' ? { kind: 'automation', id: stream } : stream;
    return this.port.subscribe(ref, options);
  }

  /**
   * Waits until an occurrence settles (succeeded, failed, cancelled, ...) and answers it with its runs. It waits on
   * the occurrence's changefeed, so the engine must be running (`engine.start()`) or ticked by someone else. A run
   * held for an operator retry stays `running` until its deadline: pass a `signal` to stop waiting; an abort
   * rejects with the signal's reason.
   */
  async settled(occurrenceId: string, options: { signal?: AbortSignal } = {}): Promise<Outcome<OccurrenceGetResult>> {
    const signal = options.signal;
    signal?.throwIfAborted();
    // Listening before the first read, so an abort while it runs is not missed.
    const following = new AbortController();
    const stop = () => following.abort();
    signal?.addEventListener('abort', stop, { once: true });
    try {
      const first = await this.occurrence(occurrenceId);
      if (!first.ok || isOccurrenceTerminal(first.value.occurrence.state)) return first;
      const stream = { kind: 'occurrence', id: occurrenceId } as const;
      for await (const _event of this.port.subscribe(stream, { signal: following.signal })) {
        const now = await this.occurrence(occurrenceId);
        if (!now.ok || isOccurrenceTerminal(now.value.occurrence.state)) return now;
      }
      signal?.throwIfAborted();
      return await this.occurrence(occurrenceId);
    } finally {
      following.abort();
      signal?.removeEventListener('abort', stop);
    }
  }
}

/** The next revision of a body in `lifecycleState`, its digest recomputed. */
function nextRevision(body: AutomationDefinition, lifecycleState: LifecycleState): AutomationDefinition {
  const { integrity: _old, ...rest } = body;
  const next = { ...rest, revision: body.revision + 1, lifecycleState };
  return { ...next, integrity: integrityOf(next as Record<string, unknown>) };
}
