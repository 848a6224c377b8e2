import { DefinitionState } from '../../machines/index.js';
import { type EntityRecord } from '../actors/entity-transition.js';
import { ContractError } from '../contract/errors.js';
import type { StoreReader } from '../store/store.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  DEFINITION_REVISION_KIND,
  revisionId,
  type DefinitionAttributes,
} from '../domain/definition-records.js';
import { stateOf } from '../domain/records.js';

const MAX_LIST = 100;

function encodeCursor(afterId: string): string {
  return Buffer.from(JSON.stringify({ after: afterId })).toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof value.after === 'string') return value.after;
  } catch {
    // fall through to the typed error
  }
  throw new ContractError('VALIDATION_FAILED', 'cursor is not one this engine issued', { field: 'payload.cursor' });
}

/**
 * definition.list.v1: tombstoned definitions only with `lifecycleState: "tombstoned"` or `"all"`. The `hidden`
 * automations (the read ACL's, for this caller) are left out before paging, so no cursor names one.
 */
export async function listDefinitions(
  reader: StoreReader,
  payload: { lifecycleState?: string; limit?: number; cursor?: string },
  hidden: ReadonlySet<string> = new Set(),
): Promise<Record<string, unknown>> {
  const filter = payload.lifecycleState;
  const limit = payload.limit ?? MAX_LIST;
  const afterId = payload.cursor === undefined ? undefined : decodeCursor(payload.cursor);
  const records = (await reader.list<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND)).filter((r) => {
    if (hidden.has(r.id)) return false;
    const state = stateOf(r);
    if (filter === 'all') return true;
    if (filter === undefined) return state !== DefinitionState.tombstoned;
    return state === filter;
  });
  const page = records.filter((r) => afterId === undefined || r.id > afterId).slice(0, limit + 1);
  const hasMore = page.length > limit;
  const shown = page.slice(0, limit);
  return {
    definitions: shown.map((r) => ({
      automationId: r.id,
      name: r.data.attributes.definition.display.name,
      lifecycleState: stateOf(r),
      revision: r.data.attributes.definition.revision,
      tombstonedAt: r.data.attributes.tombstonedAt,
    })),
    revisionById: Object.fromEntries(shown.map((r) => [r.id, r.data.attributes.definition.revision])),
    tombstonedAtById: Object.fromEntries(
      shown.filter((r) => r.data.attributes.tombstonedAt !== null).map((r) => [r.id, r.data.attributes.tombstonedAt]),
    ),
    cursor: { hasMore, ...(hasMore ? { next: encodeCursor(shown[shown.length - 1]!.id) } : {}) },
  };
}

/** definition.get.v1: the current body, or a pinned historic revision; tombstoned definitions stay readable. */
export async function getDefinition(
  reader: StoreReader,
  payload: { automationId: string; revision?: number },
): Promise<Record<string, unknown>> {
  const record = await reader.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, payload.automationId);
  if (record === undefined)
    throw new ContractError('NOT_FOUND', `no definition with id ${payload.automationId}`, {
      automationId: payload.automationId,
    });
  let definition = record.data.attributes.definition;
  if (payload.revision !== undefined && payload.revision !== definition.revision) {
    const historic = await reader.get<AutomationDefinition>(
      DEFINITION_REVISION_KIND,
      revisionId(payload.automationId, payload.revision),
    );
    if (historic === undefined) {
      throw new ContractError('NOT_FOUND', `definition ${payload.automationId} has no revision ${payload.revision}`, {
        automationId: payload.automationId,
        revision: payload.revision,
      });
    }
    definition = historic.data;
  }
  return {
    automationId: payload.automationId,
    revision: definition.revision,
    currentRevision: record.data.attributes.definition.revision,
    lifecycleState: stateOf(record),
    tombstonedAt: record.data.attributes.tombstonedAt,
    definition,
  };
}
