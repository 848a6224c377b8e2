import { DEFINITION_KIND, type DefinitionRecord } from '../command-handler/definition-commands.js';
import type { AutomationDefinition } from '../command-handler/definition-body.js';
import { entityState } from '../actors/entity-transition.js';
import { forEachPage, type StoredRecord, type StoreReader, type StoreTransaction } from '../store/store.js';

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

/** Records read per page when most of them changed (a fresh engine): bounds what one read holds at once. */
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
 * Records of one kind as some part of the engine needs them (a projection), remembered between passes and
 * checked against the store's record versions each time: a pass lists ids and versions and reads again
 * only the records whose version moved (whole pages when more than {@link DEFINITION_PAGE} did, e.g. a
 * fresh engine). Before, every pass (and the wake-up computation after it) read and parsed every
 * definition and plan cursor: on SQLite, 27–32 ms per pass at 1,000 definitions with nothing due, twice
 * per daemon loop (5,000 definitions with cursors: 186 ms per loop).
 *
 * @example
 * ```ts
 * const cursors = new VersionedRecords('plan-cursor', (r) => ({ id: r.id, version: r.version, lastSlot: r.data.lastSlot }));
 * await cursors.current(reader); // id order, current as of `reader`
 * ```
 */
export class VersionedRecords<T extends { readonly id: string; readonly version: number }, D = unknown> {
  private readonly known = new Map<string, T>();

  constructor(
    readonly kind: string,
    private readonly project: (record: StoredRecord<D>) => T,
  ) {}

  /** Every record of the kind, in id order, current as of `reader`: unchanged ones from memory, the others read again. */
  async current(reader: StoreReader): Promise<T[]> {
    const versions = await reader.versions(this.kind);
    const stale = versions.filter((v) => this.known.get(v.id)?.version !== v.version);
    if (stale.length > DEFINITION_PAGE) {
      // Mostly unknown or moved: pages of whole records cost less than one read per record.
      await forEachPage<D>(reader, this.kind, DEFINITION_PAGE, (page) => {
        for (const record of page) this.known.set(record.id, this.project(record));
      });
    } else {
      for (const { id } of stale) {
        const record = await reader.get<D>(this.kind, id);
        if (record !== undefined) this.known.set(id, this.project(record));
      }
    }
    if (this.known.size > versions.length) {
      const present = new Set(versions.map((v) => v.id));
      for (const id of this.known.keys()) if (!present.has(id)) this.known.delete(id);
    }
    return versions.flatMap((v) => this.known.get(v.id) ?? []);
  }
}

/** Every definition as planning needs it (see {@link VersionedRecords}). */
export class DefinitionDirectory extends VersionedRecords<PlannableDefinition, DefinitionRecord['data']> {
  constructor() {
    super(DEFINITION_KIND, (record) => plannableDefinition(record as DefinitionRecord));
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

/** A definition's plan cursor: the last slot planned. */
export interface PlanCursor {
  readonly id: string;
  readonly version: number;
  readonly lastSlot: string;
}
