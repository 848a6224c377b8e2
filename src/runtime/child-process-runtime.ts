import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, statSync, writeFileSync, createReadStream } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../contract/digest.js';
import type { SideEffectClass } from '../contract/vocabulary.js';
import type { LaunchRecord, LaunchRequest, LaunchResult, Observation, Runtime } from './runtime.js';

interface SessionFile {
  sessionId: string;
  sessionKey: string;
  attemptId: string;
  pid: number;
  startedAt: string;
  cancelRequestedAt?: string;
}

export interface ChildProcessRuntimeOptions {
  runtimeId: string;
  /** A shell command; it reads the prompt from $COVEN_PROMPT (also $COVEN_ATTEMPT_ID, $COVEN_AUTOMATION_ID…). */
  command: string;
  /** Where session files, logs and exit codes live; they outlive the engine process. */
  sessionsDir: string;
  /** Used when the definition names no cwd. */
  defaultCwd?: string;
  sideEffectClass?: SideEffectClass;
}

// The command runs in a subshell (an `exit` in it ends only the subshell); the wrapper then records the
// exit code atomically (temp + rename), so a reader never sees half a code.
const WRAPPER = '( eval "$COVEN_COMMAND" ); code=$?; printf %s "$code" > "$COVEN_EXIT_FILE.tmp" && mv "$COVEN_EXIT_FILE.tmp" "$COVEN_EXIT_FILE"';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function fileDigest(path: string): Promise<string> {
  if (!existsSync(path)) return sha256Hex('');
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Runs each attempt as a detached shell command. Session files, output logs and exit codes are kept on
 * disk, so an engine that restarts re-observes sessions started before it died: an exit code is terminal
 * evidence, a live pid is a running session, anything else is lost. Cancel signals the process group and
 * the next observation acknowledges it.
 *
 * @example
 * ```ts
 * const runtime = new ChildProcessRuntime({ runtimeId: 'coven-code', command: 'my-agent --prompt "$COVEN_PROMPT"', sessionsDir: '.coven/sessions' });
 * ```
 */
export class ChildProcessRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass: SideEffectClass;
  // A shell command can do anything its user can: the bound is a declaration, not a containment proof.
  readonly sideEffectBoundProven = false;
  readonly launches: LaunchRecord[] = [];

  constructor(private readonly options: ChildProcessRuntimeOptions) {
    this.runtimeId = options.runtimeId;
    this.sideEffectClass = options.sideEffectClass ?? 'irreversible_external_mutation';
    mkdirSync(options.sessionsDir, { recursive: true });
  }

  private paths(sessionId: string) {
    const base = join(this.options.sessionsDir, sessionId);
    return { meta: `${base}.json`, log: `${base}.log`, exit: `${base}.exit` };
  }

  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const sessionId = `cp-${sha256Hex(request.sessionKey).slice(0, 24)}`;
    const paths = this.paths(sessionId);
    const cwd = request.cwd ?? this.options.defaultCwd ?? process.cwd();
    if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
      return { outcome: 'failed', failureClass: 'launch_refused', detail: `working directory ${cwd} does not exist` };
    }
    const log = openSync(paths.log, 'a');
    try {
      const child = spawn('/bin/sh', ['-c', WRAPPER], {
        cwd,
        detached: true,
        stdio: ['ignore', log, log],
        env: {
          ...process.env,
          COVEN_COMMAND: this.options.command,
          COVEN_EXIT_FILE: paths.exit,
          COVEN_PROMPT: request.prompt,
          COVEN_AUTOMATION_ID: request.automationId,
          COVEN_OCCURRENCE_ID: request.occurrenceId,
          COVEN_RUN_ID: request.runId,
          COVEN_ATTEMPT_ID: request.attemptId,
          COVEN_DEADLINE_AT: request.deadlineAt,
          ...(request.model === undefined ? {} : { COVEN_MODEL: request.model }),
        },
      });
      const pid = await new Promise<number>((resolve, reject) => {
        child.once('spawn', () => resolve(child.pid!));
        child.once('error', reject);
      });
      child.unref();
      const session: SessionFile = { sessionId, sessionKey: request.sessionKey, attemptId: request.attemptId, pid, startedAt: now.toISOString() };
      writeFileSync(paths.meta, JSON.stringify(session));
      this.launches.push({ sessionKey: request.sessionKey, attemptId: request.attemptId, at: now.toISOString() });
      return { outcome: 'started', sessionId, cursors: { logCursor: '0' } };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The shell never started: nothing ran. Missing binaries are deterministic, resource limits transient.
      return { outcome: 'failed', failureClass: code === 'EAGAIN' || code === 'EMFILE' ? 'transient_dispatch' : 'launch_refused', detail: (error as Error).message };
    } finally {
      closeSync(log);
    }
  }

  async observe(sessionId: string, _now?: Date): Promise<Observation> {
    const paths = this.paths(sessionId);
    if (!existsSync(paths.meta)) return { status: 'lost', detail: `no session file for ${sessionId}` };
    const session = JSON.parse(readFileSync(paths.meta, 'utf8')) as SessionFile;
    if (existsSync(paths.exit)) {
      const exitCode = Number(readFileSync(paths.exit, 'utf8'));
      return {
        status: 'exited',
        outcome: exitCode === 0 ? 'succeeded' : 'failed',
        exitCode,
        cancelled: session.cancelRequestedAt !== undefined,
        outputDigest: await fileDigest(paths.log),
      };
    }
    if (alive(session.pid)) return { status: 'running', cursors: { logCursor: String(existsSync(paths.log) ? statSync(paths.log).size : 0) } };
    if (session.cancelRequestedAt !== undefined) {
      return { status: 'exited', outcome: 'failed', exitCode: null, cancelled: true, outputDigest: await fileDigest(paths.log), detail: 'stopped on request' };
    }
    return { status: 'lost', detail: `process ${session.pid} is gone without an exit code` };
  }

  async cancel(sessionId: string, now: Date): Promise<void> {
    const paths = this.paths(sessionId);
    if (!existsSync(paths.meta)) return;
    const session = JSON.parse(readFileSync(paths.meta, 'utf8')) as SessionFile;
    if (session.cancelRequestedAt === undefined) writeFileSync(paths.meta, JSON.stringify({ ...session, cancelRequestedAt: now.toISOString() }));
    try {
      process.kill(-session.pid, 'SIGTERM');
    } catch {
      // already gone: the next observation reports it
    }
  }
}
