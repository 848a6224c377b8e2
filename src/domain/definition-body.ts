import { ContractError } from '../contract/errors.js';
import { integrityOf, verifyIntegrity, type Digest } from '../contract/digest.js';
import { validateAgainst } from '../contract/schemas.js';
import { checkTimezone, parseRrule } from '../schedule/rrule.js';
import { checkScheduleTerms, scheduleExtensionOf } from '../schedule/schedule-extension.js';
import { checkOverlapExtension, OVERLAP_EXTENSION } from '../schedule/overlap-extension.js';
import { negotiateDefinition, refuseUnexecutedShapes, refuseUnknownExtensions } from '../contract/capabilities.js';
import { AUTHORITY_EXTENSION, checkBinding } from './authority.js';
import { checkLimitsExtension, LIMITS_EXTENSION } from './flow-limits.js';

export type LifecycleState = 'draft' | 'paused' | 'active' | 'disabled' | 'invalid';

/** The contract's AutomationDefinition, as validated by automation-definition.schema.json. */
export interface AutomationDefinition {
  schemaVersion: 'coven.automations.v1';
  automationId: string;
  revision: number;
  integrity: Digest;
  lifecycleState: LifecycleState;
  deletion?: { tombstoned: true; requestedAt: string; requestedBy?: { principalId: string }; reason?: string };
  display: { name: string; description?: string; tags?: string[] };
  trigger: { variant: 'schedule'; version: 1; schedule: { rrule: string; timezone: string } };
  conditions?: unknown[];
  action: { variant: 'familiarInvocation'; version: 1; prompt: string; cwd?: string };
  binding: {
    familiarBindingPolicy: 'exact';
    familiarId?: string;
    authority: { approvalPolicyRef: string; approvalRecordRef?: string };
  };
  runtimeRequirements?: { runtimeId: string; capabilities: string[]; model?: string };
  policies: {
    timeout: { perRunMinutes: number };
    retry: {
      maxAttempts: number;
      backoffPolicy: 'none' | 'fixed' | 'exponential';
      backoffSeconds?: number;
      retryableClasses?: Array<'transient_dispatch' | 'lease_expired' | 'runtime_unavailable'>;
    };
    concurrency: { overlap: 'forbid' };
    misfire: { disposition: 'latest' };
    delivery?: { outputTarget: string; mode: 'atomic' };
    retention: Record<string, { classification: string }>;
  };
  provenance?: {
    createdBy: { principalId: string };
    createdAt?: string;
    updatedBy?: { principalId: string };
    updatedAt?: string;
    importedFrom?: string;
  };
  activation?: { effectiveFrom?: string; effectiveUntil?: string };
  extensions?: Record<string, unknown>;
}

/** Version and variant negotiation, then structure (schema, closed objects): the checks before any lookup. */
export function checkDefinitionShape(body: unknown, field = 'payload.definition'): AutomationDefinition {
  negotiateDefinition(body);
  const verdict = validateAgainst('automation-definition.schema.json', body);
  if (!verdict.valid) {
    throw new ContractError('VALIDATION_FAILED', 'automation definition failed validation', {
      field,
      problems: verdict.problems.slice(0, 50),
    });
  }
  return body as AutomationDefinition;
}

/**
 * Validates a submitted definition body completely: schema, then capabilities (variants this engine
 * executes), then the integrity digest the client computed.
 */
export function checkDefinitionBody(body: unknown, field = 'payload.definition'): AutomationDefinition {
  const definition = checkDefinitionShape(body, field);
  checkDefinitionSemantics(definition, field);
  return definition;
}

/** Capabilities and integrity of a body whose shape is already valid. */
export function checkDefinitionSemantics(definition: AutomationDefinition, field = 'payload.definition'): void {
  checkCapabilities(definition);
  const integrity = verifyIntegrity(definition as unknown as Record<string, unknown>);
  if (!integrity.valid) {
    throw new ContractError('VALIDATION_FAILED', 'definition integrity does not match its canonical digest', {
      field: `${field}.integrity`,
      expected: integrity.actual,
      carried: integrity.expected ?? null,
    });
  }
}

/** Variants the schema admits but this engine refuses to execute (see the capability profile). */
export function checkCapabilities(definition: AutomationDefinition): void {
  refuseUnexecutedShapes(definition);
  refuseUnknownExtensions(definition.extensions);
  if (scheduleExtensionOf(definition) === undefined) {
    parseRrule(definition.trigger.schedule.rrule);
    checkTimezone(definition.trigger.schedule.timezone);
  } else checkScheduleTerms(definition);
  const overlap = definition.extensions?.[OVERLAP_EXTENSION];
  if (overlap !== undefined) checkOverlapExtension(overlap);
  const limits = definition.extensions?.[LIMITS_EXTENSION];
  if (limits !== undefined) checkLimitsExtension(limits);
  checkAuthorityBinding(definition);
}

/** A Runtime Authority binding must be well formed and bind the familiar the definition names. */
function checkAuthorityBinding(definition: AutomationDefinition): void {
  const raw = definition.extensions?.[AUTHORITY_EXTENSION];
  if (raw === undefined) return;
  const binding = checkBinding(raw, definition.automationId);
  const named = definition.binding.familiarId;
  if (named !== undefined && named !== binding.familiarId)
    throw new ContractError(
      'VALIDATION_FAILED',
      `authority binding names familiar ${binding.familiarId}, the definition binds ${named}`,
      { field: `extensions.${AUTHORITY_EXTENSION}.familiarId` },
    );
}

/** A stored body for a new revision: revision, lifecycle state and timestamps set, integrity recomputed. */
export function nextBody(
  base: AutomationDefinition,
  changes: {
    revision: number;
    lifecycleState: LifecycleState;
    now: string;
    principalId: string;
    deletion?: AutomationDefinition['deletion'];
  },
): AutomationDefinition {
  const { integrity: _old, deletion: _oldDeletion, ...rest } = base;
  const body: Omit<AutomationDefinition, 'integrity'> & { integrity?: Digest } = {
    ...structuredClone(rest),
    revision: changes.revision,
    lifecycleState: changes.lifecycleState,
    provenance: {
      ...(base.provenance ?? { createdBy: { principalId: changes.principalId } }),
      updatedBy: { principalId: changes.principalId },
      updatedAt: changes.now,
    },
    ...(changes.deletion === undefined ? {} : { deletion: changes.deletion }),
  };
  body.integrity = integrityOf(body as Record<string, unknown>);
  return body as AutomationDefinition;
}
