import { OccurrenceState } from '../../machines/index.js';
import {
  AUTHORITY_KINDS,
  AUTHORITY_REFUSAL_PREFIX,
  bindingOf,
  type AuthorityBinding,
  type FamiliarEntry,
} from '../domain/authority.js';
import type { StoreReader } from '../store/store.js';

/** A live definition whose binding names a familiar revision the registry does not hold, unrevoked. */
export interface StaleBinding {
  automationId: string;
  familiarId: string;
  boundRevision: number;
  /** What the registry holds: `charm@2`, `charm@1 (revoked)`, or `nothing`. */
  registry: string;
}

/** The binding's familiar as the registry holds it now, when that is not the revision the binding names. */
export async function staleBinding(
  reader: StoreReader,
  definition: { automationId: string; extensions?: Record<string, unknown> },
): Promise<StaleBinding | undefined> {
  const binding: AuthorityBinding | undefined = bindingOf(definition);
  if (binding === undefined) return undefined;
  const held = (await reader.get<FamiliarEntry>(AUTHORITY_KINDS.familiar, binding.familiarId))?.data;
  if (held !== undefined && !held.revoked && held.revision === binding.familiarRevision) return undefined;
  return {
    automationId: definition.automationId,
    familiarId: binding.familiarId,
    boundRevision: binding.familiarRevision,
    registry: held === undefined ? 'nothing' : `${held.familiarId}@${held.revision}${held.revoked ? ' (revoked)' : ''}`,
  };
}

interface Settled {
  occurrenceId: string;
  automationId: string;
  state: string;
  stateReason: string;
  updatedAt: string;
}

/**
 * Occurrences the authority gate refused that nothing has resolved: no occurrence of the same automation
 * succeeded after them. A refusal stays fail-closed until its cause is fixed, so it holds the automation's work.
 */
export function unresolvedRefusals<T extends Settled>(occurrences: T[]): T[] {
  const lastSuccess = new Map<string, string>();
  for (const o of occurrences)
    if (o.state === OccurrenceState.succeeded && o.updatedAt > (lastSuccess.get(o.automationId) ?? ''))
      lastSuccess.set(o.automationId, o.updatedAt);
  return occurrences.filter(
    (o) =>
      o.state === OccurrenceState.failed &&
      o.stateReason.startsWith(AUTHORITY_REFUSAL_PREFIX) &&
      o.updatedAt > (lastSuccess.get(o.automationId) ?? ''),
  );
}

export interface AuthorityFinding {
  code: 'authority.unresolved-refusal' | 'authority.stale-identity';
  subjectIds: string[];
  observed: string;
}

const count = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** The doctor's two authority findings, from the refusals still holding work and the stale bindings. */
export function authorityFindings(refused: Settled[], stale: StaleBinding[]): AuthorityFinding[] {
  const findings: AuthorityFinding[] = [];
  if (refused.length > 0) {
    const automations = new Set(refused.map((o) => o.automationId));
    const latest = [...refused].sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1))[0]!;
    findings.push({
      code: 'authority.unresolved-refusal',
      subjectIds: refused.map((o) => o.occurrenceId),
      observed:
        `${count(refused.length, 'occurrence')} of ${count(automations.size, 'automation')} refused at dispatch ` +
        `by runtime authority with no success since; latest: ${latest.stateReason}`,
    });
  }
  if (stale.length > 0)
    findings.push({
      code: 'authority.stale-identity',
      subjectIds: stale.map((s) => s.automationId),
      observed: stale
        .map((s) => `${s.automationId} binds ${s.familiarId}@${s.boundRevision}; the registry holds ${s.registry}`)
        .join('; '),
    });
  return findings;
}
