import { RunState } from '../../machines/index.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { stateOf, type RunAttributes, type RunRecord } from '../domain/records.js';

/** An accepted or running run settles cancelled by request (an operator's cancel, or a tombstone), for `reason`. */
export async function settleRunCancelled(step: StepContext, run: RunRecord, reason: string): Promise<void> {
  if (stateOf(run) !== RunState.accepted && stateOf(run) !== RunState.running) return;
  await moveEntity<RunAttributes>(
    step,
    'run',
    run.id,
    { type: 'cancel_acknowledged', actor: 'command_handler' },
    (a) => ({
      ...a,
      stateReason: reason,
      finishedAt: step.now,
      terminalDisposition: { outcome: 'cancelled', failureClass: 'cancelled_by_request', detail: reason },
    }),
  );
}
