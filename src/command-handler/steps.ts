import type { CommandHandlerSteps } from '../domain/actor-steps.js';
import { acknowledgeCancellation } from './cancellation-acknowledgment.js';

/** The command handler's steps that other actors' work reaches (wired by engine.ts). */
export const COMMAND_HANDLER_STEPS: CommandHandlerSteps = { acknowledgeCancellation };
