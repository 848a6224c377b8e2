import { createHash } from 'node:crypto';
import type { StoreReader } from '../store/store.js';
import { leaseHolds, OWNER_LEASE_KIND, type OwnerLease } from './owner-lease.js';
import type { EngineServices } from './services.js';

/** The engine instance a key falls to among `members`: the highest hash of member and key (rendezvous hashing). */
export function memberFor(key: string, members: readonly string[]): string | undefined {
  // One live engine (a shared store worked alone) has every key: no hash can choose another.
  if (members.length === 1) return members[0];
  let chosen: string | undefined;
  let best = '';
  for (const member of members) {
    const weight = createHash('sha256').update(member).update('\u0000').update(key).digest('hex');
    if (chosen === undefined || weight > best) [chosen, best] = [member, weight];
  }
  return chosen;
}

/**
 * Which engine of those sharing a store does each piece of work, so engines stop doing the same work and losing
 * the race for it: an occurrence claimed (an attempt launched) by a live engine is that engine's; anything else
 * — a definition to plan, an unclaimed or orphaned occurrence, an orphaned attempt — falls to one live engine by
 * a hash of its key (the automation). Live engines are those whose owner lease holds (see `ownerAlive`),
 * and always this one. An engine that dies leaves its share to the others once its lease lapses (at once on its
 * own host, where its process is known gone).
 *
 * Only an economy, never a guarantee: engines that disagree for a moment on who is live both take some work
 * (compare-and-set and the fences decide, as they always did) or neither takes it until their next pass. On a
 * store one engine holds at a time everything is this engine's.
 */
export class WorkPartition {
  private constructor(
    private readonly self: string,
    /** Live engine instances, this one included; undefined: the store is not shared, everything is ours. */
    private readonly members: readonly string[] | undefined,
    private readonly alive: ReadonlySet<string>,
  ) {}

  /** The partition as `reader` shows the owner leases now. */
  static async read(svc: EngineServices, reader: StoreReader): Promise<WorkPartition> {
    if (svc.store.sharedByEngines !== true) return new WorkPartition(svc.instanceId, undefined, new Set());
    const alive = new Set([svc.instanceId]);
    for (const lease of await reader.list<OwnerLease>(OWNER_LEASE_KIND))
      if (leaseHolds(svc, lease.id, lease.data)) alive.add(lease.id);
    return new WorkPartition(svc.instanceId, [...alive].sort(), alive);
  }

  /** Everything is this engine's (a store not shared, or a pass that must look at all of it). */
  static whole(svc: EngineServices): WorkPartition {
    return new WorkPartition(svc.instanceId, undefined, new Set());
  }

  /**
   * Whether this engine does the work keyed `key` (an automation id, or an entity's own id when it names no
   * automation) and held by `holder` (the claimer or launcher, null when none).
   */
  mine(key: string, holder: string | null = null): boolean {
    if (this.members === undefined || holder === this.self) return true;
    if (holder !== null && this.alive.has(holder)) return false;
    return memberFor(key, this.members) === this.self;
  }

  /** The other live engines: what they claimed or launched is theirs, so a pass need not even read it. */
  get others(): readonly string[] {
    return this.members?.filter((member) => member !== this.self) ?? [];
  }

  /** How many live engines share the work. */
  get size(): number {
    return this.members?.length ?? 1;
  }
}
