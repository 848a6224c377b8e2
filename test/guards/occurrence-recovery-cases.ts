import type { GuardCase } from './guard-cases.js';
import { claimed, ev, later, recoverAttempt, running, sideEffects, type Args } from './occurrence-guard-fixtures.js';

/** The occurrence guards that judge side effects and recover a failed attempt: whether a retry may run, and how. */
export const recoveryCases: Record<string, GuardCase<Args>> = {
  noSideEffectsPossible: {
    pass: { context: claimed, event: ev('scheduler', { type: 'recovery_determined', sideEffects: sideEffects() }) },
    fail: {
      'the bound allows writes': {
        context: claimed,
        event: ev('scheduler', {
          type: 'recovery_determined',
          sideEffects: sideEffects({ boundClass: 'local_write' }),
        }),
      },
      'the bound is not proven': {
        context: claimed,
        event: ev('scheduler', { type: 'recovery_determined', sideEffects: sideEffects({ proven: false }) }),
      },
    },
  },
  sideEffectsNotRuledOut: {
    pass: {
      context: claimed,
      event: ev('scheduler', {
        type: 'recovery_ambiguous',
        sideEffects: sideEffects({ boundClass: 'external_mutation' }),
      }),
    },
    fail: {
      'nothing was launched': {
        context: claimed,
        event: ev('scheduler', {
          type: 'recovery_ambiguous',
          sideEffects: sideEffects({ launched: false, boundClass: 'external_mutation' }),
        }),
      },
    },
  },
  recoverFailedDeterministic: {
    pass: {
      context: running,
      event: ev('command_handler', {
        type: 'operator_recovery_failed',
        evidenceDetermination: 'failed_deterministic',
        statement: 'the job never wrote',
      }),
    },
    fail: {
      'the determination asks for a retry': {
        context: running,
        event: ev('command_handler', {
          type: 'operator_recovery_failed',
          evidenceDetermination: 'retry_with_new_attempt',
          statement: 'x',
        }),
      },
      'there is no statement': {
        context: running,
        event: ev('command_handler', {
          type: 'operator_recovery_failed',
          evidenceDetermination: 'failed_deterministic',
          statement: '',
        }),
      },
    },
  },
  recoverWithNewAttempt: {
    pass: recoverAttempt(),
    fail: {
      'the prior disposition is not ambiguous': recoverAttempt({ priorDisposition: 'failed' }),
      'the determination is failed_deterministic': recoverAttempt({ evidenceDetermination: 'failed_deterministic' }),
      'the deadline passed': recoverAttempt({ now: later, leaseExpiresAt: '2026-03-01T12:00:00.000Z' }),
      'the attempt number skips': recoverAttempt({ attemptNumber: 3 }),
    },
  },
};
