import { StoreConflictError, type StoreReader, type StoreTransaction } from '../store/store.js';
import { OWNER_LEASE_KIND, ownerLeaseAt, type OwnerLease } from './owner-lease.js';
import type { EngineServices } from './services.js';
import { StaleGenerationError } from './stale-generation.js';

export { StaleGenerationError };

/** The store's scheduler generation counter: one record, advanced by compare-and-set. */
export const SCHEDULER_GENERATION_KIND = 'scheduler-generation';
const COUNTER_ID = 'counter';

/** The last generation handed out, and to which engine instance. */
export interface SchedulerGenerationRecord {
  generation: number;
  instanceId: string;
  acquiredAt: string;
}

/** Acquisitions retried when another engine id advanced the counter first (engines starting together). */
const ACQUIRE_TRIES = 16;

/** The store's current scheduler generation (null: no engine ever acquired one). */
export async function currentGeneration(reader: StoreReader | StoreTransaction): Promise<number | null> {
  return (await reader.get<SchedulerGenerationRecord>(SCHEDULER_GENERATION_KIND, COUNTER_ID))?.data.generation ?? null;
}

/**
 * Takes the next generation for this engine instance: advances the counter by compare-and-set and writes the
 * generation into the instance's owner lease, in one commit. An engine of another id advancing the counter
 * meanwhile only means trying again; an instance of the same id winning means this one is refused.
 */
export async function acquireGeneration(svc: EngineServices): Promise<number> {
  for (let tries = 1; ; tries++) {
    const seen = await svc.store.read((r) => r.get<SchedulerGenerationRecord>(SCHEDULER_GENERATION_KIND, COUNTER_ID));
    const generation = (seen?.data.generation ?? 0) + 1;
    const now = svc.clock.now().getTime();
    try {
      await svc.store.transact(async (tx) => {
        const record: SchedulerGenerationRecord = {
          generation,
          instanceId: svc.instanceId,
          acquiredAt: new Date(now).toISOString(),
        };
        await tx.put(SCHEDULER_GENERATION_KIND, COUNTER_ID, record, { expectedVersion: seen?.version ?? null });
        const lease = await tx.get<OwnerLease>(OWNER_LEASE_KIND, svc.instanceId);
        await tx.put(OWNER_LEASE_KIND, svc.instanceId, ownerLeaseAt(svc, now, generation), {
          expectedVersion: lease?.version ?? null,
        });
      });
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
      const winner = await svc.store.read((r) =>
        r.get<SchedulerGenerationRecord>(SCHEDULER_GENERATION_KIND, COUNTER_ID),
      );
      if (winner?.data.instanceId === svc.instanceId || tries >= ACQUIRE_TRIES)
        throw new StaleGenerationError(svc.instanceId, null, winner?.data.generation ?? generation);
      continue;
    }
    svc.generation = generation;
    svc.ownerLeaseRenewedAt = now;
    return generation;
  }
}

/** The generation holding `instanceId`'s owner lease (0: none recorded). */
export async function leaseGeneration(reader: StoreReader | StoreTransaction, instanceId: string): Promise<number> {
  return (await reader.get<OwnerLease>(OWNER_LEASE_KIND, instanceId))?.data.generation ?? 0;
}

/**
 * A pass's fence: the first pass of an instance acquires its generation; every later one reads its owner lease
 * first and is refused ({@link StaleGenerationError}) when a newer generation holds it. Engines of different ids
 * never fence each other: each has its own lease. Returns this instance's generation.
 */
export async function holdGeneration(svc: EngineServices): Promise<number> {
  if (svc.generation === undefined) return acquireGeneration(svc);
  const held = await svc.store.read((r) => leaseGeneration(r, svc.instanceId));
  if (held > svc.generation) throw new StaleGenerationError(svc.instanceId, svc.generation, held);
  return svc.generation;
}

/** What an engine instance can say of its own leadership (the doctor's `leader` fact). */
export interface Leadership {
  isLeader: boolean;
  leaderId: string | null;
  /** This instance's generation (null: it has not passed yet, and takes the next one on its first pass). */
  generation: number | null;
  /** The newer generation of the same instance id that replaced this one. */
  replacedByGeneration?: number;
}

/** This instance leads its lease unless a newer generation of its id took it over. */
export async function leadershipOf(svc: EngineServices): Promise<Leadership> {
  const own = svc.generation;
  const held = await svc.store.read((r) => leaseGeneration(r, svc.instanceId));
  if (own !== undefined && held > own)
    return { isLeader: false, leaderId: null, generation: own, replacedByGeneration: held };
  return { isLeader: true, leaderId: svc.instanceId, generation: own ?? null };
}
