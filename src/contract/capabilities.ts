import { ContractError } from './errors.js';
import { SCHEMA_VERSION } from './vocabulary.js';

/**
 * What this engine executes, in the shape of the contract's capabilities.json: positive variants, and
 * refused ones with the reason. Anything not listed as supported is refused with CAPABILITY_UNSUPPORTED.
 */
export const CAPABILITY_PROFILE = {
  version: 1,
  contractProfile: SCHEMA_VERSION,
  supported: {
    triggers: [
      {
        variant: 'schedule',
        notes: 'RRULE FREQ=DAILY|WEEKLY, BYHOUR (default 9), BYDAY for weekly (default MO); slots on the hour',
      },
    ],
    conditions: [],
    actions: [{ variant: 'familiarInvocation', notes: 'one prompt, one exactly bound familiar, one runtime' }],
    triggerPolicies: [
      { variant: 'misfire.latest' },
      { variant: 'overlap.forbid' },
      { variant: 'timeout.required' },
      { variant: 'timezone.utc' },
      { variant: 'timezone.iana' },
      { variant: 'dst.gap.skip' },
      { variant: 'dst.fold.first' },
    ],
    deliveryPolicies: [],
    retentionPolicies: [{ variant: 'retention.standard' }],
    profiles: [
      {
        variant: 'runtime-authority',
        notes:
          'coven.automations.authority.v1 bindings (definition extension), checked at dispatch: authority ' +
          'available, familiar revision current and unrevoked, runtime capabilities held, single-use approvals ' +
          'scoped to one automation with an expiry',
      },
      {
        variant: 'privacy',
        notes: 'published views carry no prompt text, absolute paths or credentials; erase keeps receipts verifiable',
      },
    ],
  },
  refused: [
    { variant: 'trigger.webhook', reason: 'not a v1 trigger' },
    { variant: 'action.pipeline', reason: 'not a v1 action' },
    { variant: 'misfire.backfill', reason: 'v1 collapses missed slots into the latest' },
    { variant: 'timezone.local.durable', reason: '"local" must resolve to utc or an IANA zone before it is stored' },
    {
      variant: 'outputTarget.atomic',
      reason: 'no pinned-revision, crash-recoverable delivery state machine exists yet',
    },
  ],
} as const;

function refuse(variant: string, reason: string): never {
  throw new ContractError('CAPABILITY_UNSUPPORTED', `variant ${variant} is not supported: ${reason}`, {
    contractProfile: SCHEMA_VERSION,
    variant,
    reason,
  });
}

const at = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>(
    (node, key) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined),
    value,
  );

/**
 * Negative negotiation before structural validation: an object of another schema version is
 * SCHEMA_VERSION_UNSUPPORTED, and a variant that is not v1 at all is CAPABILITY_UNSUPPORTED naming it,
 * never a generic validation failure and never silently approximated.
 */
export function negotiateDefinition(body: unknown): void {
  const version = at(body, 'schemaVersion');
  if (typeof version === 'string' && version !== SCHEMA_VERSION) {
    throw new ContractError(
      'SCHEMA_VERSION_UNSUPPORTED',
      `definition schemaVersion ${version} is not supported; this engine speaks ${SCHEMA_VERSION}`,
      {
        schemaVersion: version,
        supported: [SCHEMA_VERSION],
      },
    );
  }
  const trigger = at(body, 'trigger', 'variant');
  if (typeof trigger === 'string' && trigger !== 'schedule')
    refuse(`trigger.${trigger}`, 'only the schedule trigger is a v1 variant');
  const action = at(body, 'action', 'variant');
  if (typeof action === 'string' && action !== 'familiarInvocation')
    refuse(`action.${action}`, 'only familiarInvocation is a v1 action');
  const conditions = at(body, 'conditions');
  if (Array.isArray(conditions) && conditions.length > 0) {
    const variant = at(conditions[0], 'variant');
    refuse(`condition.${typeof variant === 'string' ? variant : 'unknown'}`, 'v1 defines no condition variants');
  }
  const misfire = at(body, 'policies', 'misfire', 'disposition');
  if (typeof misfire === 'string' && misfire !== 'latest')
    refuse(`misfire.${misfire}`, 'v1 collapses missed slots into the latest');
  const overlap = at(body, 'policies', 'concurrency', 'overlap');
  if (typeof overlap === 'string' && overlap !== 'forbid') refuse(`overlap.${overlap}`, 'v1 forbids overlapping runs');
}

/**
 * Shapes that are valid v1 but that this engine refuses to execute. Checked after lookups and revision
 * checks: a stale write is REVISION_CONFLICT whatever its body asks for.
 */
export function refuseUnexecutedShapes(body: {
  trigger: { schedule: { timezone: string } };
  policies: { delivery?: unknown };
}): void {
  if (body.trigger.schedule.timezone === 'local')
    refuse('timezone.local.durable', '"local" must resolve to utc or an IANA zone before it is stored');
  if (body.policies.delivery !== undefined)
    refuse('outputTarget.atomic', 'no pinned-revision, crash-recoverable delivery state machine exists yet');
}
