import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';

/**
 * A detached session process as the runtimes use it, started by the {@link LaunchThread}: its pid, its exit, and
 * its stdin and fd-3 pipes (the start claim's channel), with `ChildProcess`'s names and events.
 */
export interface LaunchedProcess {
  readonly pid?: number | undefined;
  /** Resolves once the spawn was tried: undefined when the process started, else why it did not. */
  readonly attempted: Promise<Error | undefined>;
  readonly stdin: Writable | null;
  readonly stdio: readonly unknown[];
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  once(event: 'spawn', listener: () => void): this;
  once(event: 'error', listener: (error: Error) => void): this;
  unref(): void;
}

/** What crosses to the thread: spawn's arguments, with file descriptors as numbers. */
export interface DetachedSpawn {
  file: string;
  args: readonly string[];
  cwd: string;
  /** Default: this process's environment as it is at the spawn (as a child process inherits it). */
  env?: Readonly<Record<string, string>>;
  /** stdin `pipe` or `ignore`; stdout and stderr an open descriptor of this process or `ignore`; fd 3 a pipe. */
  stdio: readonly ['pipe' | 'ignore', number | 'ignore', number | 'ignore', 'pipe'];
}

type ToThread = { kind: 'stdin'; id: number; bytes: Buffer } | { kind: 'stdin-end'; id: number };

type FromThread =
  | { id: number; kind: 'spawn'; pid: number }
  | { id: number; kind: 'error'; message: string; code?: string; errno?: number; syscall?: string; path?: string }
  | { id: number; kind: 'fd3'; bytes: Uint8Array }
  | { id: number; kind: 'fd3-end' }
  | { id: number; kind: 'exit'; code: number | null; signal: NodeJS.Signals | null };

/**
 * The thread's program, CommonJS so the same text runs under tsx, vitest and a built package. It spawns and relays
 * each child's events in order; `spawn` goes out before any fd-3 byte, since a child's pipes are read only on a
 * later turn of the thread's loop than the spawn call that made them.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const children = new Map();
const post = (message) => parentPort.postMessage(message);
const failed = (id, error) => post({ id, kind: 'error', message: String(error && error.message),
  code: error && error.code, errno: error && error.errno, syscall: error && error.syscall, path: error && error.path });
parentPort.on('message', (m) => {
  if (m.kind === 'stdin') return void children.get(m.id)?.stdin?.write(Buffer.from(m.bytes));
  if (m.kind === 'stdin-end') return void children.get(m.id)?.stdin?.end();
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: true, stdio: m.stdio });
  } catch (error) {
    return failed(m.id, error);
  }
  children.set(m.id, child);
  child.once('spawn', () => post({ id: m.id, kind: 'spawn', pid: child.pid }));
  child.once('error', (error) => {
    children.delete(m.id);
    failed(m.id, error);
  });
  child.once('exit', (code, signal) => {
    children.delete(m.id);
    post({ id: m.id, kind: 'exit', code, signal });
  });
  child.unref();
  child.stdin?.on('error', () => undefined);
  // Out of descriptors (EMFILE), spawn returns a child with no pipes whose 'error' follows.
  const fd3 = child.stdio && child.stdio[3];
  if (!fd3) return;
  fd3.on('data', (bytes) => post({ id: m.id, kind: 'fd3', bytes }));
  fd3.on('error', () => undefined);
  fd3.once('close', () => post({ id: m.id, kind: 'fd3-end' }));
  fd3.unref?.();
});
`;

/** A process the thread started, seen from this thread: events as the thread relays them. */
class ThreadChild extends EventEmitter implements LaunchedProcess {
  pid: number | undefined;
  readonly stdin: Writable | null;
  readonly stdio: readonly unknown[];
  private readonly fd3 = new Readable({ read: () => undefined });
  private referenced = true;
  private exited = false;
  private fd3Ended = false;
  private failed = false;
  /** Resolves once the thread tried the spawn (started, or failed): the descriptors lent to it may then close. */
  readonly attempted: Promise<Error | undefined>;
  private attemptDone!: (failure: Error | undefined) => void;

  constructor(
    /** Sends this child's stdin to its thread. */
    send: (message: ToThread) => void,
    /** Lets go of this child's hold on the process. */
    private readonly release: () => void,
    id: number,
    withStdin: boolean,
  ) {
    super();
    this.attempted = new Promise((done) => (this.attemptDone = done));
    this.stdin = withStdin
      ? new Writable({
          write: (chunk: Buffer, _encoding, done) => {
            send({ kind: 'stdin', id, bytes: chunk });
            done();
          },
          final: (done) => {
            send({ kind: 'stdin-end', id });
            done();
          },
        })
      : null;
    this.stdio = [this.stdin, null, null, this.fd3];
  }

  relay(message: FromThread): void {
    if (message.kind === 'spawn') {
      this.pid = message.pid;
      this.attemptDone(undefined);
      this.emit('spawn');
    } else if (message.kind === 'error') {
      this.failed = true;
      const { kind: _kind, id: _id, ...fields } = message;
      const error = Object.assign(new Error(message.message), fields);
      this.attemptDone(error);
      // Heard by whoever listens (a launch waiting for its claim); with no one listening (a launch long answered)
      // it is not worth the engine process, as an unheard ChildProcess error would be.
      if (this.listenerCount('error') > 0) this.emit('error', error);
      this.fd3.push(null);
    } else if (message.kind === 'fd3') this.fd3.push(Buffer.from(message.bytes));
    else if (message.kind === 'fd3-end') {
      this.fd3Ended = true;
      this.fd3.push(null);
    } else {
      this.exited = true;
      this.emit('exit', message.code, message.signal);
    }
  }

  /** Whether the thread has nothing more to say of it: exited with its pipe closed, or failed. */
  get finished(): boolean {
    return this.failed || (this.exited && this.fd3Ended);
  }

  unref(): void {
    if (!this.referenced) return;
    this.referenced = false;
    this.release();
  }

  /**
   * Its thread ended: nothing more will be heard of it, and it holds nothing (that thread's count is gone too).
   * `neverRan`: the thread never started, so neither did this process (an errno-style failure, as a spawn's).
   */
  abandon(neverRan: string | undefined): void {
    this.referenced = false;
    if (neverRan === undefined) this.relay({ id: -1, kind: 'error', message: 'the launch thread ended' });
    else
      this.relay({ id: -1, kind: 'error', message: `the launch thread could not start: ${neverRan}`, code: 'EAGAIN' });
  }
}

/**
 * Starts session processes from a thread of its own. `child_process.spawn` returns only once the new process has
 * exec'd (libuv waits on a pipe for the exec to succeed or fail), and under load the new process may wait hundreds
 * of milliseconds to be scheduled: on the engine's thread that wait stopped every request, lease renewal and
 * timer (docs/security.md, connection limits). Here only this thread waits. The thread keeps the process alive only
 * while a launch it started has not been let go ({@link LaunchedProcess.unref}), as a child process would.
 */
export class LaunchThread {
  private thread: Thread | undefined;
  private nextId = 0;

  spawn(spec: DetachedSpawn): LaunchedProcess {
    const thread = this.running();
    const id = this.nextId++;
    thread.worker.postMessage({ kind: 'spawn', id, ...spec, env: spec.env ?? { ...process.env } });
    const send = (message: ToThread) => thread.worker.postMessage(message);
    const child = new ThreadChild(send, () => release(thread), id, spec.stdio[0] === 'pipe');
    thread.children.set(id, child);
    thread.holding += 1;
    thread.worker.ref();
    return child;
  }

  private running(): Thread {
    if (this.thread !== undefined) return this.thread;
    const worker = new Worker(THREAD_SOURCE, { eval: true });
    const thread: Thread = { worker, children: new Map(), holding: 0, online: false };
    worker.once('online', () => (thread.online = true));
    worker.on('message', (message: FromThread) => {
      const child = thread.children.get(message.id);
      if (child === undefined) return;
      child.relay(message);
      // A child that exited (its pipe closed) or never started holds the process no longer, as a ChildProcess.
      if (child.finished) {
        child.unref();
        thread.children.delete(message.id);
      }
    });
    worker.on('error', (error) => this.lost(thread, error.message));
    worker.on('exit', () => this.lost(thread, 'it exited'));
    worker.unref();
    this.thread = thread;
    return thread;
  }

  /**
   * `thread` ended: the children it started are no longer heard (each launch waiting on one ends unknown), and
   * the next spawn starts a new thread. Heard twice (its error, then its exit), and perhaps after a new one began.
   */
  private lost(thread: Thread, why: string): void {
    if (this.thread === thread) this.thread = undefined;
    const children = [...thread.children.values()];
    thread.children.clear();
    thread.holding = 0;
    for (const child of children) child.abandon(thread.online ? undefined : why);
  }
}

/** A launch thread and what it holds: its children not yet finished, and how many still hold the process. */
interface Thread {
  worker: Worker;
  children: Map<number, ThreadChild>;
  holding: number;
  /** Whether it ever ran: only then may it have started a process it did not report. */
  online: boolean;
}

function release(thread: Thread): void {
  if (thread.holding === 0) return;
  thread.holding -= 1;
  if (thread.holding === 0) thread.worker.unref();
}

/** `child` once its spawn was tried: itself when it started, else the spawn's error thrown (nothing ran). */
export async function started<T extends LaunchedProcess>(child: T): Promise<T> {
  const failure = await child.attempted;
  if (failure !== undefined) throw failure;
  return child;
}

/** This process's launch thread, shared by its runtimes (started with the first launch, idle it holds nothing). */
export const launchThread = new LaunchThread();
