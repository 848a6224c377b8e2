// What the one-live-run race test builds on: stores whose transactions can be held at one point (so two engines'
// overlap checks are sure to read the same moment), the race's parts, and what a finished race shows.
import fc from 'fast-check';
import { OCCURRENCE_LIVE } from '../../src/domain/records.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import type { Store, StoreReader, StoreTransaction } from '../../src/store/store.js';
import type { OccurrenceState } from '../../machines/index.js';

/**
 * Holds each party that arrives until all `parties` have, or until `deadlineMs` passed (then it lets them go and
 * says so): a wait on a condition with a deadline, never a sleep.
 */
export class Barrier {
  private arrived = 0;
  private release!: () => void;
  private readonly all = new Promise<void>((resolve) => (this.release = resolve));
  timedOut = false;

  constructor(
    private readonly parties: number,
    private readonly deadlineMs: number,
  ) {}

  async arrive(): Promise<void> {
    if (++this.arrived >= this.parties) this.release();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.timedOut = true;
        resolve();
      }, this.deadlineMs);
    });
    await Promise.race([this.all, deadline]);
    clearTimeout(timer);
  }
}

/** One store operation a gate may hold after: its name, the record it named, and what it returned. */
export interface Operation {
  op: string;
  kind: string;
  id: string;
  result: unknown;
}

/**
 * What a {@link GatedStore} does to its transactions: after the first operation `hold` matches, the transaction
 * waits at its barrier (once).
 */
export interface Gate {
  hold?: { matches: (operation: Operation) => boolean; barrier: Barrier };
}

/** A store whose transactions meet `gate` (changed between races); reads and commits pass straight through. */
export class GatedStore implements Store {
  gate: Gate = {};
  /**
   * Left undefined, the engine claims one due occurrence per transaction, locking it with `lockUnlessBusy` where a
   * gate can hold; true has it claim in batches, as it does on a PostgreSQL store (`Store.sharedByEngines`).
   */
  sharedByEngines: boolean | undefined = undefined;

  constructor(readonly inner: Store) {}

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.inner.transact((tx) => body(this.gated(tx)));
  }
  read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    return this.inner.read(body);
  }
  onCommit(listener: Parameters<Store['onCommit']>[0]): () => void {
    return this.inner.onCommit(listener);
  }
  close(): Promise<void> {
    return this.inner.close();
  }

  private gated(tx: StoreTransaction): StoreTransaction {
    const after = async (op: string, kind: string, id: string, result: unknown) => {
      const hold = this.gate.hold;
      if (hold === undefined || !hold.matches({ op, kind, id, result })) return;
      this.gate.hold = undefined;
      await hold.barrier.arrive();
    };
    return new Proxy(tx, {
      get: (target, prop, receiver) => {
        if (prop === 'lockUnlessBusy' && target.lockUnlessBusy !== undefined)
          return async (kind: string, id: string) => {
            const locked = await target.lockUnlessBusy!(kind, id);
            await after('lockUnlessBusy', kind, id, locked);
            return locked;
          };
        if (prop === 'get')
          return async (kind: string, id: string) => {
            const record = await target.get(kind, id);
            await after('get', kind, id, record);
            return record;
          };
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}

/** The most occurrences of `automationId` live at once over the feed, replayed commit by commit. */
export function mostLiveAtOnce(feed: readonly EventEnvelope[], automationId: string): number {
  const live = new Set<string>();
  let most = 0;
  for (const event of feed) {
    if (event.kind !== 'occurrence.transitioned' || event.automationId !== automationId) continue;
    if (OCCURRENCE_LIVE.has(event.payload.to as OccurrenceState)) live.add(event.occurrenceId!);
    else live.delete(event.occurrenceId!);
    most = Math.max(most, live.size);
  }
  return most;
}

/**
 * The live occurrences of `automationId` as a reader sees them now: its non-terminal occurrences (the engine's
 * index of them stays small, so polling it is cheap) whose own record is in a live state.
 */
export async function liveNow(reader: StoreReader, automationId: string): Promise<string[]> {
  const states = await Promise.all(
    (await reader.liveWork('occurrence', { automationId })).map(({ id }) =>
      reader.get<{ snapshot: { value: OccurrenceState } }>('occurrence', id),
    ),
  );
  return states.filter((o) => o !== undefined && OCCURRENCE_LIVE.has(o.data.snapshot.value)).map((o) => o!.id);
}

/** A run-now answer the contract allows in a race: claimed, or refused because the automation has live work. */
export function contractAnswer(response: CommandResponse): string | undefined {
  if (response.outcome === 'rejected')
    return response.error?.code === 'OVERLAP_FORBIDDEN'
      ? undefined
      : `run-now answered ${String(response.error?.code)}: ${String(response.error?.message)}`;
  const status = (response.result as { status?: unknown } | undefined)?.status;
  return status === 'claimed' ? undefined : `run-now answered status ${String(status)}`;
}

/** Two slots a day, so two engines can each find one of them due. */
export const TWO_SLOTS = 'FREQ=DAILY;BYHOUR=9,10';

export type Pair = 'slot+runNow' | 'slot+slot' | 'runNow+runNow';

/**
 * One race: which pair of claims meet, through which two engines (in which order), whether a third engine passes
 * at the same time, whether the first claim is held after its snapshot while the second's occurrence goes live and
 * settles (`through`: what a feed ordered by transaction ids would show out of order; it wins over `forced`), and
 * whether both overlap checks are held until both have read (`forced`: the interleaving
 * that lets a write skew through, every time) or the second claim starts `yields` event-loop turns after the first.
 */
export interface Race {
  pair: Pair;
  engines: number[];
  bystander: boolean;
  through: boolean;
  forced: boolean;
  yields: number;
}

export const races: fc.Arbitrary<Race> = fc.record({
  pair: fc.constantFrom<Pair>('slot+runNow', 'slot+slot', 'runNow+runNow'),
  engines: fc.shuffledSubarray([0, 1, 2], { minLength: 2, maxLength: 2 }),
  bystander: fc.boolean(),
  through: fc.boolean(),
  forced: fc.boolean(),
  yields: fc.nat(40),
});

/** `count` races from `seed`, the pairs taken in turn so that every pair races however few there are. */
export function racePlan(seed: number, count: number, arbitrary: fc.Arbitrary<Race> = races): Race[] {
  const pairs: Pair[] = ['slot+runNow', 'slot+slot', 'runNow+runNow'];
  // Two slots never go through: the second engine's pass may need a slot row the held first claim has locked (a
  // pass finding both due also decides the earlier, misfire: latest) and then waits for that transaction, which is
  // held until the second's occurrence settles: only the barrier's deadline would end it.
  return fc.sample(arbitrary, { seed, numRuns: count }).map((r, i) => {
    const pair = pairs[i % pairs.length]!;
    const through = r.through && pair !== 'slot+slot';
    return { ...r, pair, through, forced: r.forced && !through };
  });
}

export interface RaceFigures {
  race: Race;
  /** The most live occurrences of the automation at once: over every commit, as polled, and at the end. */
  mostLive: { feed?: number; polled: number; final: number };
  /** What broke the contract besides that: an answer, a pass error, a slot left undecided, an invariant. */
  problems: string[];
  barrierTimedOut: boolean;
  contended: number;
}

/** Race `n` runs on its own day, so the clock only moves forward. */
export const day = (n: number) =>
  new Date(Date.parse('2026-03-02T00:00:00.000Z') + n * 86_400_000).toISOString().slice(0, 10);
export const at = (n: number, time: string) => `${day(n)}T${time}.000Z`;

type Occ = {
  snapshot: { value: string; context: { automationId?: string } };
  attributes: { misfireDisposition?: string };
};

export async function mine(store: Store, automationId: string) {
  return (await store.read((r) => r.list<Occ>('occurrence'))).filter(
    (o) => o.data.snapshot.context.automationId === automationId,
  );
}

/** Occurrences of the automation still waiting for a claim. */
export async function waiting(store: Store, automationId: string): Promise<string[]> {
  return (await mine(store, automationId))
    .filter((o) => o.data.snapshot.value === 'planned' || o.data.snapshot.value === 'eligible')
    .map((o) => `occurrence ${o.id} left ${o.data.snapshot.value}`);
}

/** Occurrences of the automation still waiting for a claim, or skipped for anything but overlap. */
export async function undecided(store: Store, automationId: string): Promise<string[]> {
  const skipped = (await mine(store, automationId)).filter(
    (o) => o.data.snapshot.value === 'skipped' && o.data.attributes.misfireDisposition !== 'skipped_overlap',
  );
  return [
    ...(await waiting(store, automationId)),
    ...skipped.map((o) => `occurrence ${o.id} skipped as ${String(o.data.attributes.misfireDisposition)}`),
  ];
}

export function summary(seed: number, figures: RaceFigures[], doubled: RaceFigures[]): string {
  const count = (pair: Pair) =>
    `${pair} ${doubled.filter((f) => f.race.pair === pair).length}/${figures.filter((f) => f.race.pair === pair).length}`;
  const held = (mode: 'forced' | 'through') =>
    `${mode} ${doubled.filter((f) => f.race[mode]).length}/${figures.filter((f) => f.race[mode]).length}`;
  return (
    `[one-live-run] seed=${seed} races=${figures.length} doubled=${doubled.length} ` +
    `(${count('slot+runNow')}, ${count('slot+slot')}, ${count('runNow+runNow')}; ${held('forced')}, ` +
    `${held('through')}) ` +
    `contended=${figures.reduce((s, f) => s + f.contended, 0)} ` +
    `barrierTimeouts=${figures.filter((f) => f.barrierTimedOut).length}`
  );
}
