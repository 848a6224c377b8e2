import { ContractError } from '../contract/errors.js';
import { bindingOf } from '../domain/authority.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import type { StoreReader } from '../store/store.js';

/**
 * AUTHORITY_REQUIRED (403) for operator commands that would open a new attempt of a run bound under Runtime
 * Authority: its authority was decided for the run's one dispatch, and an operator retry cannot carry it over.
 */
export async function requireNoAuthorityProfile(
  reader: StoreReader,
  run: { id: string; data: { attributes: { automationId: string; automationRevision: number } } },
  command: string,
): Promise<void> {
  const { automationId, automationRevision } = run.data.attributes;
  const pinned = await reader.get<AutomationDefinition>(
    DEFINITION_REVISION_KIND,
    revisionId(automationId, automationRevision),
  );
  const binding = pinned === undefined ? undefined : bindingOf(pinned.data);
  if (binding === undefined) return;
  throw new ContractError(
    'AUTHORITY_REQUIRED',
    `${command} cannot open a new attempt of run ${run.id}: it runs under a Runtime Authority binding ` +
      `(principal ${binding.principalId}, familiar ${binding.familiarId}@${binding.familiarRevision})`,
    { runId: run.id, automationId, principalId: binding.principalId },
  );
}
