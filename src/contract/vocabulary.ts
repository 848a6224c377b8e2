/** The four contract actors that may commit transitions. */
export const CONTRACT_ACTORS = ['command_handler', 'scheduler', 'dispatcher', 'worker'] as const;
export type ContractActor = (typeof CONTRACT_ACTORS)[number];

/** The four lifecycle machines of coven.automations.v1, by entity. */
export const ENTITY_KINDS = ['definition', 'occurrence', 'run', 'attempt'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

export const SCHEMA_VERSION = 'coven.automations.v1';

/** Ordered from harmless to irreversible; the order is what recovery reasons over. */
export const SIDE_EFFECT_CLASSES = [
  'none',
  'local_read',
  'local_write',
  'external_read',
  'external_mutation',
  'irreversible_external_mutation',
] as const;
export type SideEffectClass = (typeof SIDE_EFFECT_CLASSES)[number];

/** Failure classes an automatic retry may name; `launch_refused` is deliberately absent: it never retries. */
export const RETRYABLE_FAILURE_CLASSES = ['transient_dispatch', 'lease_expired', 'runtime_unavailable'] as const;
export type RetryableFailureClass = (typeof RETRYABLE_FAILURE_CLASSES)[number];
export type PreOwnershipFailureClass = RetryableFailureClass | 'launch_refused';

/** Upper bound on attempts per run, from attempt.retry.v1 ("fewer than ten attempts exist"). */
export const MAX_ATTEMPTS_PER_RUN = 10;
