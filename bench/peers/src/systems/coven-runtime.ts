// The runtime coven's runs launch in: it answers at once (a launch starts a session that has already exited 0),
// as the peers' handlers return at once. It stands for a runtime outside the engine's process: in the crash
// workload it keeps its launches in the execution log, which outlives the engine's process, and answers the
// restarted engine's questions about launches whose answers were lost from that log. It cues each session's exit
// (Runtime.onSessionExit) as it launches it, unless made without cues.
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { LaunchRequest, LaunchResult, Observation, Runtime } from '../../../../src/index.js';
import { ExitCueSource } from '../../../fixtures.js';
import type { JobHooks } from './system.js';

type LaunchEvidence = Awaited<ReturnType<NonNullable<Runtime['launchEvidence']>>>;

const sessionIdOf = (sessionKey: string) =>
  `bench-${createHash('sha256').update(sessionKey).digest('hex').slice(0, 32)}`;

export class ImmediateRuntime implements Runtime {
  readonly runtimeId = 'coven-code';
  readonly sideEffectClass = 'local_write' as const;
  readonly sideEffectBoundProven = true;
  hooks: JobHooks | undefined;
  /** When set, each launch appends `<occurrenceId> <sessionKey>` here before it answers. */
  executionLog: string | undefined;
  /** Launches this runtime proved never started: they may not start later. */
  private readonly fenced = new Set<string>();
  private readonly cues: ExitCueSource;
  readonly onSessionExit: Runtime['onSessionExit'];

  constructor(cuesExits: boolean) {
    this.cues = new ExitCueSource(cuesExits);
    this.onSessionExit = this.cues.onSessionExit;
  }

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    if (this.fenced.has(request.sessionKey))
      return { outcome: 'failed', failureClass: 'launch_refused', detail: 'fenced off as never started' };
    if (this.executionLog !== undefined)
      appendFileSync(this.executionLog, `${request.occurrenceId} ${request.sessionKey}\n`);
    this.hooks?.started(request.occurrenceId);
    const sessionId = sessionIdOf(request.sessionKey);
    this.cues.cue({ sessionId, attemptId: request.attemptId });
    return { outcome: 'started', sessionId, cursors: {} };
  }

  async observe(sessionId: string): Promise<Observation> {
    return {
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
      cancelled: false,
      outputDigest: createHash('sha256').update(sessionId).digest('hex'),
    };
  }

  async cancel(): Promise<void> {}

  async launchEvidence(sessionKey: string): Promise<LaunchEvidence> {
    const log = this.executionLog;
    const launched =
      log !== undefined &&
      existsSync(log) &&
      readFileSync(log, 'utf8')
        .split('\n')
        .some((line) => line.split(' ')[1] === sessionKey);
    if (launched) return { evidence: 'started', sessionId: sessionIdOf(sessionKey), cursors: {} };
    this.fenced.add(sessionKey);
    return { evidence: 'never_started', detail: `no launch under ${sessionKey} in the execution log` };
  }
}
