import type { ValidationVerdict } from '../../src/guards/common.js';
import { definitionGuards, type DefinitionContext, type DefinitionEvent } from '../../src/guards/definition.js';
import { describeGuards } from './guard-cases.js';

type Args = { context: DefinitionContext; event: DefinitionEvent };
const context: DefinitionContext = { automationId: 'nightly-report', revision: 3 };
const base = { actor: 'command_handler' as const, now: '2026-03-01T09:00:00.000Z' };
const valid: ValidationVerdict = { valid: true, problems: [] };
const invalid = { valid: false, problems: ['/trigger/schedule/rrule: FREQ=HOURLY is unsupported'] };
const met = { familiar: true, authority: true, runtime: true };
const revise = (revision: number, validation = valid): Args => ({
  context,
  event: { ...base, type: 'definition_revise_committed', revision, validation },
});

describeGuards<Args>('definition.v1 guards', definitionGuards, {
  revisionValidated: {
    pass: revise(4),
    fail: {
      'the body is invalid': revise(4, invalid),
      'the revision does not increase': revise(3),
      'another event': { context, event: { ...base, type: 'definition_paused', revision: 4 } },
    },
  },
  revisionRepaired: {
    pass: revise(5),
    fail: { 'validation still fails': revise(5, invalid), 'the revision goes back': revise(2) },
  },
  requirementsValidated: {
    pass: { context, event: { ...base, type: 'definition_activated', revision: 4, requirements: met } },
    fail: {
      'the familiar is unbound': {
        context,
        event: { ...base, type: 'definition_activated', revision: 4, requirements: { ...met, familiar: false } },
      },
      'the runtime is unavailable': {
        context,
        event: { ...base, type: 'definition_activated', revision: 4, requirements: { ...met, runtime: false } },
      },
      'authority is unsatisfied': {
        context,
        event: { ...base, type: 'definition_activated', revision: 4, requirements: { ...met, authority: false } },
      },
    },
  },
  definitionUnsatisfiable: {
    pass: {
      context,
      event: { ...base, type: 'definition_invalidated', revision: 4, validation: invalid, requirements: met },
    },
    fail: {
      'body and dependencies are fine': {
        context,
        event: { ...base, type: 'definition_invalidated', revision: 4, validation: valid, requirements: met },
      },
    },
  },
  explicitReenable: {
    pass: { context, event: { ...base, type: 'definition_reenabled', revision: 4, explicit: true } },
    fail: {
      'the re-enable is not explicit': {
        context,
        event: { ...base, type: 'definition_reenabled', revision: 4, explicit: false },
      },
    },
  },
});
