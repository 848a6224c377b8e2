// `start` daemons as an operator runs them on several machines sharing one PostgreSQL store: each its own
// process (the CLI under tsx), its own working folder (so its own .coven folder, socket and file evidence) and
// its own host name (COVEN_HOST), all launching one shell command that appends to a ledger every daemon shares.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DaemonClient } from '../../src/daemon/client.js';
import { redactUrl } from '../../src/store/postgres/index.js';
import { eventually } from '../support/eventually.js';
import { terminate } from '../support/terminate.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tsx = import.meta.resolve('tsx');
const children = new Set<ChildProcess>();

export interface StartDaemon {
  child: ChildProcess;
  folder: string;
  host: string;
  /** The engine's instance id (`engine-<pid>`): what its claims and launches name. */
  instanceId: string;
  client: DaemonClient;
  /** Everything it printed so far (JSON log lines with --log-format json). */
  out: () => string;
}

/** The path a daemon serving `url` from `folder` names its socket and record after (see store-location.ts). */
export const anchorOf = (folder: string, url: string): string =>
  join(folder, '.coven', `postgres-${createHash('sha256').update(redactUrl(url)).digest('hex').slice(0, 16)}`);

/**
 * The command every session runs: one ledger line (run, attempt, session, and how far the store's changefeed
 * was committed at that instant, read with psql as the adoption-before-side-effects check needs), then a short
 * sleep so sessions are still running when a daemon dies.
 */
export function ledgerCommand(ledger: string, url: string, schema = 'coven'): string {
  const psql = '/usr/lib/postgresql/15/bin/psql';
  const feedEnd = `$(${psql} -qtAX -d '${url}' -c 'SELECT COALESCE(MAX(position) + 1, 0) FROM "${schema}".log')`;
  return (
    `coven_feed=${feedEnd}; ` +
    `printf '%s %s %s %s\\n' "$COVEN_RUN_ID" "$COVEN_ATTEMPT_ID" "\${COVEN_SESSION_ID:-none}" "$coven_feed" ` +
    `>> '${ledger}'; sleep 0.2`
  );
}

export interface LedgerLine {
  runId: string;
  attemptId: string;
  sessionId: string;
  feedEnd: number;
}

export function readLedger(ledger: string): LedgerLine[] {
  if (!existsSync(ledger)) return [];
  return readFileSync(ledger, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [runId, attemptId, sessionId, feedEnd] = line.split(' ');
      return { runId: runId!, attemptId: attemptId!, sessionId: sessionId!, feedEnd: Number(feedEnd) };
    });
}

/** Spawns `coven-automata --store <url> --command <command> --log-format json start` in `folder` as `host`. */
export async function startDaemon(url: string, folder: string, host: string, command: string): Promise<StartDaemon> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      tsx,
      join(root, 'src/cli/main.ts'),
      '--store',
      url,
      '--command',
      command,
      'start',
      '--log-format',
      'json',
    ],
    { cwd: folder, env: { ...process.env, NO_COLOR: '1', COVEN_HOST: host }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`start in ${folder} exited ${child.exitCode}: ${out}`);
    return out.includes('serving on') ? true : undefined;
  }, 60_000);
  const client = await DaemonClient.connect(anchorOf(folder, url));
  if (client === undefined) throw new Error(`no daemon answers beside ${anchorOf(folder, url)}: ${out}`);
  return { child, folder, host, instanceId: `engine-${child.pid}`, client, out: () => out };
}

/** Stops a daemon with SIGTERM and waits until its process exited (its last commit is then on the store). */
export function stopDaemon(daemon: StartDaemon): Promise<void> {
  return terminate(daemon.child, `daemon ${daemon.host}`);
}

/** SIGKILLs every daemon still running (afterEach). Detached sessions they started end on their own. */
export function killDaemons(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
}

/** The passes a daemon logged (JSON records with `pass: true`): when each ended (epoch ms) and how long it ran. */
export function passesOf(output: string): Array<{ end: number; ms: number }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"pass":true'))
    .map((line) => JSON.parse(line) as { time: number; durationMs: number })
    .map((p) => ({ end: p.time, ms: p.durationMs }));
}

let keys = 0;

/** A run-now request as a CLI on another machine would send it, under its own adoption key. */
export function runNowEnvelope(automationId: string, round: number): Record<string, unknown> {
  return {
    schemaVersion: 'coven.automations.v1',
    command: 'occurrence.runNow.v1',
    adoptionKey: `takeover-${round}-${String(++keys).padStart(6, '0')}`,
    origin: { principal: { principalId: 'cli:takeover' }, channel: 'cli' },
    intent: { statement: 'run now' },
    payload: { automationId },
  };
}
