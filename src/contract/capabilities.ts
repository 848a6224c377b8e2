import { ContractError } from './errors.js';
import { SCHEMA_VERSION } from './vocabulary.js';

const HOME_RELATIVE = 'a "~" target depends on the host user; name the target relative to the delivery root';

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
    deliveryPolicies: [
      {
        variant: 'outputTarget.atomic',
        notes:
          'the output of a succeeded session is spooled beside the target (relative to the engine delivery root), ' +
          'synced, renamed over it and its folder synced; x-coven-automata.delivery.v1 records it pending before ' +
          'the write; a delivery that does not commit fails its attempt, so the run never reads as succeeded; a ' +
          'delivery found pending with no engine writing it is ambiguous and never rewritten',
      },
    ],
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
  /**
   * This engine's own extensions, beyond the contract: each carried in the object's `extensions` bag under its
   * name, validated by its schema (spec/coven-automata/v1), refused by an engine that does not list it here.
   */
  extensions: [
    {
      name: 'x-coven-automata.schedule.v1',
      carriedIn: 'definition.extensions',
      schema: 'spec/coven-automata/v1/schedule-extension.schema.json',
      notes:
        'a 5-field cron expression (cron-parser) or an RFC 5545 rule (FREQ MINUTELY to YEARLY, INTERVAL, BY* ' +
        'parts, BYSETPOS, COUNT, UNTIL, dtstart, exdate) in utc or an IANA zone; the trigger then carries ' +
        'FREQ=MINUTELY;X-COVEN-AUTOMATA-SCHEDULE=V1 in the same zone; slots on whole minutes (minimum interval one ' +
        'minute); dst.gap.skip and dst.fold.first as for the v1 trigger',
    },
    {
      name: 'x-coven-automata.overlap.v1',
      carriedIn: 'definition.extensions',
      schema: 'spec/coven-automata/v1/overlap-extension.schema.json',
      notes:
        'policy forbid (a slot due while the automation is busy is skipped), buffer-one (it waits, the latest ' +
        'one, and runs when the automation is free) or cancel-other (the live scheduled run is asked to cancel, ' +
        'and the slot runs once the runtime acknowledged); catchUp {windowMinutes ≤ 21600, order oldest-first|' +
        'latest-only}: slots missed within the window run when the automation is free, older ones are recorded ' +
        "and skipped; allow (runs side by side: each occurrence carries overlap allow, which the stores' one-live " +
        'rule leaves out)',
    },
    {
      name: 'x-coven-automata.limits.v1',
      carriedIn: 'definition.extensions',
      schema: 'spec/coven-automata/v1/limits-extension.schema.json',
      notes:
        'tags (the store-wide caps and rate limits a claim counts against), priority (-1000..1000: among work ' +
        'waiting on one limit, the higher is claimed first, then the earlier due) and a rate limit of the ' +
        'automation ({limit, perMinutes}); work a limit holds back stays eligible and is claimed when it lets it ' +
        'through; a run-now a limit refuses is CONCURRENCY_LIMIT (429, retryable)',
    },
    {
      name: 'x-coven-automata.limits.set.v1',
      carriedIn: 'command',
      schema: 'spec/coven-automata/v1/flow-limits.schema.json',
      notes:
        'store-wide caps on sessions in flight per runtime and per tag, and rate limits per tag, held by every ' +
        'engine of the store (each claim under a limit writes its gate record, so concurrent claims conflict); ' +
        'x-coven-automata.limits.get.v1 reads them with what each gate holds',
    },
  ],
  refused: [
    { variant: 'trigger.webhook', reason: 'not a v1 trigger' },
    { variant: 'action.pipeline', reason: 'not a v1 action' },
    { variant: 'misfire.backfill', reason: 'v1 collapses missed slots into the latest' },
    { variant: 'timezone.local.durable', reason: '"local" must resolve to utc or an IANA zone before it is stored' },
    { variant: 'outputTarget.home-relative', reason: HOME_RELATIVE },
  ],
} as const;

/**
 * The `x-coven-automata.*` extensions a definition may carry, each advertised in {@link CAPABILITY_PROFILE}. Any other
 * key under this engine's prefix is refused: it was meant for a build that interprets it, and running the definition
 * without it would run something its author did not ask for. Other namespaces are the contract's: preserved.
 */
export const DEFINITION_EXTENSIONS: readonly string[] = CAPABILITY_PROFILE.extensions
  .filter((extension) => extension.carriedIn === 'definition.extensions')
  .map((extension) => extension.name);

/** Fails closed on an `x-coven-automata.*` definition extension this engine does not interpret. */
export function refuseUnknownExtensions(extensions: Record<string, unknown> | undefined): void {
  for (const key of Object.keys(extensions ?? {}))
    if (key.startsWith('x-coven-automata.') && !DEFINITION_EXTENSIONS.includes(key))
      refuse(key, `this engine does not interpret ${key}; it interprets ${DEFINITION_EXTENSIONS.join(', ')}`);
}

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
  policies: { delivery?: { outputTarget: string } };
}): void {
  if (body.trigger.schedule.timezone === 'local')
    refuse('timezone.local.durable', '"local" must resolve to utc or an IANA zone before it is stored');
  if (body.policies.delivery !== undefined) checkOutputTarget(body.policies.delivery.outputTarget);
}

/**
 * An atomic outputTarget names a file under the engine's delivery root: relative, without `..` segments, so no
 * stored definition can reach outside that root whichever engine runs it. A home-relative target is refused like
 * a "local" timezone: what it names depends on the host. Pure: the delivery port checks the disk again.
 */
export function checkOutputTarget(target: string, field = 'payload.definition.policies.delivery.outputTarget'): void {
  if (target.startsWith('~')) refuse('outputTarget.home-relative', HOME_RELATIVE);
  const segments = target.split(/[\\/]/);
  const problem =
    target.trim().length === 0
      ? 'is empty'
      : target.startsWith('/') || target.startsWith('\\') || /^[A-Za-z]:/.test(target)
        ? 'is absolute; name it relative to the delivery root'
        : target.includes('\0')
          ? 'contains a NUL character'
          : segments.includes('..')
            ? 'leaves the delivery root through a ".." segment'
            : segments.at(-1) === '' || segments.at(-1) === '.'
              ? 'names a folder, not a file'
              : undefined;
  if (problem !== undefined)
    throw new ContractError('VALIDATION_FAILED', `outputTarget ${problem}`, { field, outputTarget: target });
}
