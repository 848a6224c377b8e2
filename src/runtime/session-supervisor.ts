// One session's supervisor: a detached process the engine starts per launch (see supervised-runtime.ts). It
// reads its orders from stdin, claims the session's start in the store's database (the claim, or another
// engine's fence, wins once), tells the engine the outcome on fd 3, runs the command with `sh -c` in its own
// cwd (the folder the engine pinned) and the given environment (which never holds the database's address or
// credentials: those came on stdin), heartbeats while it runs, acts on a cancel request, and records the exit
// code and the (capped) output in the row.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, writeSync } from 'node:fs';
import { constants } from 'node:os';
import pg from 'pg';
import { claimStart, heartbeat, recordExit } from './session-evidence-sql.js';

/** What the engine sends a supervisor on stdin. */
export interface SupervisorOrders {
  url: string;
  schema: string;
  sessionId: string;
  sessionKey: string;
  attemptId: string;
  host: string;
  command: string;
  env: Record<string, string>;
  heartbeatMs: number;
  outputCapBytes: number;
}

const DECISION_FD = 3;

function tell(line: string): void {
  try {
    writeSync(DECISION_FD, `${line}\n`);
    closeSync(DECISION_FD);
  } catch {
    // the engine is gone; the row is the evidence, not this line
  }
}

async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'coven session' });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Retries a write the exit depends on while the database is briefly unreachable (bounded: about a minute). */
async function persistently(body: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await body();
      return;
    } catch (error) {
      if (attempt >= 30) throw error;
      await new Promise((wake) => setTimeout(wake, Math.min(2_000, 100 * 2 ** attempt)));
    }
  }
}

async function readOrders(): Promise<SupervisorOrders> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as SupervisorOrders;
}

/** The command's output, kept up to the cap, digested whole. */
class CapturedOutput {
  private readonly hash = createHash('sha256');
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  bytes = 0;
  constructor(private readonly cap: number) {}
  add(chunk: Buffer): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    if (this.keptBytes >= this.cap) return;
    const part = chunk.subarray(0, this.cap - this.keptBytes);
    this.kept.push(part);
    this.keptBytes += part.length;
  }
  finish() {
    return {
      kept: Buffer.concat(this.kept),
      truncated: this.bytes > this.keptBytes,
      digest: this.hash.digest('hex'),
    };
  }
}

async function supervise(orders: SupervisorOrders): Promise<void> {
  const { url, schema, sessionId } = orders;
  const won = await withClient(url, async (client) => {
    const args = [sessionId, orders.sessionKey, orders.attemptId, orders.host, process.pid];
    return (await client.query(claimStart(schema), args)).rowCount === 1;
  });
  if (!won) return tell('lost the start claim');
  const output = new CapturedOutput(orders.outputCapBytes);
  const child = spawn('/bin/sh', ['-c', orders.command], {
    env: orders.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  tell('started');
  child.stdout.on('data', (chunk: Buffer) => output.add(chunk));
  child.stderr.on('data', (chunk: Buffer) => output.add(chunk));
  let cancelling = false;
  const beat = setInterval(() => {
    void withClient(url, (client) => client.query<{ cancel: boolean }>(heartbeat(schema), [sessionId]))
      .then(({ rows }) => {
        if (rows[0]?.cancel !== true || cancelling || child.pid === undefined) return;
        cancelling = true;
        process.kill(-child.pid, 'SIGTERM');
      })
      .catch(() => undefined);
  }, orders.heartbeatMs);
  const code = await new Promise<number>((done) => {
    child.once('error', (error) => {
      output.add(Buffer.from(`coven: the command could not start: ${error.message}\n`));
      done(127);
    });
    child.once('close', (exitCode, signal) =>
      done(exitCode ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0))),
    );
  });
  clearInterval(beat);
  const { kept, truncated, digest } = output.finish();
  await persistently(() =>
    withClient(url, (client) =>
      client.query(recordExit(schema), [sessionId, code, kept, output.bytes, truncated, digest]),
    ),
  );
}

const orders = await readOrders();
await supervise(orders).catch((error: unknown) => {
  tell(`failed: ${(error as Error).message}`);
  process.exitCode = 1;
});
