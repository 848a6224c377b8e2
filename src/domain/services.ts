import { hostname } from 'node:os';
import { isQuarantined as quarantineState } from './quarantine.js';
import { DefinitionState } from '../../machines/index.js';
import { ensureStoreId, type ProducerIdentity } from '../changefeed/event-envelope.js';
import { readEntity, type EntityRecord } from '../actors/entity-transition.js';
import { ContractError } from '../contract/errors.js';
import type { Store, StoreReader, StoreTransaction } from '../store/store.js';
import type { Runtime } from '../runtime/runtime.js';
import type { OutputDelivery } from '../runtime/output-delivery.js';
import { makeSchedule, scheduleKey, type ScheduleTerms } from '../schedule/schedule-extension.js';
import type { SlotSchedule } from '../schedule/zoned-schedule.js';
import { DefinitionDirectory, type PlanCursor } from './definition-directory.js';
import { VersionedRecords } from './versioned-records.js';
import { isoNow, type Clock } from '../clock/clock.js';
import type { StepContext } from './lifecycle.js';
import { KINDS } from './records.js';
import { WaitingWork } from './flow-limits.js';
import type { CommitTracing, CommittedTransition } from './inspection.js';
import { DEFINITION_KIND, type DefinitionAttributes, type DefinitionRecord } from './definition-records.js';

import type { ActorSteps } from './actor-steps.js';
/**
 * How long a claim holds its occurrence without its owner (upstream's scheduler holds one for an hour). The
 * owner renews its own lease while it lives (see owner-lease.ts), so only a dead owner's claims lapse, and
 * what a dead owner left undecided waits this long at most for recovery.
 */
export const DEFAULT_LEASE_SECONDS = 15;
/** Distinct (rule, zone) expanders kept: far more than installations use, and a bound on what they cost. */
export const SCHEDULE_CACHE_SIZE = 1024;
/**
 * Items a pass phase works on at once: their commits fold into one store transaction, so a burst writes each
 * page once per group, while a group stays small enough to bound memory (the choice is measured in
 * docs/performance.md).
 */
export const DEFAULT_PASS_CONCURRENCY = 64;
/**
 * Plans a pass makes at once. A plan is one small transaction on its own definition's records, with no
 * runtime call between steps, so it can fill the stores' largest group (256) and a burst commits in a
 * quarter of the groups.
 */
export const DEFAULT_PLAN_CONCURRENCY = 256;

/** What the scheduler, dispatcher and worker share: the store, time, runtimes and identity. */
export class EngineServices {
  private storeIdPromise: Promise<string> | undefined;
  private readonly schedules = new Map<string, SlotSchedule>();

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    readonly runtimes: ReadonlyMap<string, Runtime>,
    readonly instanceId: string,
    readonly producer: ProducerIdentity,
    /** A claim's and an owner's lease term. */
    readonly leaseMs: number,
    private readonly newId: () => string,
    /** The contract actors' steps, for work that reaches another actor inside one transaction. */
    readonly actors: ActorSteps,
  ) {}

  /** When a claim or attempt made at `now` (ISO instant or epoch ms) loses its lease. */
  leaseExpiresAt(now: string | number): string {
    return new Date((typeof now === 'number' ? now : Date.parse(now)) + this.leaseMs).toISOString();
  }

  /** The lease term in the contract's unit (claimMetadata.leaseMinutes). */
  get leaseMinutes(): number {
    return this.leaseMs / 60_000;
  }

  /**
   * Launches this engine has sent and not yet heard back about (outbox ids). Only this process can answer
   * for them; any other `sending` launch is an orphan whose outcome must come from runtime evidence. Counted:
   * two commands of one request (a client's retry beside the first) both mark the same launch, and the one
   * that rolls back must not disown the one sending it.
   */
  readonly launchesInFlight = new LaunchesInFlight();
  /**
   * Attempts whose run's output this engine is delivering now (between the pending commit and the settling one).
   * Only this process can answer for them; any other pending delivery was interrupted.
   */
  readonly deliveriesInFlight = new Set<string>();
  /** Where runs of definitions with an atomic outputTarget deliver (the engine option `delivery`). */
  delivery: OutputDelivery | undefined;
  /** Engine-clock instant of this instance's last owner-lease renewal. */
  ownerLeaseRenewedAt = Number.NEGATIVE_INFINITY;
  /** The scheduler generation this instance acquired on its first pass (scheduler-generation.ts). */
  generation: number | undefined;

  /** Eligible work this engine's passes found waiting, and when to look again (see {@link WaitingWork}). */
  readonly waitingWork = new WaitingWork();
  /** Every definition as planning reads it, remembered between passes (checked against record versions). */
  readonly definitions = new DefinitionDirectory();
  /** Every plan cursor, remembered between passes the same way. */
  readonly planCursors = new VersionedRecords<PlanCursor, { lastSlot: string }>(KINDS.planCursor, (r) => ({
    id: r.id,
    version: r.version,
    lastSlot: r.data.lastSlot,
  }));

  /** The host name this instance's owner lease records (the engine option `host`). */
  host = hostname();
  /** How many definitions, occurrences or attempts one pass phase works on at once (1 = strictly in order). */
  passConcurrency = DEFAULT_PASS_CONCURRENCY;
  /** Steps skipped because another engine held their record (see `busyElsewhere`); the engine reads the growth. */
  passedOver = 0;
  /** How many due definitions planning plans at once. */
  planConcurrency = DEFAULT_PLAN_CONCURRENCY;

  /** Receives each step's transitions after the step committed (the inspection mirror). */
  observer: ((transitions: CommittedTransition[]) => void) | undefined;
  /** Receives them too, for traces (the engine option `tracing`); undefined costs nothing. */
  tracing: CommitTracing | undefined;

  /** Hands a committed step's transitions to the observer and the tracing. */
  committedTransitions(transitions: CommittedTransition[]): void {
    if (transitions.length === 0) return;
    this.observer?.(transitions);
    this.tracing?.committed(transitions);
  }
  private readonly firstSlots = new Map<string, { revision: number; after: number; next: number | null }>();

  storeId(): Promise<string> {
    this.storeIdPromise ??= this.store.transact((tx) => ensureStoreId(tx, this.newId));
    return this.storeIdPromise;
  }

  /** Runs `body` in one store transaction with the changefeed context of this instant. */
  async step<R>(body: (step: StepContext) => Promise<R>, adoptionKey?: string): Promise<R> {
    const storeId = await this.storeId();
    const now = isoNow(this.clock);
    const committed: CommittedTransition[] = [];
    const afterCommit: Array<() => void> = [];
    const result = await this.store.transact((tx) => {
      committed.length = 0;
      afterCommit.length = 0;
      return body({
        tx,
        now,
        feed: { producer: this.producer, storeId, now },
        committed,
        afterCommit,
        ...(adoptionKey === undefined ? {} : { adoptionKey }),
      });
    });
    for (const learn of afterCommit) learn();
    this.committedTransitions(committed);
    return result;
  }

  runtime(runtimeId: string): Runtime | undefined {
    return this.runtimes.get(runtimeId);
  }

  /**
   * The first slot of a definition revision strictly after `after` (epoch ms), or null when none falls in the
   * next 15 days. Remembered per definition until its revision or `after` changes: a pure function of both.
   */
  firstSlotAfter(automationId: string, revision: number, terms: ScheduleTerms, after: number): number | null {
    const known = this.firstSlots.get(automationId);
    if (known !== undefined && known.revision === revision && known.after === after) return known.next;
    const next = this.schedule(terms).nextAfter(new Date(after))?.getTime() ?? null;
    this.firstSlots.set(automationId, { revision, after, next });
    return next;
  }

  /**
   * A definition's schedule (its v1 trigger's, or its schedule extension's). A schedule is a pure function of
   * its rule and zone, so definitions that share them share one; the cache keeps the most recently used
   * {@link SCHEDULE_CACHE_SIZE}, so revisions and deleted definitions do not pile up (each holds expander state).
   */
  schedule(terms: ScheduleTerms): SlotSchedule {
    const key = scheduleKey(terms);
    let schedule = this.schedules.get(key);
    if (schedule === undefined) {
      schedule = makeSchedule(terms);
      if (this.schedules.size >= SCHEDULE_CACHE_SIZE) this.schedules.delete(this.schedules.keys().next().value!);
    } else {
      this.schedules.delete(key);
    }
    this.schedules.set(key, schedule);
    return schedule;
  }
}

export async function readDefinitionRecord(
  reader: StoreReader | StoreTransaction,
  automationId: string,
): Promise<DefinitionRecord> {
  return readEntity<DefinitionAttributes>(reader as StoreTransaction, DEFINITION_KIND, automationId);
}

/** The automation is quarantined (its x-coven-automata.quarantine.v1 machine is in `quarantined`). */
export async function isQuarantined(reader: StoreReader | StoreTransaction, automationId: string): Promise<boolean> {
  return quarantineState(reader, automationId);
}

export function definitionBlocked(record: EntityRecord<DefinitionAttributes>): string | undefined {
  const state = record.snapshot.value;
  return state === DefinitionState.active ? undefined : state;
}

export function notFound(kind: string, id: string): ContractError {
  return new ContractError('NOT_FOUND', `no ${kind} with id ${id}`, { kind, id });
}

/**
 * Launches this engine answers for, each with how many of its holders (a release, a command's marking) hold it;
 * one is in flight until every holder let go. Keyed by outbox id ({@link EngineServices.launchesInFlight}), or by
 * occurrence id where the engine marks the occurrences whose launch it is releasing.
 *
 * @example
 * ```ts
 * const inFlight = new LaunchesInFlight();
 * inFlight.add('outbox-1');
 * inFlight.add('outbox-1');
 * inFlight.delete('outbox-1');
 * inFlight.has('outbox-1'); // true: one holder left
 * ```
 */
export class LaunchesInFlight {
  private readonly holders = new Map<string, number>();

  add(id: string): void {
    this.holders.set(id, (this.holders.get(id) ?? 0) + 1);
  }

  /** One holder lets go. */
  delete(id: string): void {
    const left = (this.holders.get(id) ?? 0) - 1;
    if (left > 0) this.holders.set(id, left);
    else this.holders.delete(id);
  }

  has(id: string): boolean {
    return this.holders.has(id);
  }

  /** How many launches are held. */
  get size(): number {
    return this.holders.size;
  }
}
