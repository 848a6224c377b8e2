import type { DispatcherSteps } from '../domain/actor-steps.js';
import { recordUnconfirmedDispatch, settleRunAmbiguous } from './ambiguous-settlement.js';
import { afterTerminalEvidence, openAttempt, settleExpiredHold } from './settlement.js';

/** The dispatcher's steps that other actors' work reaches (wired by engine.ts). */
export const DISPATCHER_STEPS: DispatcherSteps = {
  openAttempt,
  afterTerminalEvidence,
  settleExpiredHold,
  recordUnconfirmedDispatch,
  settleRunAmbiguous,
};
