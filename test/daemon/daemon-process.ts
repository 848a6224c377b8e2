import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { eventually } from '../support/eventually.js';
import { definitionFile } from '../cli/cli-fixtures.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const children = new Set<ChildProcess>();
/** tsx and the CLI by absolute location, so a child may run in any folder (a test's temporary one). */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const MAIN = resolve(root, 'src/cli/main.ts');

/** A CLI child process whose output is collected as it arrives. */
export interface CliChild {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number>;
  /** Waits (with a deadline) until stdout matches. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
}

/**
 * Spawns `coven-automata <args>` as its own Node process (tsx), the way an operator's terminal would, in `cwd`
 * (default: the checkout; a test whose CLI makes a `.coven` folder there passes a temporary one).
 */
export function spawnCli(args: string[], cwd = root, env: Record<string, string> = {}): CliChild {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number>((done) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      done(code ?? (signal === null ? -1 : 128));
    }),
  );
  const waitFor = (pattern: RegExp, timeoutMs = 20_000) =>
    eventually(async () => {
      const match = out.match(pattern);
      if (match === null && child.exitCode !== null)
        throw new Error(`exited ${child.exitCode} before printing ${pattern}: ${out}${err}`);
      return match ?? undefined;
    }, timeoutMs);
  return { child, stdout: () => out, stderr: () => err, exited, waitFor };
}

/** Runs one CLI command to completion. */
export async function runCliProcess(
  args: string[],
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = spawnCli(args, cwd);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** `start` on a store, resolved once it prints its socket (and, with --listen, its dashboard URL). */
export async function startDaemonProcess(
  store: string,
  extra: string[] = [],
  cwd?: string,
  env?: Record<string, string>,
): Promise<CliChild> {
  const daemon = spawnCli(['--store', store, '--command', 'true', 'start', ...extra], cwd, env);
  // A daemon process loads its code through tsx before it serves: on a loaded 2-core machine that alone took 20 s.
  await daemon.waitFor(/^serving on .*$/m, 60_000);
  if (extra.includes('--listen')) await daemon.waitFor(/^dashboard: .*$/m, 60_000);
  return daemon;
}

/** Kills every child still running (for afterEach/afterAll), waiting until each has exited. */
export async function killChildren(): Promise<void> {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGKILL');
        }),
    ),
  );
}

/** A rich definition file the CLI applies, running in the store's folder. */
export const writeDefinition = (dir: string, automationId: string): string => definitionFile(dir, automationId);
