// The definition every coven job runs: a familiarInvocation on the bench's runtime, one attempt, due daily.
import { integrityOf } from '../../../../src/index.js';

/** A valid definition body due at the instants `rrule` names (UTC), sealed with its integrity digest. */
export function definition(
  automationId: string,
  revision: number,
  lifecycleState: 'draft' | 'paused',
  rrule: string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    schemaVersion: 'coven.automations.v1',
    automationId,
    revision,
    lifecycleState,
    display: { name: automationId },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule, timezone: 'utc' } },
    conditions: [],
    action: { variant: 'familiarInvocation', version: 1, prompt: `peer bench ${automationId}` },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://bench' },
    },
    runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId: 'principal:bench' } },
  };
  return { ...body, integrity: integrityOf(body) };
}
