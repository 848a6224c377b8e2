import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'vite';
import { packageRoot } from '../../src/contract/package-root.js';
import { eventually } from '../support/eventually.js';
import type { FileStoreKind } from '../../src/store/open-store.js';
import { monotonicMs, type GoMessage, type SpawnMessage, type WorkerReply } from './fixtures/lock-protocol.js';

const root = packageRoot();
const REPLY_TIMEOUT_MS = 30_000;

/**
 * Compiles the contender (test/store/fixtures/lock-worker.ts and the store code it imports) to one plain
 * ES module, so each contender starts with `node` alone: a quarter of the CPU that starting under tsx takes,
 * and the stress test starts one process per round. The bundle sits under node_modules so that its
 * dependencies (lowdb, better-sqlite3, fs-native-extensions) resolve as they do for the sources.
 */
export async function buildContender(): Promise<{ script: string; dispose: () => void }> {
  const cache = join(root, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const outDir = mkdtempSync(join(cache, 'coven-lock-contender-'));
  await build({
    root,
    configFile: false,
    logLevel: 'warn',
    build: {
      ssr: join(root, 'test/store/fixtures/lock-worker.ts'),
      outDir,
      target: 'node20',
      minify: false,
      rollupOptions: { output: { format: 'es', entryFileNames: 'lock-worker.mjs' } },
    },
  });
  return { script: join(outDir, 'lock-worker.mjs'), dispose: () => rmSync(outDir, { recursive: true, force: true }) };
}

/** One long-lived contender process (test/store/fixtures/lock-worker.ts) and the replies it sent. */
export class Contender {
  private readonly replies: WorkerReply[] = [];
  private waiters: Array<() => void> = [];
  private exited: Promise<void>;
  private stderr = '';
  /** The contender's own pid, from its `ready` (the spawned child is its parent when it runs under one). */
  private workerPid = -1;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: WorkerReply) => {
      this.replies.push(reply);
      for (const wake of this.waiters.splice(0)) wake();
    });
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => child.on('exit', () => resolve()));
    void this.exited.then(() => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  get pid(): number {
    return this.workerPid;
  }

  /**
   * Starts a contender from the script {@link buildContender} made. With `underNonReapingParent` it runs
   * as the child of a `sleep` (a shell that starts it and then execs sleep), which never waits for it: once
   * killed it stays a zombie until that parent goes. It keeps the IPC channel it inherits through the shell.
   * `ballastMb` of touched memory make its teardown after a SIGKILL take longer (a dying holder to race).
   */
  static async start(
    script: string,
    options: { underNonReapingParent?: boolean; ballastMb?: number } = {},
  ): Promise<Contender> {
    const env = { ...process.env, COVEN_LOCK_BALLAST_MB: String(options.ballastMb ?? 0) };
    const command = options.underNonReapingParent
      ? spawn('/bin/sh', ['-c', '"$0" "$1" & exec sleep 600', process.execPath, script], {
          cwd: root,
          env,
          stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        })
      : spawn(process.execPath, [script], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    const contender = new Contender(command);
    const ready = await contender.reply((r) => r.type === 'ready');
    contender.workerPid = ready.pid;
    return contender;
  }

  go(message: Omit<GoMessage, 'type'>): void {
    this.child.send({ type: 'go', ...message } satisfies GoMessage);
  }

  /** Has the contender start a child that outlives it; resolves with that child's pid. */
  async spawnSleeper(): Promise<number> {
    this.child.send({ type: 'spawn' } satisfies SpawnMessage);
    const reply = await this.reply((r) => r.type === 'spawned');
    return reply.type === 'spawned' ? reply.child : -1;
  }

  /** Takes the first reply `accept` takes, waiting for it (bounded, and failing at once if the process exits). */
  async reply(accept: (reply: WorkerReply) => boolean): Promise<WorkerReply> {
    const deadline = Date.now() + REPLY_TIMEOUT_MS;
    for (;;) {
      const at = this.replies.findIndex(accept);
      if (at >= 0) return this.replies.splice(at, 1)[0]!;
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(`contender ${this.pid} exited: ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`contender ${this.pid} did not answer within ${REPLY_TIMEOUT_MS} ms: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** SIGKILL, resolved once the process is reaped (so its pid names no live process, not even a zombie). */
  async kill(): Promise<void> {
    if (this.workerPid !== this.child.pid) signal(this.workerPid);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGKILL for a contender started under a non-reaping parent, resolved once it is a zombie. */
  async killLeavingZombie(): Promise<void> {
    signal(this.workerPid);
    await eventually(async () => (processState(this.workerPid) === 'Z' ? true : undefined), REPLY_TIMEOUT_MS);
  }
}

export interface RoundOutcome {
  winners: number[];
  /** Losers' errors, by name: every one should be StoreLockedError. */
  refusals: Array<{ pid: number; name: string; message: string }>;
  /** Keys committed and acknowledged by the round's winners. */
  acknowledged: string[];
  /** Milliseconds between the first and the last contender's call to open. */
  spreadMs: number;
}

/**
 * Sends every contender `go` for the same instant (plus its offset in microseconds) and collects who
 * opened, who was refused and what the winners committed.
 */
export async function race(
  contenders: Contender[],
  file: string,
  kind: FileStoreKind,
  round: number,
  offsetsUs: number[],
  leadMs: number,
): Promise<RoundOutcome> {
  const at = monotonicMs() + leadMs;
  contenders.forEach((c, i) => c.go({ file, kind, round, at: at + (offsetsUs[i] ?? 0) / 1000 }));
  const first = await Promise.all(
    contenders.map((c) => c.reply((r) => (r.type === 'opened' || r.type === 'refused') && r.round === round)),
  );
  const outcome: RoundOutcome = { winners: [], refusals: [], acknowledged: [], spreadMs: 0 };
  const starts: number[] = [];
  for (const reply of first) {
    if (reply.type === 'opened') outcome.winners.push(reply.pid);
    if (reply.type === 'refused') outcome.refusals.push({ pid: reply.pid, name: reply.name, message: reply.message });
    if (reply.type === 'opened' || reply.type === 'refused') starts.push(reply.startedAt);
  }
  outcome.spreadMs = Math.max(...starts) - Math.min(...starts);
  for (const pid of outcome.winners) {
    const winner = contenders.find((c) => c.pid === pid)!;
    const done = await winner.reply((r) => (r.type === 'committed' || r.type === 'failed') && r.round === round);
    if (done.type === 'committed') outcome.acknowledged.push(done.key);
  }
  return outcome;
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The state letter in /proc/<pid>/stat (R, S, Z, …), or undefined once no such process exists. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}
