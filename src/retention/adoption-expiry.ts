import { ADOPTION_KIND, type AdoptionRecord } from '../domain/adoptions.js';
import { KINDS } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { StoreTransaction } from '../store/store.js';
import type { RetentionPolicy } from './policy.js';

/** `meta/adoption-sweep`: where the last sweep stopped in the adoption records (absent: at the start). */
const CURSOR = { kind: 'meta', id: 'adoption-sweep' } as const;
/** Adoption records one sweep looks at: the sweep walks them all, a page per sweep, and starts over. */
export const ADOPTION_PAGE = 1024;

/**
 * Whether an adoption record still guards something: the occurrence, run or attempt its result names is
 * still stored, or its stream still holds history. Until then a re-sent key must replay, never run again
 * (a re-run would meet the entity it created: a duplicate side effect, or a conflict with it).
 */
async function stillGuards(tx: StoreTransaction, result: Record<string, unknown>): Promise<boolean> {
  const named: Array<[kind: string, stream: string | undefined, id: unknown]> = [
    [KINDS.occurrence, 'occurrence', result.occurrenceId],
    [KINDS.run, 'run', result.runId],
    [KINDS.attempt, undefined, result.attemptId],
  ];
  for (const [kind, stream, id] of named) {
    if (typeof id !== 'string') continue;
    if ((await tx.version(kind, id)) !== undefined) return true;
    if (stream !== undefined && (await tx.head(`${stream}/${id}`)) > 0) return true;
  }
  return false;
}

/**
 * One step of the adoption sweep: among the next page of adoption records, removes those committed longer ago
 * than the adoption window whose entities are gone. Returns how many were removed (at most `budget`). A sweep
 * with nothing to remove and nowhere new to resume from writes nothing.
 */
export async function expireAdoptions(svc: EngineServices, policy: RetentionPolicy, budget: number): Promise<number> {
  if (budget <= 0) return 0;
  const cutoff = svc.clock.now().getTime() - policy.adoptionWindowMs;
  const { cursor, page } = await svc.store.read(async (r) => {
    const cursor = await r.get<{ after: string }>(CURSOR.kind, CURSOR.id);
    const after = cursor?.data.after;
    const page = await r.list<AdoptionRecord>(ADOPTION_KIND, {
      ...(after === undefined ? {} : { after }),
      limit: ADOPTION_PAGE,
    });
    return { cursor, page };
  });
  const expired = page.filter((record) => Date.parse(record.data.committedAt) < cutoff).slice(0, budget);
  // The whole page looked at and it was the last: start over next time. Otherwise resume after the last seen.
  const lastSeen = expired.length === budget ? expired.at(-1) : page.at(-1);
  const next = lastSeen === page.at(-1) && page.length < ADOPTION_PAGE ? undefined : lastSeen?.id;
  if (expired.length === 0 && next === cursor?.data.after) return 0;
  return svc.step(async (step) => {
    let removed = 0;
    for (const record of expired) {
      if ((await step.tx.version(ADOPTION_KIND, record.id)) !== record.version) continue;
      if (await stillGuards(step.tx, record.data.result)) continue;
      await step.tx.expire(ADOPTION_KIND, record.id, record.version);
      removed++;
    }
    const current = await step.tx.get<{ after: string }>(CURSOR.kind, CURSOR.id);
    if (current?.version !== cursor?.version) return removed;
    if (next === undefined) {
      if (current !== undefined) await step.tx.delete(CURSOR.kind, CURSOR.id, current.version);
    } else await step.tx.put(CURSOR.kind, CURSOR.id, { after: next }, { expectedVersion: current?.version ?? null });
    return removed;
  });
}
