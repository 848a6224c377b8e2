/**
 * The doctor's finding codes (diagnostics.doctor.v1), with the severity upstream's reference doctor gives each and
 * the safe next steps in this CLI's own commands. No step deletes records or blindly reruns ambiguous work: the
 * schema's rule, and the reason recovery of an ambiguous run is an operator determination, never a rerun.
 */
export const FINDINGS = {
  'scheduler.no-leader': {
    severity: 'error',
    steps: [
      'start the daemon: coven-automata start (no command run by hand replaces a scheduler)',
      're-run coven-automata doctor --json after one pass',
    ],
  },
  'scheduler.stale-pass': {
    severity: 'warning',
    steps: [
      'check the daemon is alive: GET /healthz on its socket or listen address',
      'the next healthy pass plans the latest due slot (misfire latest); no manual backfill is safe',
    ],
  },
  'scheduler.planning-lag': {
    severity: 'warning',
    steps: [
      'read the pass errors in the daemon log (coven-automata start --log-format json)',
      'inspect: coven-automata health <automationId>',
    ],
  },
  'occurrences.due-backlog': {
    severity: 'warning',
    steps: [
      'make sure the daemon runs; due work is claimed on its next passes',
      'inspect: coven-automata health <automationId>',
    ],
  },
  'occurrences.stale-lease': {
    severity: 'warning',
    steps: [
      'a running engine expires the lease and decides the launch from runtime evidence on its next pass',
      'inspect: coven-automata health <automationId>',
    ],
  },
  'occurrences.recovery-required': {
    severity: 'warning',
    steps: [
      'establish what the session did, then decide it: ' +
        'coven-automata recover <occurrenceId> --determination <failed_deterministic|retry_with_new_attempt> ' +
        '--statement <what you established>',
    ],
  },
  'occurrences.missed-occurrence': {
    severity: 'warning',
    steps: [
      'read why in the changefeed: coven-automata events',
      'misfire latest plans only the latest missed slot; missed slots are never backfilled',
    ],
  },
  'runs.repeated-failures': {
    severity: 'warning',
    steps: [
      'read the failure reasons: coven-automata history <automationId>',
      'fix the cause before running it again; a run re-dispatches real work',
    ],
  },
  'runs.quarantined': {
    severity: 'warning',
    steps: [
      'read why: coven-automata health <automationId>',
      'after fixing the cause: coven-automata unquarantine <automationId>',
    ],
  },
  'runs.ambiguous-outcome': {
    severity: 'error',
    steps: [
      'do NOT rerun blindly: the session may have applied its side effects',
      'check the side effects, then decide: coven-automata recover <occurrenceId> --determination <kind> ' +
        '--statement <what you established>',
    ],
  },
  'runs.cancelled': {
    severity: 'info',
    steps: ['a cancelled run is terminal; read it with coven-automata history <automationId>'],
  },
  'authority.unresolved-refusal': {
    severity: 'error',
    steps: [
      'read which authority check refused it: coven-automata history <automationId>',
      'fix that condition (familiar registration, runtime capabilities, authority availability or an approval); ' +
        'dispatch stays fail-closed until the binding verifies at dispatch time',
    ],
  },
  'authority.stale-identity': {
    severity: 'error',
    steps: [
      'register the familiar again (x-coven-automata.authority.familiar.register.v1), then revise the definition ' +
        'to bind the revision the registry holds',
      'do not drop the binding or loosen requiredCapabilities to force a dispatch',
    ],
  },
  'delivery.commit-failures': {
    severity: 'error',
    steps: [
      'read why each delivery did not commit: coven-automata history <automationId> (the run and its receipt say it)',
      'check the delivery root and the target folder (space, permissions) before the next run delivers again',
      'an ambiguous delivery is never rewritten: compare the target with the receipt of the last committed ' +
        'delivery (its deliveryDigest) before anyone relies on it',
    ],
  },
  'receipts.unverified': {
    severity: 'error',
    steps: ['do not trust the receipt; check it again: coven-automata verify <receipt file>'],
  },
  'events.cursor-lag': {
    severity: 'warning',
    steps: ['the subscriber resumes from its cursor (coven-automata events --after <position>); replay is idempotent'],
  },
  'disk.retention-pressure': {
    severity: 'warning',
    steps: [
      'keep the daemon running with retention on (coven-automata start --retention <class>=<days>); ' +
        'it compacts settled history on its sweeps',
      'a window shorter than the sweep interval (retention sweepEveryMinutes, default 5) keeps history past it ' +
        'until the next sweep: lengthen the window or sweep more often',
      'never delete store records by hand',
    ],
  },
} as const satisfies Record<string, { severity: Severity; steps: readonly string[] }>;

export type Severity = 'info' | 'warning' | 'error';
export type FindingCode = keyof typeof FINDINGS;

/** The diagnostic commands behind the report (the schema's `surface`). */
export const SURFACE: Record<string, string> = {
  doctor: 'coven-automata doctor [--json]',
  list: 'coven-automata list',
  health: 'coven-automata health <automationId>',
  history: 'coven-automata history <automationId>',
  events: 'coven-automata events [--after <position>]',
  recover: 'coven-automata recover <occurrenceId> --determination <kind> --statement <text>',
  retry: 'coven-automata retry <runId>',
  cancel: 'coven-automata cancel <occurrenceId>',
  metrics: 'GET /metrics',
  limits: 'coven-automata limits show',
};
