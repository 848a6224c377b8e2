import { DEFINITION_KIND, type DefinitionRecord } from '../command-handler/definition-commands.js';
import type { AutomationDefinition } from '../command-handler/definition-body.js';
import { entityState } from '../actors/entity-transition.js';
import { forEachPage, type StoreReader, type StoreTransaction } from '../store/store.js';

/** The terms of a definition revision that planning pins on an occurrence. */
export type PlanningTerms = Pick<AutomationDefinition, 'automationId' | 'revision' | 'integrity' | 'trigger'> & {
  policies: Pick<AutomationDefinition['policies'], 'timeout' | 'retry'>;
};

/** What planning reads of one definition record version: a few hundred bytes instead of the whole body. */
export interface PlannableDefinition {
  readonly id: string;
  /** The record version this was read from. */
  readonly version: number;
  /** The definition machine's state. */
  readonly state: string;
  readonly terms: PlanningTerms;
  /** Slots after this instant (epoch ms) are the revision's to plan: the last activation, or the last revise while active. */
  readonly plannableAfter: number;
}

/** Definitions read per page when most of them changed (a fresh engine): bounds what one read holds at once. */
export const DEFINITION_PAGE = 500;

export function plannableDefinition(record: DefinitionRecord): PlannableDefinition {
  const attributes = record.data.attributes;
  const d = attributes.definition;
  return {
    id: record.id,
    version: record.version,
    state: entityState(record),
    terms: { automationId: d.automationId, revision: d.revision, integrity: d.integrity, trigger: d.trigger, policies: { timeout: d.policies.timeout, retry: d.policies.retry } },
    plannableAfter: Date.parse(attributes.scheduleEffectiveFrom ?? attributes.createdAt) - 1,
  };
}

/**
 * Every definition as planning needs it, remembered between passes and checked against the store's record
 * versions each time. A pass (and the wake-up computation after it) used to read and parse every
 * definition record: on SQLite, 27–32 ms per pass at 1,000 definitions with nothing due, twice per
 * daemon loop. Now a pass lists ids and versions and reads again only the definitions that changed.
 *
 * @example
 * ```ts
 * const definitions = await svc.definitions.current(reader); // id order, current as of `reader`
 * ```
 */
export class DefinitionDirectory {
  private readonly known = new Map<string, PlannableDefinition>();

  /** Every definition, in id order, current as of `reader`: unchanged ones from memory, the others read again. */
  async current(reader: StoreReader): Promise<PlannableDefinition[]> {
    const versions = await reader.versions(DEFINITION_KIND);
    const stale = versions.filter((v) => this.known.get(v.id)?.version !== v.version);
    if (stale.length > DEFINITION_PAGE) {
      // Mostly unknown (a fresh engine): pages of whole records cost less than one read per definition.
      await forEachPage<DefinitionRecord['data']>(reader, DEFINITION_KIND, DEFINITION_PAGE, (page) => {
        for (const record of page as DefinitionRecord[]) this.known.set(record.id, plannableDefinition(record));
      });
    } else {
      for (const { id } of stale) {
        const record = (await reader.get<DefinitionRecord['data']>(DEFINITION_KIND, id)) as DefinitionRecord | undefined;
        if (record !== undefined) this.known.set(id, plannableDefinition(record));
      }
    }
    if (this.known.size > versions.length) {
      const present = new Set(versions.map((v) => v.id));
      for (const id of this.known.keys()) if (!present.has(id)) this.known.delete(id);
    }
    return versions.flatMap((v) => this.known.get(v.id) ?? []);
  }

  /**
   * The definition as `tx` holds it: the copy read earlier when its version is still the current one (nearly
   * always), else read again. Definitions are never deleted (tombstoning is a state), so a version names one
   * content.
   */
  async inTransaction(tx: StoreTransaction, seen: PlannableDefinition): Promise<PlannableDefinition | undefined> {
    const version = await tx.version(DEFINITION_KIND, seen.id);
    if (version === seen.version) return seen;
    if (version === undefined) return undefined;
    const record = (await tx.get<DefinitionRecord['data']>(DEFINITION_KIND, seen.id)) as DefinitionRecord;
    // Not remembered: the next pass's `current` reads it outside any transaction, once it is committed.
    return plannableDefinition(record);
  }
}
