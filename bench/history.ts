// Synthetic history for the bench: copies of one real hour the engine ran, shifted to earlier slots.
// Running 100k occurrences through the engine would take longer than the whole bench may; copies of real
// records give the store the same kinds, sizes and stream shapes, which is what the cost depends on.
import type { Store } from '../src/store/store.js';

/** Kinds whose records belong to one occurrence and carry its slot in their ids. */
const PER_OCCURRENCE_KINDS = ['occurrence', 'occurrence-key', 'run', 'fence-run', 'attempt', 'outbox', 'receipt'];
const HOUR = 3_600_000;

export interface HistoryPlan {
  /** Occurrences the template slot produced (one per definition). */
  automationCount: number;
  templateSlot: number;
  /** Historical occurrences to add; a multiple of automationCount. */
  occurrences: number;
  /** Copies that also get the template's changefeed events (events are ~5x the records' writes). */
  copiesWithEvents: number;
}

/** Adds `occurrences` terminal occurrences (with their runs, attempts, receipts and events), one hour per copy. */
export async function cloneHistory(store: Store, plan: HistoryPlan): Promise<void> {
  if (plan.occurrences % plan.automationCount !== 0)
    throw new Error(`history ${plan.occurrences} is not a multiple of ${plan.automationCount} definitions`);
  const slotTag = `-${plan.templateSlot}`;
  const slotIso = new Date(plan.templateSlot).toISOString();
  const template = await store.read(async (r) => {
    const records: Array<{ kind: string; id: string; text: string; terminal: boolean }> = [];
    for (const kind of PER_OCCURRENCE_KINDS) {
      for (const record of await r.list(kind)) {
        if (record.id.includes(slotTag) || record.id.includes(slotIso))
          records.push({ kind, id: record.id, text: JSON.stringify(record.data), terminal: record.terminal });
      }
    }
    const events = (await r.readFeed())
      .filter((e) => e.stream.includes(slotTag))
      .map((e) => ({ stream: e.stream, text: JSON.stringify(e.data) }));
    return { records, events };
  });
  const occurrences = template.records.filter((r) => r.kind === 'occurrence').length;
  if (occurrences !== plan.automationCount)
    throw new Error(`the template hour holds ${occurrences} occurrences, expected ${plan.automationCount}`);
  for (let copy = 1; copy <= plan.occurrences / plan.automationCount; copy++) {
    const slot = plan.templateSlot - copy * HOUR;
    const shift = (text: string) =>
      text.replaceAll(slotTag, `-${slot}`).replaceAll(slotIso, new Date(slot).toISOString());
    await store.transact(async (tx) => {
      for (const r of template.records)
        await tx.put(r.kind, shift(r.id), JSON.parse(shift(r.text)), { expectedVersion: null, terminal: r.terminal });
      if (copy <= plan.copiesWithEvents)
        for (const e of template.events) await tx.append(shift(e.stream), JSON.parse(shift(e.text)));
    });
  }
}
