import { integrityOf } from '../../src/contract/digest.js';
import type { AutomationDefinition, LifecycleState } from '../../src/domain/definition-body.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { expect } from 'vitest';

let keyCounter = 0;
export const freshKey = () => `test-key-${String(++keyCounter).padStart(6, '0')}`;

/** A command envelope with sensible origin and intent; `extra` may set expectedRevision or the key. */
export function command(
  name: string,
  payload: Record<string, unknown>,
  extra: { expectedRevision?: number; adoptionKey?: string } = {},
) {
  return {
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: extra.adoptionKey ?? freshKey(),
    ...(extra.expectedRevision === undefined ? {} : { expectedRevision: extra.expectedRevision }),
    origin: { principal: { principalId: 'principal:test' }, channel: 'sdk' },
    intent: { statement: `test ${name}` },
    payload,
  };
}

/** A valid rich definition body with its integrity computed. */
export function definitionBody(
  automationId: string,
  overrides: {
    revision?: number;
    lifecycleState?: LifecycleState;
    rrule?: string;
    timezone?: string;
    runtimeId?: string;
    extra?: Record<string, unknown>;
  } = {},
): AutomationDefinition {
  const body: Record<string, unknown> = {
    schemaVersion: 'coven.automations.v1',
    automationId,
    revision: overrides.revision ?? 1,
    lifecycleState: overrides.lifecycleState ?? 'draft',
    display: { name: `Automation ${automationId}` },
    trigger: {
      variant: 'schedule',
      version: 1,
      schedule: { rrule: overrides.rrule ?? 'FREQ=DAILY;BYHOUR=9', timezone: overrides.timezone ?? 'utc' },
    },
    conditions: [],
    action: { variant: 'familiarInvocation', version: 1, prompt: 'Write the daily notes.', cwd: 'work/notes' },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://authority/charm' },
    },
    runtimeRequirements: { runtimeId: overrides.runtimeId ?? 'coven-code', capabilities: ['sessions.launch'] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: { maxAttempts: 3, backoffPolicy: 'exponential', retryableClasses: ['transient_dispatch'] },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId: 'principal:test' } },
    extensions: { 'x-test': { kept: true } },
    ...overrides.extra,
  };
  return { ...body, integrity: integrityOf(body) } as AutomationDefinition;
}

/** Every response must validate against the response schema, whatever its outcome. */
export function expectValidResponse(response: CommandResponse): CommandResponse {
  expect(validateAgainst('command-response.schema.json', response).problems).toEqual([]);
  return response;
}

export function expectRejected(response: CommandResponse, code: string, httpStatus?: number): CommandResponse {
  expectValidResponse(response);
  expect(response.outcome, JSON.stringify(response.error)).toBe('rejected');
  expect(response.error?.code).toBe(code);
  if (httpStatus !== undefined) expect(response.error?.httpStatus).toBe(httpStatus);
  return response;
}

export function expectCommitted(response: CommandResponse): CommandResponse {
  expectValidResponse(response);
  expect(response.outcome, JSON.stringify(response.error)).toBe('committed');
  return response;
}
