import type { StoreReader, StoreTransaction } from '../store/store.js';
import type { EngineServices } from './services.js';
import { StaleGenerationError } from './stale-generation.js';

/** `<instanceId>`: the engine instance's own lease, renewed while it runs. */
export const OWNER_LEASE_KIND = 'owner-lease';

/** What an engine instance says of itself while it lives. */
export interface OwnerLease {
  instanceId: string;
  pid: number;
  host: string;
  renewedAt: string;
  expiresAt: string;
  /** The scheduler generation this instance acquired (scheduler-generation.ts); absent in leases written before. */
  generation?: number;
}

/** The lease this engine writes at `now` (epoch ms), under its scheduler generation. */
export function ownerLeaseAt(svc: EngineServices, now: number, generation = svc.generation): OwnerLease {
  return {
    instanceId: svc.instanceId,
    pid: process.pid,
    host: svc.host,
    renewedAt: new Date(now).toISOString(),
    expiresAt: new Date(now + svc.leaseMs).toISOString(),
    ...(generation === undefined ? {} : { generation }),
  };
}

/**
 * Engine instances alive in this process. An engine that ran here under another id and was stopped (or
 * replaced after a crash) is known dead at once, as a dead process on this host is, without waiting out its lease.
 */
const liveHere = new Set<string>();

/** Registers an engine instance as alive in this process; the returned function says it stopped. */
export function registerLiveInstance(instanceId: string): () => void {
  liveHere.add(instanceId);
  return () => liveHere.delete(instanceId);
}

/** Renewing this often keeps the lease live through two missed renewals. */
export const RENEWALS_PER_LEASE = 3;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * When {@link renewOwnerLease} renews: `due` once a third of the lease has passed and live work exists (always on a
 * store engines share), `launching` once a third has passed even with no live work yet (launches are about to be
 * sent), `force` now.
 */
export type LeaseRenewal = 'due' | 'launching' | 'force';

/**
 * Renews this engine's owner lease (see {@link LeaseRenewal}): one small commit per renewal, never one per pass,
 * and none while a single-engine store is idle. A claim's recorded term does not move (the contract has no renewal
 * event); what keeps a live engine's claims from lapsing is this lease, which every other engine checks first.
 */
export async function renewOwnerLease(svc: EngineServices, when: LeaseRenewal = 'due'): Promise<void> {
  const now = svc.clock.now().getTime();
  if (when !== 'force' && now < svc.ownerLeaseRenewedAt + svc.leaseMs / RENEWALS_PER_LEASE) return;
  // On a store engines share the lease also says who shares the work (WorkPartition), so it is kept while idle:
  // a burst's first pass must already know the live engines. Elsewhere an idle store gets no commits.
  if (
    when === 'due' &&
    svc.store.sharedByEngines !== true &&
    (await svc.store.read((r) => r.liveWork('occurrence'))).length === 0
  )
    return;
  await svc.store.transact(async (tx) => {
    const current = await tx.get<OwnerLease>(OWNER_LEASE_KIND, svc.instanceId);
    // A renewal changes no engine's share (they read the leases when their passes begin), so it wakes nobody; a
    // lease written anew does: the others' partition changes with it.
    if (current !== undefined) tx.quiet?.();
    // A newer generation of this instance id holds the lease: renewing would take it back from a live restart.
    const held = current?.data.generation ?? 0;
    if (held > (svc.generation ?? 0)) throw new StaleGenerationError(svc.instanceId, svc.generation ?? null, held);
    await tx.put(OWNER_LEASE_KIND, svc.instanceId, ownerLeaseAt(svc, now), {
      expectedVersion: current?.version ?? null,
    });
  });
  svc.ownerLeaseRenewedAt = now;
}

/**
 * Whether the engine instance `ownerId` still holds what it claimed: its owner lease is unexpired and, when it
 * ran on this host in another process, that process is alive (a file store's new owner then knows at once
 * that the old one is gone, instead of waiting out its lease). An instance that never wrote a lease is gone.
 */
export async function ownerAlive(
  svc: EngineServices,
  reader: StoreReader | StoreTransaction,
  ownerId: string,
): Promise<boolean> {
  if (ownerId === svc.instanceId) return true;
  const lease = await reader.get<OwnerLease>(OWNER_LEASE_KIND, ownerId);
  return lease !== undefined && leaseHolds(svc, ownerId, lease.data);
}

/** Whether an owner lease read already still holds: see {@link ownerAlive}. */
export function leaseHolds(svc: EngineServices, ownerId: string, lease: OwnerLease): boolean {
  if (Date.parse(lease.expiresAt) <= svc.clock.now().getTime()) return false;
  if (lease.host !== svc.host) return true;
  return lease.pid === process.pid ? liveHere.has(ownerId) : processAlive(lease.pid);
}

/**
 * Whether a launch sent by `dispatcherId` is an orphan: its sender can no longer answer for it. This engine's
 * own launches are orphans once nothing here waits for them (the runtime call threw, or a restart under the
 * same instance id); another engine's are orphans once that engine is gone. A sender that never wrote an owner
 * lease (an engine that handles commands without running passes: a CLI's run-now, an embedding that only sends
 * commands) is taken to hold the launch for one lease term from `sentAt`, when it marked it `sending`: judged
 * gone at once, its launch in flight was fenced as never started and its answer failed the run.
 */
export async function launchOrphaned(
  svc: EngineServices,
  reader: StoreReader | StoreTransaction,
  outboxId: string,
  dispatcherId: string | undefined,
  sentAt: string | null,
): Promise<boolean> {
  if (dispatcherId === undefined || dispatcherId === svc.instanceId) return !svc.launchesInFlight.has(outboxId);
  if ((await reader.get<OwnerLease>(OWNER_LEASE_KIND, dispatcherId)) === undefined)
    return sentAt === null || Date.parse(sentAt) + svc.leaseMs <= svc.clock.now().getTime();
  return !(await ownerAlive(svc, reader, dispatcherId));
}
