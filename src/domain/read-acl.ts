import type { EntityRecord } from '../actors/entity-transition.js';
import { readEventLog } from '../changefeed/stored-event.js';
import type { StoreReader } from '../store/store.js';
import { bindingOf } from './authority.js';
import { DEFINITION_KIND, type DefinitionAttributes } from './definition-records.js';
import { KINDS } from './records.js';

/**
 * Record kind of an automation's read access list (`<automationId>`). An automation without one is readable by
 * every caller, as before ACLs existed; its first grant restricts it. Changed only through the
 * `x-coven-automata.acl.*` commands (command-handler/read-acl-commands.ts).
 */
export const READ_ACL_KIND = 'read-acl';

export interface ReadAcl {
  automationId: string;
  /** Principals granted read, unique and sorted. */
  readers: string[];
  /** When the automation's reads were first restricted. */
  restrictedAt: string;
  updatedAt: string;
  updatedBy: string;
}

/**
 * Who is reading, as the transport that carried the command vouches. `principal`: the principal it authenticated
 * (in process, the embedder built the envelope, so its origin principal). `operator`: the store's owner (the
 * daemon's socket or token, the CLI on its own store), who reads everything, since it could read the store file
 * anyway. `anonymous`: a caller nobody authenticated (loopback TCP without the token), whatever its envelope claims.
 */
export type ReadCaller = { as: 'principal'; principalId: string } | { as: 'operator' } | { as: 'anonymous' };

export const OPERATOR_CALLER: ReadCaller = { as: 'operator' };
export const ANONYMOUS_CALLER: ReadCaller = { as: 'anonymous' };

/**
 * Whether `caller` may read a restricted automation: the operator, a principal granted read, or the principal the
 * automation's current authority binding runs as (its runs act for that principal, so their history is its own).
 */
export function mayRead(acl: ReadAcl, bindingPrincipal: string | undefined, caller: ReadCaller): boolean {
  if (caller.as === 'operator') return true;
  if (caller.as === 'anonymous') return false;
  return acl.readers.includes(caller.principalId) || caller.principalId === bindingPrincipal;
}

/** The restricted automations `caller` may not read, from one store snapshot; empty when nothing is restricted. */
export async function hiddenAutomations(reader: StoreReader, caller: ReadCaller): Promise<ReadonlySet<string>> {
  const hidden = new Set<string>();
  if (caller.as === 'operator') return hidden;
  for (const { id, data } of await reader.list<ReadAcl>(READ_ACL_KIND)) {
    const definition = await reader.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, id);
    const principal =
      definition === undefined ? undefined : bindingOf(definition.data.attributes.definition)?.principalId;
    if (!mayRead(data, principal, caller)) hidden.add(id);
  }
  return hidden;
}

/**
 * The automation an occurrence or run belongs to: its record's, or, once retention compacted the record, the one
 * its stream's remaining snapshot event names. Undefined when the store never held it.
 */
export async function automationOfEntity(
  reader: StoreReader,
  kind: 'occurrence' | 'run',
  id: string,
): Promise<string | undefined> {
  const record = await reader.get<EntityRecord<{ automationId: string }>>(kind, id);
  if (record !== undefined) return record.data.attributes.automationId;
  const first = await readEventLog(reader, { kind, id }, { limit: 1 });
  return first[0]?.data.automationId;
}

/** The automation a receipt was produced for, or undefined when the store holds no such receipt. */
export async function automationOfReceipt(reader: StoreReader, receiptId: string): Promise<string | undefined> {
  return (await reader.get<{ automationId: string }>(KINDS.receipt, receiptId))?.data.automationId;
}
