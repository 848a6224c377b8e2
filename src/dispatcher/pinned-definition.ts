import type { AutomationDefinition } from '../domain/definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import type { StepContext } from '../domain/lifecycle.js';

/** The definition revision an occurrence pinned when it was planned; a missing one is a broken store. */
export async function pinnedDefinition(
  step: StepContext,
  automationId: string,
  revision: number,
): Promise<AutomationDefinition> {
  const record = await step.tx.get<AutomationDefinition>(DEFINITION_REVISION_KIND, revisionId(automationId, revision));
  if (record === undefined) throw new Error(`definition ${automationId} has no revision ${revision}`);
  return record.data;
}
