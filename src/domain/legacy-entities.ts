import type { AnyStateMachine } from 'xstate';
import { persistSnapshot, type EntityRecord } from '../actors/entity-transition.js';
import type { StoredRecord, StoreTransaction } from '../store/store.js';

/**
 * Rewrites a record kept in a shape from before its lifecycle had a machine into that machine's entity form,
 * in the state the old record already committed. This is a change of representation, not a transition: the
 * state was decided when the old record was written, so no event is sent and no guard runs. Callers upgrade
 * a legacy record only in the transaction that is about to send it its next event, so the machine decides
 * every change from then on.
 *
 * Upgrading on first touch rather than in a pass when the engine opens: the engine has no asynchronous open,
 * and commands (an unquarantine, an operator retry) may reach a store before its first pass, so the readers
 * must know the old shapes either way; a store opened many times never pays a scan of its outbox for it; and
 * each record changes shape in the same transaction as its next transition, so no state is half upgraded.
 */
export async function rewriteLegacyEntity<TAttributes>(
  tx: StoreTransaction,
  machine: AnyStateMachine,
  kind: string,
  id: string,
  expectedVersion: number | null,
  state: string,
  context: Record<string, unknown>,
  attributes: TAttributes,
): Promise<StoredRecord<EntityRecord<TAttributes>>> {
  const snapshot = machine.resolveState({ value: state, context });
  return tx.put<EntityRecord<TAttributes>>(
    kind,
    id,
    { machineId: machine.id, snapshot: persistSnapshot(machine, snapshot), attributes },
    { expectedVersion, terminal: snapshot.status === 'done' },
  );
}

/** `data` is an entity record (a machine snapshot), not a shape from before its machine existed. */
export function isEntityData(data: unknown): data is EntityRecord<unknown> {
  return typeof data === 'object' && data !== null && 'machineId' in data && 'snapshot' in data;
}
