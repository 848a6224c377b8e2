import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import { dirname, extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SideEffectClass } from '../contract/vocabulary.js';
import { checkEnvNames, childEnvironment } from './child-env.js';
import { CwdRoots } from './cwd-roots.js';
import type { PostgresSessionEvidence, SessionRow } from './postgres-session-evidence.js';
import type {
  EvidenceLocation,
  LaunchEvidence,
  LaunchRecord,
  LaunchRequest,
  LaunchResult,
  LogWindow,
  Observation,
  Runtime,
  SessionLog,
} from './runtime.js';
import { launchThread, started, type LaunchedProcess } from './launch-thread.js';
import { SessionExitCues } from './session-exit-cues.js';
import { sessionIdOf } from './session-files.js';
import type { SupervisorOrders } from './session-supervisor.js';
import { refused, spawnFailure, workingFolder } from './launch-refusals.js';
import { logOfText, signalOfShellStatus } from './session-log.js';

export interface SupervisedRuntimeOptions {
  runtimeId: string;
  /** A shell command; it reads the prompt from $COVEN_PROMPT (also $COVEN_ATTEMPT_ID, $COVEN_SESSION_ID…). */
  command: string;
  /** Where sessions' evidence lives: the store's database. */
  evidence: PostgresSessionEvidence;
  /** Folders a session may run in, compared by real path. */
  cwdRoots: readonly string[];
  /** Where a definition without a cwd runs and what a relative cwd resolves against. Default: the first root. */
  defaultCwd?: string;
  passEnv?: readonly string[];
  env?: Readonly<Record<string, string>>;
  /** The host recorded with each claim, for people reading the row (liveness is the heartbeat's). */
  host?: string;
  /** How long a launch waits for its supervisor's claim before answering "unknown" (a throw). Default 10 s. */
  startTimeoutMs?: number;
  /** How often a supervisor heartbeats (and looks for a cancel request). Default 2 s. */
  heartbeatMs?: number;
  /** A started session whose heartbeat is older than this (database clock) and has no exit is lost. Default 15 s. */
  staleAfterMs?: number;
  /** Output kept per session for delivery (the digest covers all of it). Default 1 MiB. */
  outputCapBytes?: number;
  sideEffectClass?: SideEffectClass;
}

const here = fileURLToPath(import.meta.url);
/** The supervisor beside this module: `.ts` under tsx and tests, `.js` in the build. */
const SUPERVISOR = join(dirname(here), `session-supervisor${extname(here)}`);

/** Node's arguments for a supervisor: the engine's own (a loader such as tsx), without a debugger's port. */
function supervisorArgs(): string[] {
  const own = process.execArgv.filter((arg) => !arg.startsWith('--inspect'));
  const loads = own.some((arg) => arg.includes('tsx'));
  const loader =
    extname(here) === '.ts' && !loads
      ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href]
      : [];
  return [...own, ...loader, SUPERVISOR];
}

/** The supervisor's one line on fd 3 (`started`, or why not), or a rejection when it says nothing in time. */
function decision(child: LaunchedProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const pipe = child.stdio[3] as Readable;
    let text = '';
    const timer = setTimeout(() => {
      pipe.destroy();
      reject(new Error(`the session supervisor did not claim its start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      pipe.destroy();
      reject(error);
    });
    pipe.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    pipe.once('error', () => undefined);
    pipe.once('close', () => {
      clearTimeout(timer);
      resolve(text.trim());
    });
  });
}

/**
 * Runs each attempt as a shell command under a detached supervisor process that keeps the session's evidence in
 * the PostgreSQL store's own database ({@link PostgresSessionEvidence}): the start claim (an INSERT that a fence
 * of the same key makes impossible), heartbeats, the exit code, the output digest and (up to a cap) the output,
 * and cancel requests. Every engine of the store reads it, on any host: a dead engine's session settles from its
 * exit, a launch it left unanswered is decided by a fence in the table, and a session whose supervisor stopped
 * heartbeating (by the database's clock) is lost. Environment and cwd rules are the child-process runtime's.
 *
 * @example
 * ```ts
 * const evidence = await PostgresSessionEvidence.open(url);
 * const runtime = new SupervisedRuntime({ runtimeId: 'coven-code', command: 'my-agent', evidence, cwdRoots: ['.'] });
 * ```
 */
export class SupervisedRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  readonly sideEffectBoundProven = false;
  readonly launches: LaunchRecord[] = [];
  readonly cwdRoots: CwdRoots;
  readonly evidenceLocation: EvidenceLocation;
  private readonly evidence: PostgresSessionEvidence;
  private readonly inflight = new Map<string, Promise<LaunchResult>>();
  private readonly exits = new SessionExitCues();
  /** Cued as a supervisor this engine started exits, which it does only after recording the session's exit. */
  readonly onSessionExit: NonNullable<Runtime['onSessionExit']> = (listener) => this.exits.subscribe(listener);

  constructor(private readonly options: SupervisedRuntimeOptions) {
    this.runtimeId = options.runtimeId;
    this.sideEffectClass = options.sideEffectClass ?? 'irreversible_external_mutation';
    checkEnvNames([...(options.passEnv ?? []), ...Object.keys(options.env ?? {})], 'SupervisedRuntime env');
    this.evidence = options.evidence;
    this.cwdRoots = new CwdRoots(options.cwdRoots, options.defaultCwd);
    this.evidenceLocation = { host: options.host ?? hostname(), root: options.evidence.root, anyHost: true };
  }

  /** Idempotent per session key: a launch while one with the same key is in flight answers the same. */
  launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const inflight = this.inflight.get(request.sessionKey);
    if (inflight !== undefined) return inflight;
    const launching = this.launchOnce(request, now).finally(() => this.inflight.delete(request.sessionKey));
    this.inflight.set(request.sessionKey, launching);
    return launching;
  }

  /** What an existing row answers a launch: a claim is a started session, a fence a refusal. */
  private answerOf(sessionId: string, row: SessionRow | undefined): LaunchResult | undefined {
    if (row === undefined) return undefined;
    if (row.claim === 'started') return { outcome: 'started', sessionId, cursors: { logCursor: '0' } };
    return refused(`session ${sessionId} was fenced at ${row.claimedAt}: it never started and never will`);
  }

  private async launchOnce(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const sessionId = sessionIdOf(request.sessionKey);
    const prior = this.answerOf(sessionId, await this.evidence.read(sessionId));
    if (prior !== undefined) return prior;
    const location = workingFolder(this.cwdRoots, request.cwd);
    if ('outcome' in location) return location;
    let said: string;
    try {
      // The supervisor starts in the folder the roots pinned (opened and re-checked), and its command inherits it, so
      // a symlink swapped in after the check is never followed.
      const child = await this.cwdRoots.pinned(location, (cwd) => {
        const spawned = this.spawnSupervisor(request, sessionId, cwd);
        spawned.once('exit', () => this.exits.cue({ sessionId, attemptId: request.attemptId }));
        return started(spawned);
      });
      said = await decision(child, this.options.startTimeoutMs ?? 10_000);
      child.unref();
    } catch (error) {
      return spawnFailure(error);
    }
    if (said === 'started') {
      this.launches.push({ sessionKey: request.sessionKey, attemptId: request.attemptId, at: now.toISOString() });
      return { outcome: 'started', sessionId, cursors: { logCursor: '0' } };
    }
    // The supervisor did not claim (another claim or a fence won, or it failed first): the row decides, and a
    // key with no row is fenced here so that supervisor can never claim it later.
    if (await this.evidence.fence(sessionId, request.sessionKey))
      return refused(`the session supervisor did not start the command (${said || 'no word'}); the key is fenced`);
    return this.answerOf(sessionId, await this.evidence.read(sessionId))!;
  }

  private spawnSupervisor(request: LaunchRequest, sessionId: string, cwd: string): LaunchedProcess {
    const child = launchThread.spawn({
      file: process.execPath,
      args: supervisorArgs(),
      cwd,
      stdio: ['pipe', 'ignore', 'ignore', 'pipe'],
    });
    const orders: SupervisorOrders = {
      url: this.evidence.url,
      schema: this.evidence.schema,
      sessionId,
      sessionKey: request.sessionKey,
      attemptId: request.attemptId,
      host: this.evidenceLocation.host,
      command: this.options.command,
      env: childEnvironment(process.env, this.options, {
        COVEN_PROMPT: request.prompt,
        COVEN_AUTOMATION_ID: request.automationId,
        COVEN_OCCURRENCE_ID: request.occurrenceId,
        COVEN_RUN_ID: request.runId,
        COVEN_ATTEMPT_ID: request.attemptId,
        COVEN_SESSION_ID: sessionId,
        COVEN_DEADLINE_AT: request.deadlineAt,
        ...(request.model === undefined ? {} : { COVEN_MODEL: request.model }),
      }),
      heartbeatMs: this.options.heartbeatMs ?? 2_000,
      outputCapBytes: this.options.outputCapBytes ?? 1024 * 1024,
    };
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(JSON.stringify(orders));
    return child;
  }

  /**
   * What the table proves about a launch sent under `sessionKey`: a claim is a session to observe; no row is
   * made permanent by a fence (the supervisor's claim then fails) and answered `never_started`.
   */
  async launchEvidence(sessionKey: string, _now: Date): Promise<LaunchEvidence> {
    await this.inflight.get(sessionKey)?.catch(() => undefined);
    const sessionId = sessionIdOf(sessionKey);
    if (await this.evidence.fence(sessionId, sessionKey))
      return { evidence: 'never_started', detail: `no supervisor had claimed session ${sessionId}; it is fenced` };
    const row = await this.evidence.read(sessionId);
    if (row?.claim === 'started') return { evidence: 'started', sessionId, cursors: { logCursor: '0' } };
    if (row?.claim === 'fenced')
      return { evidence: 'never_started', detail: `session ${sessionId} was fenced at ${row.claimedAt}` };
    return { evidence: 'unknown', detail: `the row of session ${sessionId} vanished while it was being fenced` };
  }

  async observe(sessionId: string, _now?: Date): Promise<Observation> {
    const row = await this.evidence.read(sessionId);
    if (row === undefined) return { status: 'lost', detail: `no session evidence for ${sessionId}` };
    if (row.claim === 'fenced')
      return { status: 'lost', detail: `session ${sessionId} was fenced at ${row.claimedAt} before it started` };
    if (row.exitCode !== null)
      return {
        status: 'exited',
        outcome: row.exitCode === 0 ? 'succeeded' : 'failed',
        exitCode: row.exitCode,
        ...signalField(row.exitCode),
        cancelled: row.cancelRequested,
        ...(row.outputDigest === null ? {} : { outputDigest: row.outputDigest }),
      };
    if ((row.heartbeatAgeMs ?? Infinity) <= (this.options.staleAfterMs ?? 15_000))
      return { status: 'running', cursors: { logCursor: '0' } };
    return {
      status: 'lost',
      detail:
        `the supervisor of session ${sessionId} (process ${row.pid} on ${row.host}) last heartbeat ` +
        `${Math.round(row.heartbeatAgeMs ?? 0)} ms ago, without an exit`,
    };
  }

  /** The session's output (stdout and stderr), once it exited, when it was within the cap. */
  sessionOutput(sessionId: string): Promise<string | undefined> {
    return this.evidence.output(sessionId);
  }

  /**
   * The session's output once it exited (the supervisor records it with the exit, up to the cap); a session still
   * running, or whose output passed the cap, reads as empty so far.
   */
  async sessionLog(sessionId: string, window: LogWindow): Promise<SessionLog | undefined> {
    const row = await this.evidence.read(sessionId);
    if (row === undefined) return undefined;
    const complete = row.exitCode !== null;
    return logOfText(complete ? ((await this.evidence.output(sessionId)) ?? '') : '', window, complete);
  }

  async cancel(sessionId: string, _now: Date): Promise<void> {
    await this.evidence.requestCancel(sessionId);
  }

  /** Drops the session's kept output once it ended (or its supervisor is gone); the row itself stays. */
  async expireSession(sessionId: string): Promise<boolean> {
    if ((await this.observe(sessionId)).status === 'running') return false;
    await this.evidence.dropOutput(sessionId);
    return true;
  }
}

function signalField(exitCode: number): { signal?: string } {
  const signal = signalOfShellStatus(exitCode);
  return signal === undefined ? {} : { signal };
}
