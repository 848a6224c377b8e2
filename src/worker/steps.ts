import type { WorkerSteps } from '../domain/actor-steps.js';
import { openEvidenceStream } from './evidence-stream.js';
import { settleOnExit } from './exit-settlement.js';

/** The worker's steps that other actors' work reaches (wired by engine.ts). */
export const WORKER_STEPS: WorkerSteps = { openEvidenceStream, settleOnExit };
