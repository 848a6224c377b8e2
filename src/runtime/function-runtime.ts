import { sha256Hex } from '../contract/digest.js';
import type { SideEffectClass } from '../contract/vocabulary.js';
import type {
  LaunchEvidence,
  LaunchRecord,
  LaunchRequest,
  LaunchResult,
  LogWindow,
  Observation,
  Runtime,
  SessionLog,
} from './runtime.js';
import { logOfText } from './session-log.js';
import { SessionExitCues } from './session-exit-cues.js';
import { traceparentOf } from './trace-context.js';

/** What an in-process automation returns: its outcome and, optionally, output to digest. */
export interface FunctionResult {
  outcome: 'succeeded' | 'failed';
  output?: string;
}

interface Session {
  settled?: { outcome: 'succeeded' | 'failed'; digest: string; output?: string; detail?: string };
  abort: AbortController;
}

/**
 * Runs attempts as async functions inside the embedding process. Sessions live in memory: after a
 * process restart they are `lost`, and the engine sends them to operator recovery rather than guessing. Its
 * launch evidence covers this process only: a launch sent by a process that died may have run part of its
 * function before it died with it, so such a launch is `unknown` and goes to recovery when its lease lapses
 * (failed outright when the runtime's side-effect bound is proven, else to the operator). A launch is
 * idempotent per session key within the process.
 *
 * @example
 * ```ts
 * const runtime = new FunctionRuntime('reports', async (request, signal) => {
 *   const text = await buildReport(request.prompt, { signal });
 *   return { outcome: 'succeeded', output: text };
 * });
 * ```
 */
export class FunctionRuntime implements Runtime {
  readonly launches: LaunchRecord[] = [];
  private readonly sessions = new Map<string, Session>();
  /** Session id by session key, for this process's launches. */
  private readonly byKey = new Map<string, string>();
  private counter = 0;
  private readonly exits = new SessionExitCues();
  /** Hand the function the occurrence's W3C trace context as `request.traceparent` (off by default). */
  traceContext = false;

  constructor(
    readonly runtimeId: string,
    private readonly run: (request: LaunchRequest, signal: AbortSignal) => Promise<FunctionResult>,
    readonly sideEffectClass: SideEffectClass = 'local_write',
    readonly sideEffectBoundProven = false,
  ) {}

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const known = this.byKey.get(request.sessionKey);
    if (known !== undefined) return { outcome: 'started', sessionId: known, cursors: { eventCursor: `${known}:0` } };
    const sessionId = `fn-${++this.counter}-${request.attemptId}`.slice(0, 160);
    const session: Session = { abort: new AbortController() };
    this.sessions.set(sessionId, session);
    this.byKey.set(request.sessionKey, sessionId);
    this.launches.push({ sessionKey: request.sessionKey, attemptId: request.attemptId, at: now.toISOString() });
    // Started, not awaited: the outcome is cued to a running engine, and observed by passes.
    void Promise.resolve()
      .then(() =>
        this.run(
          this.traceContext ? { ...request, traceparent: traceparentOf(request.occurrenceId) } : request,
          session.abort.signal,
        ),
      )
      .then(
        (result) => {
          const output = result.output ?? '';
          session.settled = { outcome: result.outcome, digest: sha256Hex(output), output };
        },
        (error: unknown) => {
          session.settled = {
            outcome: 'failed',
            digest: sha256Hex(''),
            detail: (error as Error)?.message ?? String(error),
          };
        },
      )
      .then(() => this.exits.cue({ sessionId, attemptId: request.attemptId }));
    return { outcome: 'started', sessionId, cursors: { eventCursor: `${sessionId}:0` } };
  }

  /** Cued once a session's function has returned or thrown: its outcome is then what `observe` reports. */
  readonly onSessionExit: NonNullable<Runtime['onSessionExit']> = (listener) => this.exits.subscribe(listener);

  async observe(sessionId: string): Promise<Observation> {
    const session = this.sessions.get(sessionId);
    if (session === undefined)
      return { status: 'lost', detail: `session ${sessionId} is not in this process (restarted?)` };
    if (session.settled === undefined) return { status: 'running' };
    const cancelled = session.abort.signal.aborted;
    return {
      status: 'exited',
      outcome: cancelled ? 'failed' : session.settled.outcome,
      exitCode: session.settled.outcome === 'succeeded' && !cancelled ? 0 : 1,
      cancelled,
      outputDigest: session.settled.digest,
      ...(session.settled.detail === undefined ? {} : { detail: session.settled.detail }),
    };
  }

  /** What the session's function returned as its output, once it returned. */
  async sessionOutput(sessionId: string): Promise<string | undefined> {
    return this.sessions.get(sessionId)?.settled?.output;
  }

  /**
   * What the session's function returned as its output, once it returned (a function prints nothing while it
   * runs); a function that threw has no output, and its error's message travels as the exit's `detail`.
   */
  async sessionLog(sessionId: string, window: LogWindow): Promise<SessionLog | undefined> {
    const session = this.sessions.get(sessionId);
    if (session === undefined) return undefined;
    return logOfText(session.settled?.output ?? '', window, session.settled !== undefined);
  }

  /**
   * A launch of this process is a session to observe. Any other key was sent by a process that is gone, and
   * its session (if it ever ran) died with it, leaving no trace to tell whether the function ran or what it
   * did: `unknown`, for operator recovery, never a guess either way.
   */
  async launchEvidence(sessionKey: string): Promise<LaunchEvidence> {
    const sessionId = this.byKey.get(sessionKey);
    if (sessionId !== undefined) return { evidence: 'started', sessionId, cursors: { eventCursor: `${sessionId}:0` } };
    return {
      evidence: 'unknown',
      detail:
        `launch ${sessionKey} was sent by another process; ` +
        'an in-process session leaves no evidence of whether it ran',
    };
  }

  async cancel(sessionId: string): Promise<void> {
    this.sessions.get(sessionId)?.abort.abort();
  }

  /** Waits until every started session has settled (embedding helpers and tests). */
  async drain(): Promise<void> {
    for (let i = 0; i < 1000 && [...this.sessions.values()].some((s) => s.settled === undefined); i++)
      await new Promise((r) => setImmediate(r));
  }
}
