import { AUTHORITY_EXTENSION, bindingOf } from './authority.js';
import type { DefinitionState } from '../../machines/index.js';
import type { AutomationDefinition } from './definition-body.js';
import { stateOf } from './records.js';
import { SCHEDULE_EXTENSION, scheduleExtensionOf } from '../schedule/schedule-extension.js';
import { OVERLAP_EXTENSION, overlapOf } from '../schedule/overlap-extension.js';
import type { StoreTransaction } from '../store/store.js';
import { VersionedRecords } from './versioned-records.js';
import { LIMITS_EXTENSION, limitsOf } from './flow-limits.js';
import { DEFINITION_KIND, type DefinitionRecord } from './definition-records.js';

/** The terms of a definition revision that planning pins on an occurrence. */
export type PlanningTerms = Pick<
  AutomationDefinition,
  'automationId' | 'revision' | 'integrity' | 'trigger' | 'runtimeRequirements'
> & {
  policies: Pick<AutomationDefinition['policies'], 'timeout' | 'retry'>;
  /**
   * Only the Runtime Authority binding (it decides whether runs may be held for an operator) and the schedule,
   * overlap and limits extensions, when the definition has them.
   */
  extensions?: AutomationDefinition['extensions'];
};

/** What planning reads of one definition record version: a few hundred bytes instead of the whole body. */
export interface PlannableDefinition {
  readonly id: string;
  /** The record version this was read from. */
  readonly version: number;
  /** The definition machine's state. */
  readonly state: DefinitionState;
  readonly terms: PlanningTerms;
  /**
   * Slots after this instant (epoch ms) are the revision's to plan: the last activation, or the last revise while
   * active.
   */
  readonly plannableAfter: number;
}

/** The extensions planning reads: the Runtime Authority binding and the schedule, when the definition has them. */
function planningExtensions(d: AutomationDefinition): Pick<PlanningTerms, 'extensions'> {
  const kept = Object.entries({
    [AUTHORITY_EXTENSION]: bindingOf(d),
    [SCHEDULE_EXTENSION]: scheduleExtensionOf(d),
    [OVERLAP_EXTENSION]: overlapOf(d),
    [LIMITS_EXTENSION]: limitsOf(d),
  });
  const extensions = Object.fromEntries(kept.filter(([, value]) => value !== undefined));
  return Object.keys(extensions).length === 0 ? {} : { extensions };
}

export function plannableDefinition(record: DefinitionRecord): PlannableDefinition {
  const attributes = record.data.attributes;
  const d = attributes.definition;
  return {
    id: record.id,
    version: record.version,
    state: stateOf(record),
    terms: {
      automationId: d.automationId,
      revision: d.revision,
      integrity: d.integrity,
      trigger: d.trigger,
      policies: { timeout: d.policies.timeout, retry: d.policies.retry },
      ...(d.runtimeRequirements === undefined ? {} : { runtimeRequirements: d.runtimeRequirements }),
      ...planningExtensions(d),
    },
    plannableAfter: Date.parse(attributes.scheduleEffectiveFrom ?? attributes.createdAt) - 1,
  };
}

/** Every definition as planning needs it (see {@link VersionedRecords}). */
export class DefinitionDirectory extends VersionedRecords<PlannableDefinition, DefinitionRecord['data']> {
  constructor() {
    super(DEFINITION_KIND, (record) => plannableDefinition(record as DefinitionRecord));
  }

  /**
   * The definition as `tx` holds it: the copy read earlier (by default the one remembered) when its version
   * is still the current one (nearly always), else read again; undefined when there is no such definition.
   * Definitions are never deleted (tombstoning is a state), so a version names one content.
   */
  async inTransaction(
    tx: StoreTransaction,
    id: string,
    seen: PlannableDefinition | undefined = this.remembered(id),
  ): Promise<PlannableDefinition | undefined> {
    const version = await tx.version(DEFINITION_KIND, id);
    if (version === undefined) return undefined;
    if (version === seen?.version) return seen;
    const record = (await tx.get<DefinitionRecord['data']>(DEFINITION_KIND, id)) as DefinitionRecord;
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
