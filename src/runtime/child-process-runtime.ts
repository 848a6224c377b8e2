import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { sha256Hex } from '../contract/digest.js';
import type { SideEffectClass } from '../contract/vocabulary.js';
import { checkEnvNames, childEnvironment } from './child-env.js';
import { CwdRoots } from './cwd-roots.js';
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
import { WRAPPER, claimDecided } from './session-wrapper.js';
import {
  claimantAlive,
  closeQuietly,
  createExclusive,
  ensurePrivateDir,
  fenceText,
  folderEvidenceRoot,
  exitTempFor,
  openPrivate,
  readStart,
  removeQuietly,
  sessionIdOf,
  sessionPaths,
  sizeOf,
  umaskVariable,
  type SessionPaths,
} from './session-files.js';
import { refused, spawnFailure, workingFolder } from './launch-refusals.js';
import { readLogFile, signalOfShellStatus } from './session-log.js';
import { traceparentOf } from './trace-context.js';

export interface ChildProcessRuntimeOptions {
  runtimeId: string;
  /** A shell command; it reads the prompt from $COVEN_PROMPT (also $COVEN_ATTEMPT_ID, $COVEN_AUTOMATION_ID…). */
  command: string;
  /** Where session files, logs and exit codes live (0700, files 0600); they outlive the engine process. */
  sessionsDir: string;
  /**
   * Folders a session may run in, compared by real path. Default: `[defaultCwd]`, else the sessions folder's
   * parent.
   */
  cwdRoots?: readonly string[];
  /** Where a definition without a cwd runs and what a relative cwd resolves against. Default: the first root. */
  defaultCwd?: string;
  /** Engine variables passed to children by name, beyond {@link CHILD_ENV_ALLOWLIST}. */
  passEnv?: readonly string[];
  /** Fixed variables for every child. */
  env?: Readonly<Record<string, string>>;
  /**
   * The host this runtime's evidence (process ids) belongs to, recorded with each launch (default
   * `os.hostname()`; give the engine's `host` where names repeat across machines).
   */
  host?: string;
  /** How long a launch waits for the wrapper to claim its start before answering "unknown" (a throw). Default 10 s. */
  startTimeoutMs?: number;
  sideEffectClass?: SideEffectClass;
  /** Pass the occurrence's W3C trace context to the command as `TRACEPARENT` (off by default). */
  traceContext?: boolean;
}

async function fileDigest(path: string): Promise<string> {
  if (!existsSync(path)) return sha256Hex('');
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Runs each attempt as a detached shell command that outlives the engine, with containment evidence on disk
 * (`<sessionsDir>/<sessionId>.{start,json,log,exit,cancel}`, 0600 in a 0700 folder). The session id is a
 * function of the session key, and the start file is claimed exactly once: by the wrapper, holding its pid and
 * process start time, before it runs the command, or by {@link ChildProcessRuntime.launchEvidence}'s fence,
 * after which no wrapper ever runs that key's command. A live claimant is a running session; a zombie or a
 * reused pid is not; an exit code is terminal evidence. Children get an explicit environment
 * ({@link childEnvironment}) and run only inside the cwd roots ({@link CwdRoots}).
 *
 * @example
 * ```ts
 * const runtime = new ChildProcessRuntime({
 *   runtimeId: 'coven-code',
 *   command: 'my-agent --prompt "$COVEN_PROMPT"',
 *   sessionsDir: '.coven/sessions',
 *   passEnv: ['OPENAI_API_KEY'],
 * });
 * ```
 */
export class ChildProcessRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  // A shell command can do anything its user can: the bound is a declaration, not a containment proof.
  readonly sideEffectBoundProven = false;
  readonly launches: LaunchRecord[] = [];
  readonly cwdRoots: CwdRoots;
  /** Its sessions folder on its host: only a runtime on the same host sharing that folder reads its evidence. */
  readonly evidenceLocation: EvidenceLocation;
  private readonly inflight = new Map<string, Promise<LaunchResult>>();
  private readonly exits = new SessionExitCues();
  /** Cued as a session's wrapper exits, which it does only after recording the exit code (or being killed). */
  readonly onSessionExit: NonNullable<Runtime['onSessionExit']> = (listener) => this.exits.subscribe(listener);

  constructor(private readonly options: ChildProcessRuntimeOptions) {
    this.runtimeId = options.runtimeId;
    this.sideEffectClass = options.sideEffectClass ?? 'irreversible_external_mutation';
    checkEnvNames([...(options.passEnv ?? []), ...Object.keys(options.env ?? {})], 'ChildProcessRuntime env');
    ensurePrivateDir(options.sessionsDir);
    this.evidenceLocation = { host: options.host ?? hostname(), root: folderEvidenceRoot(options.sessionsDir) };
    this.cwdRoots = new CwdRoots(
      options.cwdRoots ?? [options.defaultCwd ?? dirname(options.sessionsDir)],
      options.defaultCwd,
    );
  }

  private paths(sessionId: string): SessionPaths {
    return sessionPaths(this.options.sessionsDir, sessionId);
  }

  /** Idempotent per session key: a launch while one with the same key is in flight answers the same. */
  launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const inflight = this.inflight.get(request.sessionKey);
    if (inflight !== undefined) return inflight;
    const launching = this.launchOnce(request, now).finally(() => this.inflight.delete(request.sessionKey));
    this.inflight.set(request.sessionKey, launching);
    return launching;
  }

  /** The answer an existing start file gives a launch, or undefined when there is none. */
  private priorStart(sessionId: string, paths: SessionPaths): LaunchResult | undefined {
    const start = readStart(paths.start);
    if (start.kind === 'absent') return undefined;
    if (start.kind === 'started' || start.kind === 'claiming')
      return { outcome: 'started', sessionId, cursors: { logCursor: '0' } };
    if (start.kind === 'fenced')
      return refused(`session ${sessionId} was fenced at ${start.at}: it never started and never will`);
    // Neither a claim nor a fence: whether the command ran cannot be told, so this is no proof of failure.
    throw new Error(start.detail);
  }

  private async launchOnce(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const sessionId = sessionIdOf(request.sessionKey);
    const paths = this.paths(sessionId);
    const prior = this.priorStart(sessionId, paths);
    if (prior !== undefined) return prior;
    const location = workingFolder(this.cwdRoots, request.cwd);
    if ('outcome' in location) return location;
    let exitTemp: string | undefined;
    let child: LaunchedProcess;
    try {
      const temp = (exitTemp = exitTempFor(paths));
      child = await this.cwdRoots.pinned(location, (cwd) => {
        const spawned = this.spawnWrapper(request, paths, temp, cwd);
        // Heard from the spawn on, so an exit during the claim is not missed.
        spawned.once('exit', () => this.exits.cue({ sessionId, attemptId: request.attemptId }));
        return started(spawned);
      });
      await claimDecided(child, this.options.startTimeoutMs ?? 10_000);
    } catch (error) {
      // No shell started (a file could not be made, or the spawn failed): nothing ran.
      const answer = spawnFailure(error);
      if (exitTemp !== undefined) removeQuietly(exitTemp);
      return answer;
    }
    child.unref();
    const start = readStart(paths.start);
    if (start.kind === 'started' && start.pid === child.pid) {
      try {
        this.recordLaunch(paths, sessionId, request.sessionKey, request.attemptId, now);
      } catch {
        // the launch record is a convenience for readers; the start claim is the evidence, and it stands
      }
      this.launches.push({ sessionKey: request.sessionKey, attemptId: request.attemptId, at: now.toISOString() });
      return { outcome: 'started', sessionId, cursors: { logCursor: '0' } };
    }
    removeQuietly(exitTemp);
    if (start.kind === 'absent')
      return refused(`the session wrapper could not claim ${paths.start}; the command did not run (see ${paths.log})`);
    // Another launch or a fence won the claim; this wrapper ran nothing.
    return this.priorStart(sessionId, paths)!;
  }

  /** Starts the wrapper from the launch thread; the log's descriptor closes once the thread tried the spawn. */
  private spawnWrapper(request: LaunchRequest, paths: SessionPaths, exitTemp: string, cwd: string): LaunchedProcess {
    const log = openPrivate(paths.log, 'a');
    let child: LaunchedProcess;
    try {
      child = launchThread.spawn({
        file: '/bin/sh',
        args: ['-c', WRAPPER],
        cwd,
        stdio: ['ignore', log, log, 'pipe'],
        env: childEnvironment(process.env, this.options, {
          COVEN_COMMAND: this.options.command,
          COVEN_START_FILE: paths.start,
          ...umaskVariable(),
          COVEN_EXIT_FILE: paths.exit,
          COVEN_EXIT_TEMP: exitTemp,
          COVEN_PROMPT: request.prompt,
          COVEN_AUTOMATION_ID: request.automationId,
          COVEN_OCCURRENCE_ID: request.occurrenceId,
          COVEN_RUN_ID: request.runId,
          COVEN_ATTEMPT_ID: request.attemptId,
          COVEN_SESSION_ID: sessionIdOf(request.sessionKey),
          COVEN_DEADLINE_AT: request.deadlineAt,
          ...(request.model === undefined ? {} : { COVEN_MODEL: request.model }),
          ...(this.options.traceContext === true ? { TRACEPARENT: traceparentOf(request.occurrenceId) } : {}),
        }),
      });
    } catch (error) {
      closeSync(log);
      throw error;
    }
    void child.attempted.finally(() => closeQuietly(log));
    return child;
  }

  /** The launch record (which key and attempt a session belongs to); written once, never rewritten. */
  private recordLaunch(
    paths: SessionPaths,
    sessionId: string,
    sessionKey: string,
    attemptId: string | undefined,
    now: Date,
  ): void {
    createExclusive(
      paths.meta,
      JSON.stringify({
        sessionId,
        sessionKey,
        ...(attemptId === undefined ? {} : { attemptId }),
        recordedAt: now.toISOString(),
      }),
    );
  }

  /**
   * What the disk proves about a launch sent under `sessionKey`: a start claim is a session to observe; no
   * claim is made permanent by fencing the start file (the wrapper's claim then fails, so the command never
   * runs) and answered `never_started`; a start file that is neither, or a fence that cannot be written, is
   * `unknown`.
   */
  async launchEvidence(sessionKey: string, now: Date): Promise<LaunchEvidence> {
    await this.inflight.get(sessionKey)?.catch(() => undefined);
    const sessionId = sessionIdOf(sessionKey);
    const paths = this.paths(sessionId);
    let start = readStart(paths.start);
    if (start.kind === 'absent') {
      try {
        if (createExclusive(paths.start, fenceText(now), true))
          return {
            evidence: 'never_started',
            detail: `no wrapper had claimed session ${sessionId}; it is fenced and can never start`,
          };
      } catch (error) {
        return {
          evidence: 'unknown',
          detail: `session ${sessionId} has no start claim and cannot be fenced: ${(error as Error).message}`,
        };
      }
      start = readStart(paths.start);
    }
    switch (start.kind) {
      case 'started':
      case 'claiming':
        try {
          this.recordLaunch(paths, sessionId, sessionKey, undefined, now);
        } catch {
          // the launch record is a convenience for readers; the start claim is the evidence
        }
        return { evidence: 'started', sessionId, cursors: { logCursor: '0' } };
      case 'fenced':
        return {
          evidence: 'never_started',
          detail: `session ${sessionId} was fenced at ${start.at}; it never started`,
        };
      case 'absent':
        return {
          evidence: 'unknown',
          detail: `the start file of session ${sessionId} vanished while it was being fenced`,
        };
      case 'unreadable':
        return { evidence: 'unknown', detail: start.detail };
    }
  }

  async observe(sessionId: string, _now?: Date): Promise<Observation> {
    const paths = this.paths(sessionId);
    const exited = await this.exitObservation(paths);
    if (exited !== undefined) return exited;
    const start = readStart(paths.start);
    if (start.kind === 'absent')
      return {
        status: 'lost',
        detail: existsSync(paths.meta) ? `session ${sessionId} has no start claim` : `no session file for ${sessionId}`,
      };
    if (start.kind === 'fenced')
      return { status: 'lost', detail: `session ${sessionId} was fenced at ${start.at} before it started` };
    if (start.kind === 'unreadable') return { status: 'lost', detail: start.detail };
    if (start.kind === 'claiming') {
      // The wrapper writes its claim right after creating the file; one that stays empty died in between, before
      // the command.
      const stale = Date.now() - start.since > (this.options.startTimeoutMs ?? 10_000);
      return stale
        ? {
            status: 'lost',
            detail: `the wrapper of session ${sessionId} died while claiming its start; the command did not run`,
          }
        : { status: 'running', cursors: { logCursor: '0' } };
    }
    if (claimantAlive(start.pid, start.startTime))
      return { status: 'running', cursors: { logCursor: String(sizeOf(paths.log)) } };
    // The wrapper records the exit code before it exits: look again now that it is known to be gone.
    const late = await this.exitObservation(paths);
    if (late !== undefined) return late;
    if (existsSync(paths.cancel)) {
      return {
        status: 'exited',
        outcome: 'failed',
        exitCode: null,
        cancelled: true,
        outputDigest: await fileDigest(paths.log),
        detail: 'stopped on request',
      };
    }
    return {
      status: 'lost',
      detail: `process ${start.pid} is gone (exited, a zombie, or its pid reused) without an exit code`,
    };
  }

  /** The session's log (the command's stdout and stderr), once the wrapper recorded its exit. */
  async sessionOutput(sessionId: string): Promise<string | undefined> {
    const paths = this.paths(sessionId);
    if (!existsSync(paths.exit) || !existsSync(paths.log)) return undefined;
    return readFileSync(paths.log, 'utf8');
  }

  /** A window of the session's log (the command's stdout and stderr), complete once its exit is recorded. */
  async sessionLog(sessionId: string, window: LogWindow): Promise<SessionLog | undefined> {
    const paths = this.paths(sessionId);
    return readLogFile(paths.log, window, existsSync(paths.exit));
  }

  /**
   * Removes the session's log, exit code, cancel mark and launch record. Its start claim goes too once its
   * claimant is gone; a fence stays (a few bytes), since it is what keeps a session that never started from
   * ever starting.
   */
  async expireSession(sessionId: string): Promise<boolean> {
    const paths = this.paths(sessionId);
    const start = readStart(paths.start);
    if (start.kind === 'started' && claimantAlive(start.pid, start.startTime)) return false;
    removeQuietly(paths.log, paths.exit, paths.cancel, paths.meta);
    if (start.kind === 'started') removeQuietly(paths.start);
    return true;
  }

  private async exitObservation(paths: SessionPaths): Promise<Observation | undefined> {
    if (!existsSync(paths.exit)) return undefined;
    const exitCode = Number(readFileSync(paths.exit, 'utf8'));
    const signal = signalOfShellStatus(exitCode);
    return {
      status: 'exited',
      outcome: exitCode === 0 ? 'succeeded' : 'failed',
      exitCode,
      ...(signal === undefined ? {} : { signal }),
      cancelled: existsSync(paths.cancel),
      outputDigest: await fileDigest(paths.log),
    };
  }

  async cancel(sessionId: string, now: Date): Promise<void> {
    const paths = this.paths(sessionId);
    const start = readStart(paths.start);
    if (start.kind === 'absent' && !existsSync(paths.meta)) return;
    createExclusive(paths.cancel, `${now.toISOString()}\n`);
    // Only the claimant itself: a reused pid's process group is someone else's.
    if (start.kind !== 'started' || !claimantAlive(start.pid, start.startTime)) return;
    try {
      process.kill(-start.pid, 'SIGTERM');
    } catch {
      // already gone: the next observation reports it
    }
  }
}
