import { DEFINITION_KIND, type DefinitionAttributes, type DefinitionRecord } from '../domain/definition-records.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import { stateOf } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { scheduleText } from '../schedule/schedule-extension.js';
import { overlapOf } from '../schedule/overlap-extension.js';
import { limitsOf } from '../domain/flow-limits.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import type { ConsoleFilter } from './console-query.js';

import type { DefinitionFacts } from './console-rows.js';

export type { DefinitionFacts };

/** The overlap and flow-control extensions in a line (`overlap allow · tags reports · priority 5 · rate 4/60 min`). */
function policiesOf(body: AutomationDefinition): Pick<DefinitionFacts, 'policies'> {
  const overlap = overlapOf(body);
  const limits = limitsOf(body);
  const parts = [
    ...(overlap === undefined ? [] : [`overlap ${overlap.policy}`]),
    ...(overlap?.catchUp === undefined
      ? []
      : [`catch-up ${overlap.catchUp.windowMinutes} min ${overlap.catchUp.order}`]),
    ...(limits?.tags === undefined ? [] : [`tags ${limits.tags.join(', ')}`]),
    ...(limits?.priority === undefined ? [] : [`priority ${limits.priority}`]),
    ...(limits?.rate === undefined ? [] : [`rate ${limits.rate.limit}/${limits.rate.perMinutes} min`]),
  ];
  return parts.length === 0 ? {} : { policies: parts.join(' · ') };
}

/** Every definition the caller may read, by id: one pass over the definitions (hundreds, not thousands). */
export async function definitionFacts(
  reader: StoreReader,
  hidden: ReadonlySet<string>,
): Promise<Map<string, DefinitionFacts>> {
  const facts = new Map<string, DefinitionFacts>();
  for (const record of await reader.list<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND)) {
    if (hidden.has(record.id)) continue;
    const body = record.data.attributes.definition;
    facts.set(record.id, {
      automationId: record.id,
      name: body.display.name,
      lifecycleState: stateOf(record as DefinitionRecord),
      revision: body.revision,
      timezone: body.trigger.schedule.timezone,
      schedule: scheduleText(body),
      ...policiesOf(body),
      tags: body.display.tags ?? [],
    });
  }
  return facts;
}

/** The automations a filter keeps: those the caller may read, of the named automation and tag. */
export function automationsOf(facts: Map<string, DefinitionFacts>, filter: ConsoleFilter): Set<string> {
  const kept = new Set<string>();
  for (const [id, f] of facts) {
    if (filter.automationId !== undefined && id !== filter.automationId) continue;
    if (filter.tag !== undefined && !f.tags.includes(filter.tag)) continue;
    kept.add(id);
  }
  return kept;
}
