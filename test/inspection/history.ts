import { expect } from 'vitest';
import { lifecycleMachines } from '../../machines/index.js';
import { readEventFeed } from '../../src/changefeed/stored-event.js';
import type { Store } from '../../src/store/store.js';

/** A Stately wire message as the offline adapter or the relay delivers it (the fields the tests read). */
export interface WireMessage {
  type: '@xstate.actor' | '@xstate.event' | '@xstate.snapshot';
  sessionId: string;
  name?: string;
  parentId?: string;
  definition?: string;
  snapshot?: { value: string; status: string; context: Record<string, unknown> };
  event?: { type: string; actor?: string; position?: number; kind?: string };
}

/** Each entity's committed states in commit order, from the store's global feed: `<entity>/<id>` → states. */
export async function committedStates(store: Store): Promise<{ order: string[]; states: Map<string, string[]> }> {
  const feed = (await store.read((r) => readEventFeed(r, { after: -1, limit: 100_000 }))).map((e) => e.data);
  const order: string[] = [];
  const states = new Map<string, string[]>();
  for (const e of feed) {
    let key: string | undefined;
    let to: unknown;
    if (e.kind.endsWith('.transitioned')) {
      const entity = e.payload.entity as string;
      key = `${entity}/${entity === 'attempt' ? e.attemptId : e.stream.id}`;
      to = e.payload.to;
    } else if (e.kind.startsWith('definition.')) {
      key = `definition/${e.stream.id}`;
      to = e.payload.lifecycleState;
    }
    if (key === undefined) continue;
    order.push(`${key} ${String(to)}`);
    states.set(key, [...(states.get(key) ?? []), String(to)]);
  }
  return { order, states };
}

const INITIAL: Record<string, string> = Object.fromEntries(
  Object.values(lifecycleMachines).map((m) => [String(m.config.id).replace('.v1', ''), m.config.initial as string]),
);

/**
 * The contract of the inspector stream: per entity, one `@xstate.actor` first, in the machine's initial state,
 * then event/snapshot pairs whose states are the committed ones; across entities, snapshots in commit order.
 */
export function expectMirrorsHistory(messages: WireMessage[], history: Awaited<ReturnType<typeof committedStates>>) {
  const byEntity = new Map<string, WireMessage[]>();
  for (const m of messages) byEntity.set(m.sessionId, [...(byEntity.get(m.sessionId) ?? []), m]);
  expect([...byEntity.keys()].sort()).toEqual([...history.states.keys()].sort());
  for (const [key, states] of history.states) {
    const seen = byEntity.get(key)!;
    const entity = key.split('/')[0]!;
    expect(seen[0]!.type, key).toBe('@xstate.actor');
    expect(
      seen.filter((m) => m.type === '@xstate.actor'),
      key,
    ).toHaveLength(1);
    expect(seen[0]!.snapshot!.value, key).toBe(INITIAL[entity]);
    expect(seen[0]!.name, key).toBe(`${entity}.v1`);
    const rest = seen.slice(1);
    expect(
      rest.map((m) => m.type),
      key,
    ).toEqual(states.flatMap(() => ['@xstate.event', '@xstate.snapshot']));
    expect(
      rest.filter((m) => m.type === '@xstate.snapshot').map((m) => m.snapshot!.value),
      key,
    ).toEqual(states);
  }
  const snapshots = messages
    .filter((m) => m.type === '@xstate.snapshot')
    .map((m) => `${m.sessionId} ${m.snapshot!.value}`);
  expect(snapshots).toEqual(history.order);
}
