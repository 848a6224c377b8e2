import { AttemptState } from '../../machines/index.js';
import { loadAttempt } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { stateOf, type AttemptAttributes } from '../domain/records.js';

/** A started session's evidence stream is open: the attempt is observed from these cursors on. */
export async function openEvidenceStream(
  step: StepContext,
  attemptId: string,
  sessionId: string,
  cursors: { eventCursor?: string; logCursor?: string },
): Promise<void> {
  if (stateOf(await loadAttempt(step.tx, attemptId)) !== AttemptState.started) return;
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    { type: 'evidence_stream_open', actor: 'worker', sessionId, cursors },
    (a) => ({ ...a, outputCursors: cursors, stateReason: 'observing' }),
  );
}
